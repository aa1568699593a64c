package job_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// task.max_tool_result_bytes reaches the agent: a tool that prints 692
// bytes has its result cut to 100 (and the ellipsis) in what steps.jsonl
// keeps and the model is sent.
func TestTheSpecsToolResultCutIsTheAgents(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 4)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  prompt: "Tell me about {{.word}}"
  max_tool_result_bytes: 100
  tools:
    - name: numbers
      exec: {argv: [seq, 1, 200]}
cache: {enabled: false}
mock: {latency: 0s}
`, 0o644)
	res := w.run("job.yaml")
	f, err := os.Open(filepath.Join(w.home, "jobs", res.JobID, "steps.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	results := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Step struct {
				Kind    string `json:"kind"`
				Content string `json:"content"`
				IsError bool   `json:"is_error"`
			} `json:"step"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if line.Step.Kind != "result" || line.Step.IsError {
			continue
		}
		results++
		if n := len(line.Step.Content); n > 100+len("…") || n < 100 {
			t.Errorf("a numbers result of %d bytes was kept, want it cut to 100: %q", n, line.Step.Content)
		}
	}
	if results == 0 {
		t.Fatal("steps.jsonl holds no successful tool result")
	}
}
