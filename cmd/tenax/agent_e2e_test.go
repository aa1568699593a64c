package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// agentRecord is what a record of an agent item says of its loop.
type agentRecord struct {
	Idx    int             `json:"_idx"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Agent  *struct {
		Steps                 int            `json:"steps"`
		ToolCalls             map[string]int `json:"tool_calls"`
		ErrorsFedBack         int            `json:"errors_fed_back"`
		ConsecutiveErrorsPeak int            `json:"consecutive_errors_peak"`
		Errors                []string       `json:"errors"`
	} `json:"agent"`
	Usage struct {
		InputTokens int64 `json:"input_tokens"`
	} `json:"usage"`
}

// examples/agent.yaml runs as shipped, on the mock with no key: every item
// ends with an answer, both tools really ran (the exec tool and the http
// tool served by the in-process mock), the mock's slips were fed back and
// counted, and each record says so.
func TestAgentExampleCompletesOnTheMock(t *testing.T) {
	w := newWorkdir(t)
	w.examples("agent.yaml", "agent.jsonl")
	r := w.tenax("run", "agent.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run agent.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	f, err := os.Open(filepath.Join(w.dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	calls := map[string]int{}
	var n, fedBack, multiStep int
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var rec agentRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("bad record %s: %v", sc.Text(), err)
		}
		if rec.Error != "" || rec.Agent == nil || rec.Agent.Steps < 1 {
			t.Fatalf("item %d: %s", rec.Idx, sc.Text())
		}
		for tool, c := range rec.Agent.ToolCalls {
			calls[tool] += c
		}
		fedBack += rec.Agent.ErrorsFedBack
		if len(rec.Agent.Errors) != min(rec.Agent.ErrorsFedBack, 20) {
			t.Errorf("item %d: %d errors listed, %d fed back", rec.Idx, len(rec.Agent.Errors), rec.Agent.ErrorsFedBack)
		}
		if rec.Agent.Steps > 1 {
			multiStep++
		}
	}
	if n != 20 {
		t.Fatalf("%d records, want the example's 20", n)
	}
	if calls["count_chars"] == 0 || calls["model_card"] == 0 || calls["mock_unknown_tool"] == 0 || fedBack == 0 || multiStep == 0 {
		t.Errorf("tool calls %v, %d errors fed back, %d items of more than one step: want both tools run, unknown tools and other slips fed back",
			calls, fedBack, multiStep)
	}
}
