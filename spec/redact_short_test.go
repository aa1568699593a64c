package spec_test

import (
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/spec"
)

// TestShortValuesAreNotSecrets: a one-letter api_key must not turn every
// "x" of every path and message into [redacted].
func TestShortValuesAreNotSecrets(t *testing.T) {
	env := map[string]string{"SHORT_KEY": "x", "LONG_KEY": "sk-live-123456"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct{ key, text, want string }{
		{"${SHORT_KEY}", "/work/examples/x.txt", "/work/examples/x.txt"},
		{"${LONG_KEY}", "key sk-live-123456 refused", "key [redacted] refused"},
	} {
		s, err := spec.Parse("job.yaml", []byte("task:\n  type: llm\n  provider: openai\n  model: m\n  prompt: p\n  api_key: "+c.key+"\n"), t.TempDir(), lookup)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Redact(c.text); got != c.want {
			t.Errorf("api_key %s: Redact(%q) = %q, want %q", c.key, c.text, got, c.want)
		}
		if strings.Contains(c.want, "[redacted]") && len(s.Secrets()) == 0 {
			t.Errorf("api_key %s: no secrets recorded", c.key)
		}
	}
}
