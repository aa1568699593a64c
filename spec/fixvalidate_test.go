package spec_test

import (
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/spec"
)

func TestIsFixTellsAFixSpecFromAJobSpec(t *testing.T) {
	for _, c := range []struct {
		name, yaml string
		want       bool
	}{
		{"fix spec", "check: {argv: [go, test]}\nfixer: {type: exec, argv: [./f.sh]}\n", true},
		{"fix spec with only a fixer", "fixer: {type: exec, argv: [./f.sh]}\n", true},
		{"job spec", "input: items.jsonl\ntask: {type: exec, argv: [echo]}\n", false},
		{"job spec with a check key under validate", "task: {type: exec, argv: [echo]}\nvalidate: {check: x}\n", false},
		{"not YAML", "check: [\n", false},
	} {
		if got := spec.IsFix([]byte(c.yaml)); got != c.want {
			t.Errorf("%s: IsFix = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestFixRedactedYAMLHidesTheFixersKey(t *testing.T) {
	env := func(k string) (string, bool) {
		if k == "FIXER_KEY" {
			return "sk-very-secret", true
		}
		return "", false
	}
	f, err := spec.ParseFix("fix.yaml", []byte("check: {argv: [go, test, ./...]}\nfixer: {type: llm, provider: mock, model: mock-echo, api_key: \"${FIXER_KEY}\"}\n"), t.TempDir(), env)
	if err != nil {
		t.Fatal(err)
	}
	y, err := f.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(y), "sk-very-secret") || !strings.Contains(string(y), "[redacted]") {
		t.Errorf("the resolved fix spec shows the fixer's key or does not say it was redacted:\n%s", y)
	}
	if !strings.Contains(string(y), "argv:") || !strings.Contains(string(y), "max_attempts") {
		t.Errorf("the resolved fix spec lacks the check or the budget's defaults:\n%s", y)
	}
}
