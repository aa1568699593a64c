package engine_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// looper is an agent model that never gives a final answer: every answer
// calls the tool again, for 100 tokens and $0.01.
type looper struct{ asked atomic.Int32 }

func (m *looper) Next(context.Context, task.Item, []agent.Def, []agent.Step) (agent.Reply, error) {
	n := m.asked.Add(1)
	call := agent.Call{ID: "c" + string(rune('a'+n%26)), Name: "noop", Arguments: json.RawMessage(`{}`)}
	return agent.Reply{Calls: []agent.Call{call}, Result: task.Result{Usage: task.Usage{InputTokens: 90, OutputTokens: 10}, CostUSD: 0.01}}, nil
}

func loopingAgent(t *testing.T, m agent.Model) *agent.Task {
	t.Helper()
	noop, err := agent.NewTool(agent.Def{Name: "noop"}, task.Func(func(context.Context, task.Item) (task.Result, error) {
		return task.Result{Output: json.RawMessage(`"ok"`)}, nil
	}), true)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: []*agent.Tool{noop}, MaxSteps: 30})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// An agent item of up to 30 steps in a run with a budget stops at the
// budget between its steps, not at the end of its loop: the run stops
// (StopBudget, exit 3), the item stays pending for a resume, and no
// step is asked once the next would pass the budget.
func TestAnAgentLoopStopsAtTheBudgetBetweenItsSteps(t *testing.T) {
	cases := []struct {
		name   string
		budget engine.Budget
		asked  int32
	}{
		// 100 tokens a step: after 4 steps (400) the next would make 500.
		{"max_tokens", engine.Budget{MaxTokens: 450}, 4},
		// $0.01 a step: reached once spent, after the 3rd step.
		{"max_cost_usd", engine.Budget{MaxCostUSD: 0.025}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				m := &looper{}
				job := newMemJob()
				e := engine.New(engine.Config{Concurrency: 1, Budget: c.budget, Total: 1}, loopingAgent(t, m), job)
				s, err := e.Run(context.Background(), items(1))
				if err != nil {
					t.Fatal(err)
				}
				if s.Stop != engine.StopBudget || s.Pending != 1 || s.Done != 0 {
					t.Fatalf("stop=%s pending=%d done=%d (%s); want budget, the item pending", s.Stop, s.Pending, s.Done, s.StopDetail)
				}
				if got := m.asked.Load(); got != c.asked {
					t.Errorf("the model was asked %d times, want %d", got, c.asked)
				}
				if len(job.byIdx()) != 0 {
					t.Errorf("the item has a record %+v; want none (pending)", job.byIdx())
				}
			})
		})
	}
}

// Without a budget the same loop runs to max_steps: the check is the
// budget's only.
func TestAnAgentLoopWithoutABudgetRunsToMaxSteps(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &looper{}
		e := engine.New(engine.Config{Concurrency: 1, Total: 1}, loopingAgent(t, m), newMemJob())
		s, err := e.Run(context.Background(), items(1))
		if err != nil {
			t.Fatal(err)
		}
		if s.Failed != 1 || m.asked.Load() != 30 {
			t.Errorf("failed=%d asked=%d; want the item failed at max_steps 30", s.Failed, m.asked.Load())
		}
	})
}
