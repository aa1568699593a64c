package main

import (
	"strings"
	"testing"
)

// TestValidateChecksAFixSpec is the regression test of `tenax validate`
// reading a fix spec as a job spec: every key of examples/fix/fix.yaml was
// reported unknown.
func TestValidateChecksAFixSpec(t *testing.T) {
	w := newWorkdir(t)
	w.write("fixer.sh", "#!/bin/sh\nexit 0\n", 0o755)
	w.write("fix.yaml", "check: {argv: [go, test, ./...], parser: gotest}\nfixer: {type: exec, argv: [./fixer.sh]}\nbudget: {max_attempts: 4}\n", 0o644)
	r := w.tenax("validate", "fix.yaml")
	if r.code != 0 || strings.Contains(r.stderr, "unknown key") {
		t.Fatalf("validate fix.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	for _, want := range []string{"parser: gotest", "max_attempts: 4", "on_worse: revert", "# a fix spec: `tenax fix fix.yaml`"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("validate fix.yaml printed no %q:\n%s", want, r.stdout)
		}
	}

	w.write("typo.yaml", "check: {argv: [go, test]}\nfixer: {type: exec, argv: [./fixer.sh]}\nbudget: {max_atempts: 4}\n", 0o644)
	if r := w.tenax("validate", "typo.yaml"); r.code != 2 || !strings.Contains(r.stderr, "typo.yaml:3:") || !strings.Contains(r.stderr, "max_attempts") {
		t.Errorf("validate typo.yaml: exit %d, want 2 naming typo.yaml:3 and suggesting max_attempts\n%s", r.code, r.stderr)
	}
	if r := w.tenax("validate", "fix.yaml", "--input", "items.jsonl"); r.code != 2 || !strings.Contains(r.stderr, "--input is for job specs") {
		t.Errorf("validate fix.yaml --input: exit %d, want 2\n%s", r.code, r.stderr)
	}
}

// TestValidatePrintedSecretsInSpecErrorsAndPassedABadBaseURL: a token
// expanded into an integer key was printed by validate's error, and a
// base_url that does not parse passed with exit 0; validate now exits 2,
// naming the variable and showing the URL without its password or query.
func TestValidatePrintedSecretsInSpecErrorsAndPassedABadBaseURL(t *testing.T) {
	w := newWorkdir(t)
	w.write("typed.yaml", "task: {type: exec, argv: [echo]}\nretry:\n  max_attempts: ${API_TOKEN}\n", 0o644)
	r := w.tenaxEnv([]string{"API_TOKEN=tok-SECRET-777"}, "validate", "typed.yaml")
	if r.code != 2 || strings.Contains(r.stdout+r.stderr, "tok-SECRET-777") || !strings.Contains(r.stderr, `typed.yaml:3:17: retry.max_attempts: expected an integer, got "${API_TOKEN}"`) {
		t.Errorf("validate typed.yaml: exit %d, want 2 naming ${API_TOKEN} and not its value\n%s%s", r.code, r.stdout, r.stderr)
	}
	w.write("url.yaml", "task:\n  type: llm\n  provider: openai\n  model: m\n  prompt: hi\n  base_url: \"https://bob:hunter2@gw:80a/v1?key=q-SECRET\"\n", 0o644)
	r = w.tenax("validate", "url.yaml")
	if r.code != 2 || strings.Contains(r.stdout+r.stderr, "hunter2") || strings.Contains(r.stdout+r.stderr, "q-SECRET") ||
		!strings.Contains(r.stderr, `url.yaml:6:13: task.base_url: "https://bob:[redacted]@gw:80a/v1?key=[redacted]" is not an absolute http(s) URL`) {
		t.Errorf("validate url.yaml: exit %d, want 2 with the URL redacted\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestValidatePassedABraceTemplateThatWentOutLiterally: `Translate
// '{text}' to Spanish.` passed validate. With an input whose items have
// "text" it is an error (exit 2) at its file:line:col; without an input it
// is a warning, and validate exits 0.
func TestValidatePassedABraceTemplateThatWentOutLiterally(t *testing.T) {
	w := newWorkdir(t)
	w.write("items.jsonl", "{\"text\": \"hello\"}\n", 0o644)
	w.write("tr.yaml", "task:\n  type: llm\n  provider: mock\n  model: m\n  prompt: Translate '{text}' to Spanish.\n", 0o644)
	const at = "tr.yaml:5:22: "
	r := w.tenax("validate", "tr.yaml", "--input", "items.jsonl")
	if want := at + `task.prompt: {text} is sent as written, braces and all, though the items have a field "text" (did you mean "{{.text}}"?)`; r.code != 2 || !strings.Contains(r.stderr, want) {
		t.Errorf("validate --input items.jsonl: exit %d, want 2 and\n%s\n%s", r.code, want, r.stderr)
	}
	r = w.tenax("validate", "tr.yaml")
	if want := at + "warning: task.prompt: {text} is sent as written"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("validate without an input: exit %d, want 0 and\n%s\n%s", r.code, want, r.stderr)
	}
	w.write("other.jsonl", "{\"word\": \"hello\"}\n", 0o644)
	w.write("tr2.yaml", "task:\n  type: llm\n  provider: mock\n  model: m\n  prompt: Translate '{{.word}}' to {text}.\n", 0o644)
	r = w.tenax("validate", "tr2.yaml", "--input", "other.jsonl")
	if want := "tr2.yaml:5:36: warning: task.prompt: {text} is sent as written"; r.code != 0 || !strings.Contains(r.stderr, want) {
		t.Errorf("validate a {name} the items lack: exit %d, want 0 and\n%s\n%s", r.code, want, r.stderr)
	}
}
