// Package spec loads a tenax job spec: the YAML file that says what to run
// over which input, and with which retry, breaker, heal, scheduling and
// checkpoint settings (docs/spec.md, "Keys").
//
// Load does everything before the first call is made, so that a bad spec
// fails at once rather than halfway through a batch:
//
//  1. The file must be YAML text of a spec's size: at most MaxBytes
//     (1 MiB; large data belongs in the input file), UTF-8 (binary data,
//     UTF-16, invalid bytes and control characters are refused at the first
//     offending byte), and at most 10,000 YAML tokens. The YAML parser's
//     time grows with the square of a mapping's keys, so these limits are
//     what keep a huge or hostile file from hanging the command; no real
//     spec comes near them.
//  2. The YAML is parsed into a syntax tree, keeping every key's and
//     value's line and column. A tab in an indentation is reported as such
//     ("a tab cannot indent YAML; indent with spaces").
//  3. The tree is decoded strictly into Spec. An unknown key is an error
//     with the nearest valid key as a suggestion
//     (`job.yaml:4:3: unknown key "modle" in task (did you mean "model"?)`),
//     and so is a value of the wrong type.
//  4. ${VAR} in any scalar value is replaced by the environment's value
//     (${VAR:-default} when unset or empty; $$ is a literal $). Expansion
//     happens inside values after parsing, so a variable can never change
//     the structure of the spec. A missing variable is an error at its
//     position.
//  5. Defaults are applied to every key the file did not write (an
//     explicit 0 or false is kept), values are validated (enumerations with
//     suggestions, ranges, regexes compiled, classification rules built),
//     and relative paths are resolved against the spec file's directory.
//  6. Load (not Parse, which never reads a file) checks the files the spec
//     names, each problem at the value that names the file: the JSON
//     Schema exists and compiles (an inline one too), a program given by a
//     relative path (./check.sh) exists and is executable, task.dir is a
//     directory, and the input is not a directory. A missing input file is
//     the caller's to report, since a command line may replace the input:
//     ErrorAt positions such a late problem in the spec.
//
// Values quoted in errors are cut to their first 40 characters, escaped, so
// that a stray block of data never floods the terminal.
//
// Every problem is returned at once as Errors, each an *Error with
// file:line:col. Decoding problems (syntax, unknown keys, types, missing
// variables) are reported together; validation, which needs a decoded
// spec, runs only when there are none, so that a misspelled key does not
// also show up as a missing one.
//
// Import reads another tool's config instead (a translator's llm:,
// processing: and prompt: sections; agents.<name>.batch_processing) and
// writes the spec that does the same, with an ImportLine per key saying
// what it became or why it has no equivalent. Its names for other tools'
// keys are the same table "did you mean" uses (aliases.go).
//
// Values that came from the environment into api_key, headers or env, or
// from variables named like secrets (KEY, TOKEN, SECRET, PASSWORD), are the
// spec's Secrets: Redacted and RedactedYAML show the resolved spec with
// them replaced by "[redacted]", for manifest.json and `tenax validate`.
package spec
