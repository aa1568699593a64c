package spec

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestParseFixDefaults(t *testing.T) {
	f, err := ParseFix("fix.yaml", []byte("check:\n  argv: [go, test, ./...]\nfixer:\n  type: exec\n  argv: [./fix.sh]\n"), "/repo", nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.Name != "fix" || f.Workdir != "/repo" || f.Check.Parser != "auto" || f.Check.Timeout != 10*time.Minute || f.OnWorse != "revert" {
		t.Errorf("defaults: name %q, workdir %q, parser %q, timeout %s, on_worse %q", f.Name, f.Workdir, f.Check.Parser, f.Check.Timeout, f.OnWorse)
	}
	if f.Order != "round_robin" {
		t.Errorf("order %q by default; want round_robin: every error gets a turn", f.Order)
	}
	if f.Budget.MaxErrorAttempts != 5 || f.Budget.MaxAttempts != 8 || f.Budget.StuckAfter != 6 {
		t.Errorf("budget defaults %+v; want 5 per error, 8 in all, stuck after 6", f.Budget)
	}
	if f.Fixer.Argv[0] != "/repo/fix.sh" || f.Check.Argv[0] != "go" {
		t.Errorf("programs %q and %q; want ./fix.sh resolved against the spec's directory and go left to PATH", f.Fixer.Argv[0], f.Check.Argv[0])
	}
}

func TestParseFixErrors(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"unknown key with suggestion", "check:\n  argv: [x]\n  parsr: gotest\nfixer: {type: exec, argv: [y]}\n", `fix.yaml:3:3: unknown key "parsr" in check (did you mean "parser"?)`},
		{"unknown parser", "check:\n  argv: [x]\n  parser: gotset\nfixer: {type: exec, argv: [y]}\n", `fix.yaml:3:11: check.parser: unknown value "gotset" (want auto, gotest, pytest, jest, vitest, tsc, eslint or generic) (did you mean "gotest"?)`},
		{"missing check", "fixer: {type: exec, argv: [y]}\n", "check.argv: missing or empty"},
		{"missing fixer type", "check: {argv: [x]}\nfixer: {argv: [y]}\n", "fixer.type: missing (want llm or exec)"},
		{"key of the other fixer type", "check: {argv: [x]}\nfixer: {type: exec, argv: [y], model: m}\n", "fixer.model: does not apply to exec fixers"},
		{"llm without model", "check: {argv: [x]}\nfixer: {type: llm, provider: openai}\n", "fixer.model: missing for an llm fixer"},
		{"mock answers for another provider", "check: {argv: [x]}\nfixer: {type: llm, provider: openai, model: m, mock: {answers: [a]}}\n", "fixer.mock: applies only to provider mock"},
		{"budget out of range", "check: {argv: [x]}\nfixer: {type: exec, argv: [y]}\nbudget: {max_attempts: 0}\n", "budget.max_attempts: must be at least 1, got 0"},
		{"bad hint regex", "check: {argv: [x]}\nfixer: {type: exec, argv: [y]}\nhints: [{match: '(', hint: h}]\n", "hints[0].match: invalid regex"},
		{"on_worse", "check: {argv: [x]}\nfixer: {type: exec, argv: [y]}\non_worse: revrt\n", `(did you mean "revert"?)`},
		{"order", "check: {argv: [x]}\nfixer: {type: exec, argv: [y]}\norder: strikt\n", `fix.yaml:3:8: order: unknown value "strikt" (want round_robin or strict) (did you mean "strict"?)`},
		{"missing variable", "check: {argv: [x]}\nfixer: {type: llm, provider: openai, model: m, api_key: '${NO_SUCH_KEY}'}\n", "environment variable NO_SUCH_KEY is not set"},
		// A shell one-liner fixer reading the error's line was told to
		// export TENAX_ERROR_LINE, which would freeze one value into it.
		{"a variable tenax sets for the fixer", "check: {argv: [x]}\nfixer: {type: exec, argv: [sh, -c, 'sed -i \"${TENAX_ERROR_LINE}d\" f']}\n", `fix.yaml:2:45: fixer.argv[2]: ${TENAX_ERROR_LINE} is expanded when the spec is read, but tenax sets TENAX_ERROR_LINE only in the environment of the command it runs: write $${TENAX_ERROR_LINE} so that the command's shell reads it`},
		{"empty", "", "the spec is empty: it needs at least a check and a fixer"},
		{"concurrency without input", "check: {argv: [x]}\nfixer: {type: exec, argv: [y]}\nconcurrency: 2\n", "concurrency: applies only with input"},
		{"concurrency without paths", "input: items.jsonl\nconcurrency: 2\ncheck: {argv: [x]}\nfixer: {type: exec, argv: [y]}\n", "paths: needed when concurrency is above 1"},
		{"bad item template", "input: items.jsonl\ncheck: {argv: [x, '{{.path']}\nfixer: {type: exec, argv: [y]}\n", "check.argv[1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseFix("fix.yaml", []byte(tc.yaml), "/repo", nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("ParseFix(%q): %v; want an error containing %q", tc.yaml, err, tc.want)
			}
		})
	}
}

func TestParseFixSecrets(t *testing.T) {
	env := func(k string) (string, bool) { return map[string]string{"MY_KEY": "sk-secret-123"}[k], k == "MY_KEY" }
	f, err := ParseFix("fix.yaml", []byte("check: {argv: [x]}\nfixer: {type: llm, provider: openai, model: m, api_key: '${MY_KEY}'}\n"), "/repo", env)
	if err != nil {
		t.Fatal(err)
	}
	if s := f.Secrets(); len(s) != 1 || s[0] != "sk-secret-123" {
		t.Errorf("secrets %q; want the API key", s)
	}
}

// TestVariablesTenaxSetsForItsCommandsAreRefusedEvenWhenSet: a spec's
// ${TENAX_ERROR_LINE} was refused only when unset; with the variable in
// tenax's own environment (tenax fix run from inside a fixer, or a per-item
// loop run by the job's exec task) it took that stale value when the spec
// was read, silently, and every call of the fixer got it.
func TestVariablesTenaxSetsForItsCommandsAreRefusedEvenWhenSet(t *testing.T) {
	const fixer = "check: {argv: [x]}\nfixer: {type: exec, argv: [sh, -c, 'echo %s']}\n"
	stale := map[string]string{
		"TENAX_ERROR_LINE": "12", "TENAX_FIX_RUN": "fix_20261123_101500", "TENAX_IDX": "3",
		"TENAX_ATTEMPT": "1", "TENAX_FEEDBACK": "x", "TENAX_PREVIOUS_OUTPUT": "y",
	}
	tests := []struct {
		name, ref, variable string
		set                 bool
	}{
		{"an error's line, set", "${TENAX_ERROR_LINE}", "TENAX_ERROR_LINE", true},
		{"an error's line, unset", "${TENAX_ERROR_LINE}", "TENAX_ERROR_LINE", false},
		{"an error's line with a default, set", "${TENAX_ERROR_LINE:-1}", "TENAX_ERROR_LINE", true},
		{"an error's line with a default, unset", "${TENAX_ERROR_LINE:-1}", "TENAX_ERROR_LINE", false},
		{"the fix run, set", "${TENAX_FIX_RUN}", "TENAX_FIX_RUN", true},
		{"an item's index, set", "${TENAX_IDX}", "TENAX_IDX", true},
		{"an attempt, set", "${TENAX_ATTEMPT}", "TENAX_ATTEMPT", true},
		{"feedback, set", "${TENAX_FEEDBACK}", "TENAX_FEEDBACK", true},
		{"the previous output, set", "${TENAX_PREVIOUS_OUTPUT}", "TENAX_PREVIOUS_OUTPUT", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) (string, bool) {
				v, ok := stale[k]
				return v, ok && tc.set
			}
			src := fmt.Sprintf(fixer, tc.ref)
			want := fmt.Sprintf("write $${%s} so that the command's shell reads it", tc.variable)
			if _, err := ParseFix("fix.yaml", []byte(src), "/repo", env); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("ParseFix(%q) with %s set %v: %v; want an error saying %q", src, tc.variable, tc.set, err, want)
			}
		})
	}
}

// A byte-identical invalid answer stopped an item after one re-ask and the
// spec could not change that rule: heal.max_same_output sets it.
func TestHealMaxSameOutputIsASetting(t *testing.T) {
	const job = "input: items.jsonl\ntask: {type: exec, argv: [echo]}\n"
	tests := []struct {
		name, yaml string
		want       int
		err        string
	}{
		{"default", job, 1, ""},
		{"three", job + "heal: {max_same_output: 3}\n", 3, ""},
		{"off", job + "heal: {max_same_output: 0}\n", 0, ""},
		{"negative", job + "heal: {max_same_output: -1}\n", 0, "heal.max_same_output: must be at least 0, got -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Parse("job.yaml", []byte(tc.yaml), "/repo", nil)
			switch {
			case tc.err != "":
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("Parse: %v; want an error containing %q", err, tc.err)
				}
			case err != nil:
				t.Fatal(err)
			case s.Heal.MaxSameOutput != tc.want:
				t.Errorf("heal.max_same_output %d; want %d", s.Heal.MaxSameOutput, tc.want)
			}
		})
	}
}
