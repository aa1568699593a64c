package report

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// TestStatusGroupsAgentFailuresByTool: status counts agent items' tool
// calls and errors fed back by tool, over every latest record, and lays
// each failed item to the tool its record names (interrupted, or the last
// error of a max_consecutive_errors failure), in text and --json; a job
// without agent items shows no tool lines.
func TestStatusGroupsAgentFailuresByTool(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 5})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ok := json.RawMessage(`"x"`)
	recs := []store.Record{
		{Idx: 0, Output: ok, Agent: &task.AgentStats{Steps: 3, ToolCalls: map[string]int{"lookup": 2, "note": 1}, ToolErrors: map[string]int{"lookup": 1}, ErrorsFedBack: 1}},
		{Idx: 1, Error: `agent: tool "note" (step 2, call c1) had started when the run stopped …`, Class: classify.Item,
			Agent: &task.AgentStats{Steps: 2, ToolCalls: map[string]int{"note": 2}, FailedTool: "note"}},
		{Idx: 2, Error: "agent: 3 steps in a row fed errors back (max_consecutive_errors 3); the last: lookup: exit 1", Class: classify.Item,
			Agent: &task.AgentStats{Steps: 3, ToolCalls: map[string]int{"lookup": 3, "mock_unknown_tool": 1}, ToolErrors: map[string]int{"lookup": 2, "mock_unknown_tool": 1}, ErrorsFedBack: 3, FailedTool: "lookup"}},
		{Idx: 3, Error: "agent: no final answer within max_steps 3", Class: classify.Item,
			Agent: &task.AgentStats{Steps: 3, ToolCalls: map[string]int{"lookup": 2}}},
		{Idx: 4, Error: "500 server", Class: classify.Retryable},
	}
	if err := j.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	r, err := BuildReport(ctx, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []ToolReport{
		{Name: "lookup", Calls: 7, ErrorsFedBack: 3, FailedItems: 1},
		{Name: "note", Calls: 3, FailedItems: 1},
		{Name: "mock_unknown_tool", Calls: 1, ErrorsFedBack: 1},
	}
	if !reflect.DeepEqual(r.Tools, want) {
		t.Fatalf("tools %+v,\nwant %+v", r.Tools, want)
	}
	var b strings.Builder
	if err := r.WriteText(&b, 10); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"Tools:     lookup: 1 failed item(s), 3 error(s) fed back, 7 call(s)\n",
		"           note: 1 failed item(s), 0 error(s) fed back, 3 call(s)\n",
		"           mock_unknown_tool: 0 failed item(s), 1 error(s) fed back, 1 call(s)\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, b.String())
		}
	}
	js, err := json.Marshal(r.JSON())
	if err != nil {
		t.Fatal(err)
	}
	if w := `"tools":[{"name":"lookup","failed_items":1,"errors_fed_back":3,"calls":7},{"name":"note","failed_items":1,"errors_fed_back":0,"calls":3},{"name":"mock_unknown_tool","failed_items":0,"errors_fed_back":1,"calls":1}]`; !strings.Contains(string(js), w) {
		t.Errorf("status --json lacks %s:\n%s", w, js)
	}

	plain, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if err := plain.Append(ctx, store.Record{Idx: 0, Error: "500", Class: classify.Retryable}); err != nil {
		t.Fatal(err)
	}
	pr, err := BuildReport(ctx, plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	b.Reset()
	_ = pr.WriteText(&b, 10)
	if pr.Tools != nil || strings.Contains(b.String(), "Tools:") {
		t.Errorf("a job without agent items shows tools: %+v\n%s", pr.Tools, b.String())
	}
	if js, _ := json.Marshal(pr.JSON()); strings.Contains(string(js), `"tools"`) {
		t.Errorf("status --json of a job without agent items has tools: %s", js)
	}
}
