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
