package web

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// playedModel answers an agent's steps in order: each a list of calls,
// nil the final answer.
type playedModel struct{ answers [][]agent.Call }

func (m *playedModel) Next(_ context.Context, _ task.Item, _ []agent.Def, steps []agent.Step) (agent.Reply, error) {
	r := task.Result{Usage: task.Usage{InputTokens: 100 + int64(len(steps)), OutputTokens: 7}, FinishReason: "tool_calls"}
	if len(steps) >= len(m.answers) || m.answers[len(steps)] == nil {
		r.Output, r.FinishReason = json.RawMessage(`"<b>final</b>"`), "stop"
		return agent.Reply{Text: "all done", Result: r}, nil
	}
	return agent.Reply{Text: "let me look <img src=x onerror=alert(1)>", Calls: m.answers[len(steps)], Result: r}, nil
}

// agentJob runs one agent item, durably, over a JSONL job and records
// it: a step whose arguments fail the schema, a step whose tool's output
// is hostile HTML, then the final answer.
func agentJob(t *testing.T) (*jsonl.Store, string) {
	t.Helper()
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Name: "agent", Created: time.Now(), Items: 1, State: store.StateCompleted})
	if err != nil {
		t.Fatal(err)
	}
	tool, err := agent.NewTool(agent.Def{Name: "fetch_page",
		Parameters: json.RawMessage(`{"type":"object","required":["url"],"properties":{"url":{"type":"string"}}}`)},
		task.Func(func(context.Context, task.Item) (task.Result, error) {
			return task.Result{Output: json.RawMessage(`"<script>alert('tool')</script>"`)}, nil
		}), true)
	if err != nil {
		t.Fatal(err)
	}
	model := &playedModel{answers: [][]agent.Call{
		{{ID: "call_1", Name: "fetch_page", Arguments: json.RawMessage(`{"url":3}`)}},
		{{ID: "call_2", Name: "fetch_page", Arguments: json.RawMessage(`{"url":"http://x/\"><script>alert(2)</script>"}`)}},
		nil,
	}}
	a, err := agent.New(agent.Config{Model: model, Tools: []*agent.Tool{tool}})
	if err != nil {
		t.Fatal(err)
	}
	log, ok := store.StepsOf(j)
	if !ok {
		t.Fatal("a JSONL job keeps no steps")
	}
	res, err := a.Durable(log, nil).Run(ctx, task.Item{Idx: 0, Raw: json.RawMessage(`{"q":"x"}`)})
	if err != nil {
		t.Fatal(err)
	}
	rec := store.Record{Idx: 0, Input: []byte(`{"q":"x"}`), Output: res.Output, Attempts: 1, Usage: res.Usage, Agent: res.Agent, FinishedAt: time.Now()}
	if err := j.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return st, j.Manifest().ID
}

// TestTheItemPageShowsAnAgentsTranscriptStepByStep: an agent item's page
// shows its transcript from the job's step log, step by step — the
// model's text and calls with their arguments, each result or error fed
// back, the consecutive-error count — with the tool's and the model's
// HTML escaped, never run.
func TestTheItemPageShowsAnAgentsTranscriptStepByStep(t *testing.T) {
	st, id := agentJob(t)
	page := itemPage(t, New(Config{Store: st}), id, "0")
	for _, want := range []string{
		"Agent transcript", "transcript 1 in steps.jsonl",
		`id="step-0-1"`, `id="step-0-2"`, `id="step-0-3"`,
		// Step 1: the bad arguments, the schema's error fed back, one
		// error in a row.
		"<code>fetch_page</code>", "call_1", `{&#34;url&#34;:3}`, "the arguments do not match the tool&#39;s schema",
		"consecutive errors: 1",
		// Step 2: the tool's hostile output, escaped; the count reset.
		"&lt;script&gt;alert(&#39;tool&#39;)&lt;/script&gt;", "consecutive errors: 0",
		`http://x/\&#34;&gt;&lt;script&gt;alert(2)&lt;/script&gt;`,
		"let me look &lt;img src=x onerror=alert(1)&gt;",
		// The final answer.
		"final answer", "&#34;&lt;b&gt;final&lt;/b&gt;&#34;", "102 in / 7 out",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the item page lacks %q", want)
		}
	}
	for _, bad := range []string{"<script>alert", "<img src=x", "<b>final</b>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the item page holds %q unescaped", bad)
		}
	}
	if i, k := strings.Index(page, `id="step-0-1"`), strings.Index(page, `id="step-0-2"`); i < 0 || k < i {
		t.Errorf("the steps are out of order (step 1 at %d, step 2 at %d)", i, k)
	}
}

// A plain item's page, of a job whose store keeps steps, shows no
// transcript.
func TestAPlainItemsPageShowsNoTranscript(t *testing.T) {
	st, id := historyJob(t)
	if page := itemPage(t, New(Config{Store: st}), id, "1"); strings.Contains(page, "Agent transcript") {
		t.Error("a plain item's page shows an agent transcript")
	}
}
