package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// script is a model that plays its answers in order, and keeps what it
// was shown at each step.
type script struct {
	mu      sync.Mutex
	answers [][]agent.Call // nil: the final answer
	seen    [][]agent.Step
}

func (s *script) Next(_ context.Context, _ task.Item, _ []agent.Def, steps []agent.Step) (agent.Reply, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen = append(s.seen, steps)
	usage := task.Result{Usage: task.Usage{InputTokens: 10, OutputTokens: 1}, CostUSD: 0.5}
	n := len(s.seen) - 1
	if n >= len(s.answers) || s.answers[n] == nil {
		usage.Output = json.RawMessage(`"done"`)
		return agent.Reply{Result: usage}, nil
	}
	return agent.Reply{Calls: s.answers[n], Result: usage}, nil
}

// okCall and badCall call the tool "echo" with arguments that match its
// schema and with ones that do not.
func okCall(id string) agent.Call {
	return agent.Call{ID: id, Name: "echo", Arguments: json.RawMessage(`{"word":"hi"}`)}
}

func badCall(id string) agent.Call {
	return agent.Call{ID: id, Name: "echo", Arguments: json.RawMessage(`{"word":3}`)}
}

var echoSchema = json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`)

func echoTool(t *testing.T, run task.Func) *agent.Tool {
	t.Helper()
	if run == nil {
		run = func(_ context.Context, it task.Item) (task.Result, error) {
			args := it.Fields[agent.ArgsField].(map[string]any)
			out, _ := json.Marshal("echo " + args["word"].(string))
			return task.Result{Output: out}, nil
		}
	}
	tool, err := agent.NewTool(agent.Def{Name: "echo", Description: "says a word back", Parameters: echoSchema}, run, true)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func newAgent(t *testing.T, m agent.Model, cfg agent.Config, tools ...*agent.Tool) *agent.Task {
	t.Helper()
	cfg.Model, cfg.Tools = m, tools
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The source design's counter reset only on some successes: a failed
// step, a successful recovery, then errors, and the limit was reached
// counting the errors before the recovery. Any step whose calls all
// succeed resets the count.
func TestConsecutiveErrorsCountFromTheLastRecovery(t *testing.T) {
	cases := []struct {
		name     string
		answers  [][]agent.Call
		wantErr  bool
		wantPeak int
	}{
		{"two errors after the recovery stay under a limit of 3",
			[][]agent.Call{{badCall("1")}, {okCall("2")}, {badCall("3")}, {badCall("4")}, nil}, false, 2},
		{"three errors after the recovery reach it",
			[][]agent.Call{{badCall("1")}, {okCall("2")}, {badCall("3")}, {badCall("4")}, {badCall("5")}, nil}, true, 3},
		{"a step with one good and one bad call is an error step",
			[][]agent.Call{{badCall("1")}, {okCall("2"), badCall("3")}, {badCall("4")}, nil}, true, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := &script{answers: c.answers}
			a := newAgent(t, m, agent.Config{MaxConsecutiveErrors: 3}, echoTool(t, nil))
			res, err := a.Run(t.Context(), task.Item{})
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want an error: %v", err, c.wantErr)
			}
			if c.wantErr && classify.Classify(err).Class != classify.Item {
				t.Errorf("the limit's error is of class %v, want item", classify.Classify(err).Class)
			}
			if got := res.Agent.ConsecutiveErrorsPeak; got != c.wantPeak {
				t.Errorf("consecutive-error peak %d, want %d", got, c.wantPeak)
			}
			// The failure is laid to the tool of the last error fed back
			// (status groups failures by it); a success to none.
			if want := map[bool]string{true: "echo"}[c.wantErr]; res.Agent.FailedTool != want {
				t.Errorf("failed tool %q, want %q", res.Agent.FailedTool, want)
			}
		})
	}
}

// Every failure of a call goes back to the model as that call's error:
// an unknown tool, arguments that are not JSON or fail the schema, a run
// that fails. The item still ends with the final answer.
func TestBadCallsGoBackToTheModelAsErrors(t *testing.T) {
	failing := func(context.Context, task.Item) (task.Result, error) {
		return task.Result{}, classify.WithClass(errors.New("no such file"), classify.Item, "test")
	}
	broken, err := agent.NewTool(agent.Def{Name: "broken"}, task.Func(failing), false)
	if err != nil {
		t.Fatal(err)
	}
	calls := []agent.Call{
		{ID: "a", Name: "crop"},
		{ID: "b", Name: "echo", Arguments: json.RawMessage(`{"word":`)},
		badCall("c"),
		{ID: "d", Name: "broken", Arguments: json.RawMessage(`{}`)},
		okCall("e"),
	}
	m := &script{answers: [][]agent.Call{calls, nil}}
	a := newAgent(t, m, agent.Config{}, echoTool(t, nil), broken)
	res, err := a.Run(t.Context(), task.Item{})
	if err != nil {
		t.Fatalf("Run: %v; errors fed back are the model's to read, not the item's", err)
	}
	outs := m.seen[1][0].Outcomes
	want := []string{`unknown tool "crop": the tools are broken, echo`, "not a JSON object", "do not match the tool's schema", "no such file", "echo hi"}
	for i, w := range want {
		if !strings.Contains(outs[i].Content, w) || outs[i].IsError != (i < 4) {
			t.Errorf("call %s: outcome %+v, want %q (error: %v)", calls[i].ID, outs[i], w, i < 4)
		}
		if outs[i].CallID != calls[i].ID {
			t.Errorf("outcome %d answers call %q, want %q", i, outs[i].CallID, calls[i].ID)
		}
	}
	st := res.Agent
	if st.Steps != 2 || st.ErrorsFedBack != 4 || st.ToolCalls["echo"] != 3 || st.ToolErrors["echo"] != 2 || st.ToolErrors["crop"] != 1 || len(st.Errors) != 4 {
		t.Errorf("stats %+v, want 2 steps, 4 errors fed back, echo called 3 times and failing 2, crop failing once", st)
	}
	if res.Usage.InputTokens != 20 || res.CostUSD != 1 {
		t.Errorf("usage %+v cost %v, want both steps' (20 input tokens, $1)", res.Usage, res.CostUSD)
	}
}

// A tool's own transient failure (an exit 75, a 503) is retried under the
// job's policy; the model sees only the success.
func TestTransientToolFailureIsRetriedBeforeTheModelSeesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var runs atomic.Int32
		flaky := func(_ context.Context, _ task.Item) (task.Result, error) {
			if runs.Add(1) < 3 {
				return task.Result{}, classify.WithClass(errors.New("exit status 75"), classify.Retryable, "test")
			}
			return task.Result{Output: json.RawMessage(`"fine"`)}, nil
		}
		m := &script{answers: [][]agent.Call{{okCall("1")}, nil}}
		a := newAgent(t, m, agent.Config{Retry: retry.Policy{MaxAttempts: 5}}, echoTool(t, flaky))
		res, err := a.Run(t.Context(), task.Item{})
		if err != nil {
			t.Fatal(err)
		}
		if o := m.seen[1][0].Outcomes[0]; o.IsError || o.Content != "fine" || runs.Load() != 3 {
			t.Errorf("outcome %+v after %d runs, want fine after 3", o, runs.Load())
		}
		if res.Agent.ErrorsFedBack != 0 {
			t.Errorf("%d errors fed back, want none: the retries are not the model's", res.Agent.ErrorsFedBack)
		}
	})
}

// The calls of one answer run at once: each of two calls waits for the
// other to start, which only concurrent runs can satisfy.
func TestParallelCallsRunConcurrently(t *testing.T) {
	var started sync.WaitGroup
	started.Add(2)
	meet := func(ctx context.Context, _ task.Item) (task.Result, error) {
		started.Done()
		started.Wait()
		return task.Result{Output: json.RawMessage(`"met"`)}, nil
	}
	m := &script{answers: [][]agent.Call{{okCall("1"), okCall("2")}, nil}}
	a := newAgent(t, m, agent.Config{Parallel: 2}, echoTool(t, meet))
	if _, err := a.Run(t.Context(), task.Item{}); err != nil {
		t.Fatal(err)
	}
}

// A model that never gives a final answer fails the item at max_steps,
// with every step's usage in the result.
func TestNoFinalAnswerWithinMaxStepsFailsTheItem(t *testing.T) {
	loop := make([][]agent.Call, 10)
	for i := range loop {
		loop[i] = []agent.Call{okCall("x")}
	}
	a := newAgent(t, &script{answers: loop}, agent.Config{MaxSteps: 4}, echoTool(t, nil))
	res, err := a.Run(t.Context(), task.Item{})
	if err == nil || !strings.Contains(err.Error(), "max_steps 4") {
		t.Fatalf("error %v, want no final answer within max_steps 4", err)
	}
	if res.Agent.Steps != 4 || res.Usage.InputTokens != 40 {
		t.Errorf("%d steps, %d input tokens; want 4 and 40", res.Agent.Steps, res.Usage.InputTokens)
	}
}

func TestNewRefusesDuplicateToolNames(t *testing.T) {
	_, err := agent.New(agent.Config{Model: &script{}, Tools: []*agent.Tool{echoTool(t, nil), echoTool(t, nil)}})
	if err == nil || !strings.Contains(err.Error(), `two tools are named "echo"`) {
		t.Errorf("error %v, want two tools are named echo", err)
	}
}

func TestNewToolRefusesABadSchema(t *testing.T) {
	_, err := agent.NewTool(agent.Def{Name: "x", Parameters: json.RawMessage(`{"type":"objekt"}`)}, task.Func(nil), false)
	if err == nil {
		t.Error("a schema with an unknown type compiled")
	}
}
