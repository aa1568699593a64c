package spec

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds arbitrary bytes to Parse: it must never panic, and every
// error must be spec.Errors whose entries carry a position; a spec that
// parses must redact to valid output.
func FuzzParse(f *testing.F) {
	f.Add([]byte("task: {type: llm, provider: mock, prompt: hi}\n"))
	f.Add([]byte("task:\n  type: exec\n  argv: [./x, '{{.a}}']\nretry: {backoff: {jitter: fuul}}\n"))
	f.Add([]byte("a: &x {b: *x}\n"))
	f.Add([]byte("task:\n  type: llm\n  provider: mock\n  prompt: |\n    Translate '{text}' {{.a}} {\"es\": 1} «{b}»\n"))
	f.Add([]byte("task: {type: llm, provider: openai, model: m, prompt: hi, base_url: 'https://u:p@h:x/v1?k=${KEY}'}\n"))
	f.Add([]byte("task: {type: exec, argv: [echo]}\nretry: {max_attempts: '${KEY}'}\n"))
	f.Add([]byte("task:\n  type: llm\n  provider: mock\n  prompt: hi\n  max_steps: 5\n  tools:\n    - name: grep\n      parameters: {type: object, required: [q]}\n      exec: {argv: [grep, '{{.args.q}}']}\n    - {name: grep, http: {url: 'http://x/{{.args.q}}'}}\n"))
	env := envOf(map[string]string{"KEY": "secret-value", "N": "3"})
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("fuzz.yaml", data, "/specs", env)
		if err != nil {
			var errs Errors
			if !errors.As(err, &errs) || len(errs) == 0 {
				t.Fatalf("error is not a non-empty spec.Errors: %T %v", err, err)
			}
			for _, e := range errs {
				if strings.Contains(e.Msg, "secret-value") {
					t.Fatalf("an error shows a variable's value: %s", e)
				}
				if e.Line < 1 || e.Col < 1 || e.File != "fuzz.yaml" || e.Msg == "" {
					t.Fatalf("error without a position or message: %+v", e)
				}
			}
			return
		}
		for _, p := range s.Placeholders() {
			if p.Line < 1 || p.Col < 1 || p.Name == "" || p.File != "fuzz.yaml" {
				t.Fatalf("placeholder without a position or name: %+v", p)
			}
		}
		if _, err := s.Redacted(); err != nil {
			t.Fatalf("Redacted: %v", err)
		}
		if _, err := s.RedactedYAML(); err != nil {
			t.Fatalf("RedactedYAML: %v", err)
		}
	})
}

// FuzzRedactURL: whatever the password and query value, redactURL shows
// neither, and never panics.
func FuzzRedactURL(f *testing.F) {
	f.Add("hunter2", "q-secret", "gw.example:80a")
	f.Add("p/ss", "x#y", "h")
	f.Add("", "", "")
	f.Fuzz(func(t *testing.T, password, value, host string) {
		raw := "https://bob:" + password + "@" + host + "/v1?key=" + value
		got := redactURL(raw)
		// The splitter finds the parts by their delimiters: a password
		// or value holding one cannot be told apart, and a part that is
		// in the rest of the URL shows there anyway.
		if strings.ContainsAny(password, "@?") || strings.ContainsAny(value, "&#") || strings.ContainsAny(host, "@?#") {
			return
		}
		visible := "https://bob:" + redactedText + "@" + host + "/v1?key=" + redactedText
		for _, secret := range []string{password, value} {
			if secret != "" && !strings.Contains(visible, secret) && strings.Contains(got, secret) {
				t.Fatalf("redactURL(%q) = %q shows %q", raw, got, secret)
			}
		}
	})
}
