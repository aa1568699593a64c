package llm

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestImpossibleUsageIsCountedAsTheEstimateAndSaidSo: a negative count and
// 2^64-1 (which int64 made -9.2e18) were recorded as they came, and
// budget.max_tokens was never reached. Each impossible count is now the
// call's estimate (the prompt's tokens, max_tokens for the answer), never
// less than zero, and the usage says which counts were impossible.
func TestImpossibleUsageIsCountedAsTheEstimateAndSaidSo(t *testing.T) {
	for _, tc := range []struct {
		provider, body string
		want           []string
	}{
		{ProviderOpenAI, `{"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":-1000000,"completion_tokens":18446744073709551615,"completion_tokens_details":{"reasoning_tokens":-5}}}`,
			[]string{"prompt_tokens=-1e+06", "completion_tokens=1.8446744073709552e+19", "reasoning_tokens=-5"}},
		{ProviderAnthropic, `{"type":"message","role":"assistant","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn",` +
			`"usage":{"input_tokens":18446744073709551615,"output_tokens":-1000000,"cache_read_input_tokens":-3}}`,
			[]string{"input_tokens=1.8446744073709552e+19", "output_tokens=-1e+06", "cache_read_input_tokens=-3"}},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			tk := mustNew(t, Config{Provider: tc.provider, BaseURL: baseURL(tc.provider, ts.URL), APIKey: secretKey, Model: "m",
				Prompt: "say hi", MaxTokens: 100, Prices: map[string]Price{"m": {InputPerMTok: 1, OutputPerMTok: 1}}})
			res, err := tk.Run(t.Context(), item(nil))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			u := res.Usage
			if u.InputTokens < 1 || u.InputTokens > 100 || u.OutputTokens != 100 || u.CachedInputTokens != 0 || u.ReasoningTokens != 0 {
				t.Errorf("usage %+v; want the prompt's estimate in, max_tokens (100) out, no cache or reasoning tokens", u)
			}
			for _, w := range tc.want {
				if !strings.Contains(u.Impossible, w) {
					t.Errorf("usage.impossible %q does not say %q", u.Impossible, w)
				}
			}
			if res.CostUSD <= 0 || res.CostUSD > 1e-3 {
				t.Errorf("cost $%g; want the estimate's, a small positive sum", res.CostUSD)
			}
		})
	}
}

// TestPossibleUsageIsRecordedAsItCame: honest counts are untouched and
// say nothing.
func TestPossibleUsageIsRecordedAsItCame(t *testing.T) {
	rep, err := decodeChatCompletion([]byte(`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":0,"prompt_tokens_details":{"cached_tokens":4}}}`))
	if err != nil {
		t.Fatal(err)
	}
	if u := possibleUsage(rep.usage, 99, 99); u.InputTokens != 12 || u.OutputTokens != 0 || u.CachedInputTokens != 4 || u.Impossible != "" {
		t.Errorf("usage %+v; want 12 in (4 cached), 0 out, nothing impossible", u)
	}
}
