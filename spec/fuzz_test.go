package spec

import (
	"errors"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and every
// error must be spec.Errors whose entries carry a position; a spec that
// parses must redact to valid output.
func FuzzParse(f *testing.F) {
	f.Add([]byte("task: {type: llm, provider: mock, prompt: hi}\n"))
	f.Add([]byte("task:\n  type: exec\n  argv: [./x, '{{.a}}']\nretry: {backoff: {jitter: fuul}}\n"))
	f.Add([]byte("a: &x {b: *x}\n"))
	env := envOf(map[string]string{"KEY": "secret-value", "N": "3"})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data, "/specs", env)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is not a non-empty spec.Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if e.Line < 1 || e.Col < 1 || e.File != "fuzz.yaml" || e.Msg == "" {
					t.Fatalf("error without a position or message: %+v", e)
				}
			}
			return
		}
		if _, err := s.Redacted(); err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		if _, err := s.RedactedYAML(); err != nil {
			t.Fatalf("RedactedYAML: %v", err)
		}
	})
}
