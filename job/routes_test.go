package job_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMockRoutesRehearseEachFallback runs a job over two built-in mock
// routes, where a meets one fault on every call, and checks that the
// fallback for that fault moves every item to b, naming a's error in
// its tries; without a call to a at all when the context-window
// pre-check can tell.
func TestMockRoutesRehearseEachFallback(t *testing.T) {
	tests := []struct {
		name, routeA, fallback string
		wantTry                string // in a's try; "" wants no try at all
	}{
		{"context window refused by the provider", "mock: {context_window: 20}", "context_window", "maximum context length is 20 tokens"},
		{"context window known: nothing sent", "context_window: 20", "context_window", ""},
		{"content filter", "mock: {errors: {content_filter: 1}}", "content_filter", "content filter"},
		{"outage", "mock: {errors: {server: 1}}", "outage", "500"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newLLMWorld(t)
			w.words("items.jsonl", 12)
			w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "Describe the word {{.word}} as JSON, with its text and its length, please"
  output: json
routes:
  - name: a
    provider: mock
    model: mock-json
    `+tt.routeA+`
  - name: b
    provider: mock
    model: mock-json
    tier: 1
fallbacks: {`+tt.fallback+`: true}
retry: {max_attempts: 2, backoff: {base: 1ms, max: 2ms}}
breaker: {threshold: 100}
mock: {latency: 0s}
cache: {enabled: false}
`, 0o644)
			res := w.run("job.yaml")
			if res.ExitCode != 0 {
				t.Fatalf("exit %d, want 0", res.ExitCode)
			}
			for idx, r := range w.records(res.JobID) {
				if r.Failed() || r.Route != "b" {
					t.Errorf("item %d: route %q error %q; want success on b", idx, r.Route, r.Error)
					continue
				}
				if tt.wantTry == "" {
					if len(r.Tries) != 0 {
						t.Errorf("item %d: tries %+v; the pre-check should have sent nothing to a", idx, r.Tries)
					}
					continue
				}
				if len(r.Tries) == 0 || r.Tries[0].Route != "a" || !strings.Contains(r.Tries[0].Error, tt.wantTry) {
					t.Errorf("item %d: tries %+v; want a's error saying %q", idx, r.Tries, tt.wantTry)
				}
			}
		})
	}
}

// TestEscalationSendsTheFeedbackToTheStrongerRoute: a cheap mock route
// whose every answer is invalid spends the heal budget; the item goes to
// the next tier, whose request (in the mock's request log) carries the
// previous answer and what was wrong with it.
func TestEscalationSendsTheFeedbackToTheStrongerRoute(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 1)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "Describe {{.word}} as JSON"
  output: json
routes:
  - {name: cheap, provider: mock, model: mock-json, mock: {errors: {invalid_output: 1}}}
  - {name: strong, provider: mock, model: mock-json, tier: 1}
fallbacks: {escalate: true}
validate:
  json_schema: {type: object, required: [text, length]}
heal: {max_attempts: 2}
mock: {latency: 0s, log_requests: requests.jsonl}
cache: {enabled: false}
`, 0o644)
	res := w.run("job.yaml")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, want 0", res.ExitCode)
	}
	r := w.records(res.JobID)[0]
	if r.Route != "strong" || len(r.Tries) != 1 || r.Tries[0].Route != "cheap" || r.Tries[0].Class.String() != "invalid" {
		t.Fatalf("record route %q tries %+v; want success on strong after cheap's invalid answers", r.Route, r.Tries)
	}
	data, err := os.ReadFile(filepath.Join(w.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	var last struct {
		Request struct {
			Messages []struct{ Role, Content string }
		}
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	msgs := last.Request.Messages
	if len(lines) != 4 || len(msgs) < 3 || msgs[len(msgs)-2].Role != "assistant" || !strings.Contains(msgs[len(msgs)-1].Content, "not JSON") {
		t.Errorf("%d requests; strong's got %+v; want cheap's 3 then strong's with the previous answer and its error", len(lines), msgs)
	}
}
