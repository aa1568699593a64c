package job

import (
	"testing"

	"github.com/tenaxhq/tenax/spec"
)

// TestTokenLimitsTurnOnTheTokenizer: the exact count costs as much CPU as
// the rest of a call, so a job pays it only when a token limit reads it.
func TestTokenLimitsTurnOnTheTokenizer(t *testing.T) {
	for _, tc := range []struct {
		name, extra string
		want        bool
	}{
		{"no token limit", "", false},
		{"tokens per minute", "rate_limit: {tokens_per_minute: 90000}\n", true},
		{"token budget", "budget: {max_tokens: 100000}\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := "name: t\ninput: items.jsonl\ntask: {type: llm, provider: openai, api_key: k, model: gpt-4o-mini, prompt: hi}\n" + tc.extra
			s, err := spec.Parse("job.yaml", []byte(src), t.TempDir(), func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := llmConfig(s)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.ExactTokens != tc.want {
				t.Errorf("ExactTokens = %v, want %v", cfg.ExactTokens, tc.want)
			}
		})
	}
}
