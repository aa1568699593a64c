package job_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// TestImpossibleUsageStillReachesTheTokenBudget: a provider reporting
// -1,000,000 prompt tokens and 2^64-1 completion tokens made every
// record's usage negative, and budget.max_tokens was never reached: 20
// calls where honest counts stopped at 4. Impossible counts are the
// calls' estimates now, so the budget stops the run (exit 3) after a few
// calls, and each record says its usage was impossible.
func TestImpossibleUsageStillReachesTheTokenBudget(t *testing.T) {
	var calls atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":-1000000,"completion_tokens":18446744073709551615}}`))
	}))
	defer ts.Close()
	w := newLLMWorld(t)
	w.words("items.jsonl", 20)
	w.file("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: m
  prompt: "{{.word}}"
  max_tokens: 40
budget: {max_tokens: 200}
concurrency: {max: 1}
cache: {enabled: false}
`, ts.URL), 0o644)
	res := w.run("job.yaml")
	if res.ExitCode != 3 {
		t.Errorf("exit %d; want 3, stopped by budget.max_tokens", res.ExitCode)
	}
	if n := calls.Load(); n > 5 {
		t.Errorf("%d calls under a 200-token budget at 40 tokens and more a call; want at most 5", n)
	}
	for idx, rec := range w.records(res.JobID) {
		if rec.Usage.InputTokens < 0 || rec.Usage.OutputTokens != 40 || !strings.Contains(rec.Usage.Impossible, "prompt_tokens=-1e+06") {
			t.Errorf("item %d's usage %+v; want the estimate (40 out) and the impossible counts named", idx, rec.Usage)
		}
	}
}
