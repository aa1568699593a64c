import js from "@eslint/js";

export default [
  js.configs.recommended,
  { languageOptions: { globals: { console: "readonly" } }, rules: { eqeqeq: "error", "no-console": "warn" } },
];
