package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// gemini3 is the mock's mock-agent played as a Gemini 3 model: it signs
// its function calls and refuses them back unsigned.
const gemini3 = "gemini-3-mock-agent"

// skipWire is Google's skip value as the SDK sends it: what a step
// recorded elsewhere goes with, never one of the model's own.
const skipWire = "skip/thought/signature/validator"

// lookupTools are two tools that answer what they were asked to look up.
func lookupTools(t *testing.T) []*agent.Tool {
	t.Helper()
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	var tools []*agent.Tool
	for _, name := range []string{"search", "fetch"} {
		run := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
			q := it.Fields[agent.ArgsField].(map[string]any)["query"]
			return task.Result{Output: json.RawMessage(fmt.Sprintf("%q", name+" found "+fmt.Sprint(q)))}, nil
		})
		tool, err := agent.NewTool(agent.Def{Name: name, Description: "finds things", Parameters: schema}, run, true)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	return tools
}

// Agent items on a Gemini 3 model run over several tool steps: each step
// sends the calls of the steps before with the thoughtSignature they
// came with, which the mock's Gemini 3 model checks as the real one does.
// Before, the signatures were dropped and every item's second step was
// refused: 400 INVALID_ARGUMENT, "Function call is missing a
// thought_signature in functionCall parts".
func TestAGemini3AgentItemSendsItsThoughtSignaturesBack(t *testing.T) {
	m, _, last := geminiAgentTaskOn(t, gemini3, "Look up {{.q}}")
	a, err := agent.New(agent.Config{Model: m, Tools: lookupTools(t), MaxConsecutiveErrors: 5})
	if err != nil {
		t.Fatal(err)
	}
	steps, signed := 0, 0
	for i := range 20 {
		q := fmt.Sprintf("thing %d", i)
		res, err := a.Run(t.Context(), task.Item{Idx: i, Fields: map[string]any{"q": q}})
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if want := `"Look up ` + q + `"`; string(res.Output) != want {
			t.Errorf("item %d: output %s, want the echo %s", i, res.Output, want)
		}
		steps += res.Agent.Steps
		if body := last(); strings.Contains(body, `"thoughtSignature":`) && !strings.Contains(body, skipWire) {
			signed++
		}
	}
	if steps < 40 || signed != 20 {
		t.Errorf("%d steps over 20 items, %d final requests carrying the model's own thoughtSignatures: want at least 2 steps an item and every final request signed by the model, not skipped", steps, signed)
	}
}

// stepLog is an agent's step log as a store's job keeps it: a job of
// store/memory, whose step log outlives the process that wrote it.
func stepLog(t *testing.T) agent.StepLog {
	t.Helper()
	j, err := (&memory.Store{}).Create(t.Context(), store.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return j.(agent.StepLog)
}

// dyingAt is a model whose process dies (a provider error, the attempt
// ends) when asked for step die; it counts the steps it was asked for.
type dyingAt struct {
	agent.Model
	die   int
	mu    sync.Mutex
	asked map[int]int
}

func (d *dyingAt) Next(ctx context.Context, item task.Item, defs []agent.Def, steps []agent.Step) (agent.Reply, error) {
	d.mu.Lock()
	if d.asked == nil {
		d.asked = map[int]int{}
	}
	d.asked[len(steps)+1]++
	d.mu.Unlock()
	if len(steps)+1 == d.die {
		return agent.Reply{}, classify.WithClass(errors.New("killed"), classify.Retryable, "test")
	}
	return d.Model.Next(ctx, item, defs, steps)
}

// A Gemini 3 item that stopped after its first step and is resumed by
// another process (a new client, task and agent over the same step log)
// sends that step back with its thoughtSignature, read from the log: the
// model is not asked for step 1 again, and step 2 is not refused. Before,
// the log kept no signature and the resumed item failed on a 400.
func TestAResumedGemini3ItemSendsTheLoggedSignatureBack(t *testing.T) {
	log := stepLog(t)
	m1, _, _ := geminiAgentTaskOn(t, gemini3, "Look up {{.q}}")
	first, err := agent.New(agent.Config{Model: &dyingAt{Model: m1, die: 2}, Tools: lookupTools(t), MaxConsecutiveErrors: 5})
	if err != nil {
		t.Fatal(err)
	}
	m2, _, last := geminiAgentTaskOn(t, gemini3, "Look up {{.q}}")
	resumedModel := &dyingAt{Model: m2}
	resumed, err := agent.New(agent.Config{Model: resumedModel, Tools: lookupTools(t), MaxConsecutiveErrors: 5})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		item := task.Item{Idx: i, Fields: map[string]any{"q": fmt.Sprintf("thing %d", i)}}
		if _, err := first.Durable(log, nil).Run(t.Context(), item); err == nil {
			t.Fatalf("item %d: the first process died at step 2, yet Run did not fail", i)
		}
		res, err := resumed.Durable(log, nil).Run(t.Context(), item)
		if err != nil {
			t.Fatalf("item %d, resumed: %v", i, err)
		}
		if body := last(); res.Agent.Steps < 2 || !strings.Contains(body, `"thoughtSignature":`) || strings.Contains(body, skipWire) {
			t.Errorf("item %d: %d steps, last request %s: want step 1 replayed with the thoughtSignature it came with", i, res.Agent.Steps, body)
		}
	}
	if n := resumedModel.asked[1]; n != 0 {
		t.Errorf("the resumed process asked the model for step 1 %d times, want 0: it was recorded", n)
	}
}

// A call's thoughtSignature goes back only to the backend and model that
// issued it. To a Gemini 3 model, a step recorded elsewhere (another
// provider's call, unsigned; another model's or Vertex AI's signature)
// goes with Google's documented skip value on its first call, and to an
// earlier model with none: a conversation moved from another route is
// neither refused nor sent a signature its model cannot read.
func TestAThoughtSignatureGoesBackOnlyToItsSigner(t *testing.T) {
	const skip = `"thoughtSignature":"` + skipWire + `"`
	mine := []byte("tenax-mock-thought:mine")
	for _, c := range []struct {
		name, model, signedBy string
		sig                   []byte
		want                  []string // each functionCall part's thoughtSignature member, "" for none
	}{
		{"its own, to it", gemini3, "gemini/" + gemini3, mine, []string{`"thoughtSignature":"dGVuYXgtbW9jay10aG91Z2h0Om1pbmU="`, ""}},
		{"another model's, to Gemini 3", gemini3, "gemini/gemini-3-pro-preview", mine, []string{skip, ""}},
		{"Vertex AI's, to the Gemini API", gemini3, "vertex/" + gemini3, mine, []string{skip, ""}},
		{"another provider's unsigned call, to Gemini 3", gemini3, "", nil, []string{skip, ""}},
		{"another provider's unsigned call, to an earlier model", "mock-agent", "", nil, []string{"", ""}},
		{"Gemini 3's, to an earlier model", "mock-agent", "gemini/" + gemini3, mine, []string{"", ""}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, _, last := geminiAgentTaskOn(t, c.model, "hi")
			steps := []agent.Step{{Calls: []agent.Call{
				{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`), Signature: c.sig, SignedBy: c.signedBy},
				{ID: "call_2", Name: "search", Arguments: json.RawMessage(`{"query":"y"}`)}},
				Outcomes: []agent.Outcome{{CallID: "call_1", Name: "search", Content: "found x"}, {CallID: "call_2", Name: "search", Content: "found y"}}}}
			defs := []agent.Def{{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}}
			_, _ = m.Next(t.Context(), task.Item{}, defs, steps) // the mock refuses a signature it did not issue: the request is what counts
			body := last()
			for i, want := range c.want {
				part := fmt.Sprintf(`{"functionCall":{"args":{"query":%q},"id":"call_%d","name":"search"}`, []string{"x", "y"}[i], i+1)
				switch {
				case want == "" && !strings.Contains(body, part+"}"):
					t.Errorf("the request %s\nlacks the unsigned part %s}", body, part)
				case want != "" && !strings.Contains(body, part+","+want+"}"):
					t.Errorf("the request %s\nlacks the part %s,%s}", body, part, want)
				}
			}
		})
	}
}
