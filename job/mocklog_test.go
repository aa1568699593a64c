package job_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestBuiltInMockLogsWhatTheJobSent: mock.log_requests makes the
// in-process mock append every request and answer, re-asks and their
// feedback included, with the API key redacted.
func TestBuiltInMockLogsWhatTheJobSent(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 3)
	w.file("schema.json", `{"type": "object", "required": ["text", "length"], "properties": {"text": {"type": "string"}, "length": {"type": "integer"}}}`, 0o644)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  provider: mock
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  prompt: "Describe {{.word}} as JSON"
  output: json
validate:
  json_schema: schema.json
heal: {max_attempts: 4}
mock:
  latency: 0s
  errors: {invalid_output: 0.5}
  log_requests: logs/requests.jsonl
cache: {enabled: false}
`, 0o644)
	if err := os.Mkdir(filepath.Join(w.dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	res := w.run("job.yaml")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, want 0", res.ExitCode)
	}
	data, err := os.ReadFile(filepath.Join(w.dir, "logs", "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "sk-test-key") {
		t.Fatal("the request log holds the API key")
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	reasks := 0
	for _, l := range lines {
		var e struct {
			Path    string
			Status  int
			Request struct {
				Messages []struct{ Role string }
			}
			RequestHeader map[string][]string `json:"request_header"`
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if e.Path != "/v1/chat/completions" || e.Status != 200 || e.RequestHeader["Authorization"][0] != "REDACTED" {
			t.Errorf("log line %s: want the chat request, its 200 and the key redacted", l)
		}
		if len(e.Request.Messages) > 1 {
			reasks++
		}
	}
	if len(lines) < 4 || reasks == 0 {
		t.Errorf("%d lines, %d re-asks logged; want every call of 3 items at 50%% invalid output, re-asks among them", len(lines), reasks)
	}
}
