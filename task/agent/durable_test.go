package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// memLog is a StepLog in memory, as a store's job keeps it.
type memLog struct {
	mu      sync.Mutex
	entries map[int][][]byte
}

func (m *memLog) AppendSteps(_ context.Context, idx int, entries ...[]byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.entries == nil {
		m.entries = map[int][][]byte{}
	}
	for _, e := range entries {
		m.entries[idx] = append(m.entries[idx], append([]byte(nil), e...))
	}
	return nil
}

func (m *memLog) Steps(_ context.Context, idx int) ([][]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([][]byte(nil), m.entries[idx]...), nil
}

func (m *memLog) StepsLocation() string { return "memory" }

// kinds counts idx's entries by kind.
func (m *memLog) kinds(idx int) map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := map[string]int{}
	for _, b := range m.entries[idx] {
		var e struct{ Kind string }
		_ = json.Unmarshal(b, &e)
		n[e.Kind]++
	}
	return n
}

// byStep is a model that answers by the step it is asked for (the steps
// it is shown), as a real model answers the conversation: answers[k] is
// step k+1's calls, nil the final answer. fail, when it says so, answers
// step k+1 with a provider error instead. asked lists the steps asked.
type byStep struct {
	answers [][]agent.Call
	fail    func(step int) bool
	mu      sync.Mutex
	asked   []int
	shown   map[int][]agent.Step
}

func (m *byStep) Next(_ context.Context, _ task.Item, _ []agent.Def, steps []agent.Step) (agent.Reply, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	step := len(steps) + 1
	m.asked = append(m.asked, step)
	if m.shown == nil {
		m.shown = map[int][]agent.Step{}
	}
	m.shown[step] = steps
	if m.fail != nil && m.fail(step) {
		return agent.Reply{}, classify.WithClass(errors.New("503 overloaded"), classify.Retryable, "test")
	}
	res := task.Result{Usage: task.Usage{InputTokens: 10, OutputTokens: 1}, CostUSD: 0.5, FinishReason: "tool_calls"}
	if k := step - 1; k < len(m.answers) && m.answers[k] != nil {
		return agent.Reply{Text: "step", Calls: m.answers[k], Result: res}, nil
	}
	res.FinishReason, res.Output = "stop", json.RawMessage(`"done"`)
	return agent.Reply{Result: res}, nil
}

func (m *byStep) askedSteps() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]int(nil), m.asked...)
}

// A process that dies mid-conversation leaves its steps in the log; the
// next process (a new Task over the same log) replays them and asks the
// model only for the steps after the last one recorded. Its result is the
// uninterrupted run's: every step's usage counted once, the same stats.
func TestAResumedItemReplaysItsRecordedStepsWithoutAskingTheModel(t *testing.T) {
	answers := [][]agent.Call{{okCall("1")}, {badCall("2")}, {okCall("3"), okCall("4")}, nil}
	whole := newAgent(t, &byStep{answers: answers}, agent.Config{}, echoTool(t, nil)).Durable(&memLog{}, nil)
	want, err := whole.Run(t.Context(), task.Item{Idx: 4})
	if err != nil {
		t.Fatal(err)
	}

	log := &memLog{}
	dying := &byStep{answers: answers, fail: func(step int) bool { return step == 3 }}
	first := newAgent(t, dying, agent.Config{}, echoTool(t, nil)).Durable(log, nil)
	if _, err := first.Run(t.Context(), task.Item{Idx: 4}); err == nil {
		t.Fatal("the first process's step 3 failed, yet Run did not")
	}
	resumed := &byStep{answers: answers}
	next := newAgent(t, resumed, agent.Config{}, echoTool(t, nil)).Durable(log, nil)
	got, err := next.Run(t.Context(), task.Item{Idx: 4})
	if err != nil {
		t.Fatal(err)
	}
	if asked := resumed.askedSteps(); len(asked) != 2 || asked[0] != 3 || asked[1] != 4 {
		t.Errorf("the resumed process asked the model for steps %v, want only 3 and 4: steps 1 and 2 were recorded", asked)
	}
	if shown := resumed.shown[3]; len(shown) != 2 || shown[1].Outcomes[0].IsError != true || shown[0].Outcomes[0].Content != "echo hi" {
		t.Errorf("step 3 was shown %+v, want the two recorded steps with their results", shown)
	}
	if got.Usage != want.Usage || got.CostUSD != want.CostUSD {
		t.Errorf("resumed usage %+v cost %v, want the uninterrupted run's %+v %v: each step's spend counted once", got.Usage, got.CostUSD, want.Usage, want.CostUSD)
	}
	want.Agent.Transcript, got.Agent.Transcript = nil, nil
	if gs, ws := statsJSON(got.Agent), statsJSON(want.Agent); gs != ws {
		t.Errorf("resumed stats %s, want the uninterrupted run's %s", gs, ws)
	}
}

func statsJSON(st *task.AgentStats) string {
	b, _ := json.Marshal(st)
	return string(b)
}

// Within one process, the engine's retry of an attempt that met a
// provider error at step 3 goes on at step 3: the model is not asked for
// steps 1 and 2 again, and their tokens are not counted twice.
func TestARetryAfterAProviderErrorGoesOnAtThatStep(t *testing.T) {
	var failed atomic.Bool
	m := &byStep{answers: [][]agent.Call{{okCall("1")}, {okCall("2")}, nil}, fail: func(step int) bool {
		return step == 3 && !failed.Swap(true)
	}}
	a := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(&memLog{}, nil)
	first, err := a.Run(t.Context(), task.Item{Idx: 0})
	if err == nil {
		t.Fatal("step 3 failed, yet Run did not")
	}
	second, err := a.Run(t.Context(), task.Item{Idx: 0})
	if err != nil {
		t.Fatal(err)
	}
	if asked := m.askedSteps(); len(asked) != 4 || asked[3] != 3 {
		t.Errorf("the model was asked for steps %v, want 1, 2, 3 (failed), 3", asked)
	}
	if total := first.Usage.InputTokens + second.Usage.InputTokens; total != 30 {
		t.Errorf("the two attempts counted %d input tokens, want 30 (three answers of 10)", total)
	}
	if second.Agent.Steps != 3 || second.Agent.ToolCalls["echo"] != 2 {
		t.Errorf("the retry's stats %+v, want 3 steps and 2 echo calls: the conversation, not the attempt", second.Agent)
	}
}

// interrupted leaves a step log whose item 0 started the tool of step 1
// and died in it: the tool blocks until the attempt's context ends, and
// its cut-short result is not kept.
func interrupted(t *testing.T, idempotent bool) *memLog {
	t.Helper()
	log := &memLog{}
	ctx, cancel := context.WithCancel(t.Context())
	block := func(ctx context.Context, _ task.Item) (task.Result, error) {
		cancel()
		<-ctx.Done()
		return task.Result{}, ctx.Err()
	}
	tool, err := agent.NewTool(agent.Def{Name: "echo", Parameters: echoSchema}, task.Func(block), idempotent)
	if err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, &byStep{answers: [][]agent.Call{{okCall("1")}, nil}}, agent.Config{}, tool).Durable(log, nil)
	if _, err := a.Run(ctx, task.Item{}); err == nil {
		t.Fatal("the attempt was cut short in its tool, yet Run did not fail")
	}
	if k := log.kinds(0); k["answer"] != 1 || k["start"] != 1 || k["result"] != 0 {
		t.Fatalf("the log holds %v, want the answer, the tool's start and no result", k)
	}
	return log
}

// A tool that had started when the process died, with no result
// recorded, runs again on resume only when the spec marks it idempotent;
// otherwise the item fails, class item, with a reason naming the tool and
// the step. The model is asked again for neither.
func TestAnInterruptedToolRunsAgainOnlyWhenIdempotent(t *testing.T) {
	for _, idempotent := range []bool{true, false} {
		t.Run(map[bool]string{true: "idempotent", false: "not idempotent"}[idempotent], func(t *testing.T) {
			log := interrupted(t, idempotent)
			var runs atomic.Int32
			again := func(context.Context, task.Item) (task.Result, error) {
				runs.Add(1)
				return task.Result{Output: json.RawMessage(`"ran"`)}, nil
			}
			tool, err := agent.NewTool(agent.Def{Name: "echo", Parameters: echoSchema}, task.Func(again), idempotent)
			if err != nil {
				t.Fatal(err)
			}
			m := &byStep{answers: [][]agent.Call{{okCall("1")}, nil}}
			res, err := newAgent(t, m, agent.Config{}, tool).Durable(log, nil).Run(t.Context(), task.Item{})
			if want := map[bool]string{false: "echo"}[idempotent]; res.Agent.FailedTool != want {
				t.Errorf("failed tool %q, want %q: status lays the interruption to the tool", res.Agent.FailedTool, want)
			}
			if idempotent {
				if err != nil || runs.Load() != 1 {
					t.Errorf("resume: error %v after %d runs of the tool, want the item done after one", err, runs.Load())
				}
				if asked := m.askedSteps(); len(asked) != 1 || asked[0] != 2 {
					t.Errorf("the model was asked for steps %v, want only 2", asked)
				}
				return
			}
			var ie *agent.InterruptedToolError
			if !errors.As(err, &ie) || ie.Tool != "echo" || ie.Step != 1 || runs.Load() != 0 {
				t.Fatalf("resume: error %v after %d runs, want an InterruptedToolError for echo at step 1 and no run", err, runs.Load())
			}
			if c := classify.Classify(err).Class; c != classify.Item {
				t.Errorf("class %v, want item", c)
			}
			if msg := err.Error(); !strings.Contains(msg, `tool "echo" (step 1`) || !strings.Contains(msg, "idempotent: true") {
				t.Errorf("reason %q: want the tool, the step and what to do", msg)
			}
			if len(m.askedSteps()) != 0 {
				t.Errorf("the model was asked for steps %v, want none", m.askedSteps())
			}
		})
	}
}

// An item run again after its record (resume --retry-failures) starts a
// new transcript: the steps of the one its record closed are not
// replayed, and the record's transcript says which one it is.
func TestAnItemRunAgainAfterItsRecordStartsANewTranscript(t *testing.T) {
	log := &memLog{}
	answers := [][]agent.Call{{okCall("1")}, nil}
	first, err := newAgent(t, &byStep{answers: answers}, agent.Config{}, echoTool(t, nil)).Durable(log, nil).Run(t.Context(), task.Item{Idx: 2})
	if err != nil {
		t.Fatal(err)
	}
	if tr := first.Agent.Transcript; tr == nil || *tr != (task.Transcript{Log: "memory", Idx: 2, N: 1}) {
		t.Fatalf("first transcript %+v, want memory, idx 2, n 1", tr)
	}
	m := &byStep{answers: answers}
	spent := func(idx int) int { return map[int]int{2: 1}[idx] }
	again, err := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, spent).Run(t.Context(), task.Item{Idx: 2})
	if err != nil {
		t.Fatal(err)
	}
	if asked := m.askedSteps(); len(asked) != 2 {
		t.Errorf("the model was asked for steps %v, want 1 and 2 of a new transcript", asked)
	}
	if again.Agent.Transcript.N != 2 {
		t.Errorf("transcript %+v, want n 2", again.Agent.Transcript)
	}
}

// The conversation is bounded: the results of steps older than the last
// KeepWholeSteps are sent cut to OldResultBytes, the latest ones whole,
// and every result is cut to MaxResultBytes before it is kept.
func TestOldToolResultsAreCutPastTheLastSteps(t *testing.T) {
	long := func(context.Context, task.Item) (task.Result, error) {
		b, _ := json.Marshal(strings.Repeat("x", 500))
		return task.Result{Output: b}, nil
	}
	var answers [][]agent.Call
	for range 5 {
		answers = append(answers, []agent.Call{okCall("c")})
	}
	m := &byStep{answers: append(answers, nil)}
	cfg := agent.Config{KeepWholeSteps: 2, OldResultBytes: 100, MaxResultBytes: 400}
	if _, err := newAgent(t, m, cfg, echoTool(t, long)).Run(t.Context(), task.Item{}); err != nil {
		t.Fatal(err)
	}
	shown := m.shown[6]
	if len(shown) != 5 {
		t.Fatalf("the final step was shown %d steps, want 5", len(shown))
	}
	for i, s := range shown {
		c := s.Outcomes[0].Content
		switch {
		case i < 3 && (!strings.HasPrefix(c, strings.Repeat("x", 100)+"…") || !strings.Contains(c, "cut: 100 of 403 bytes")):
			t.Errorf("step %d, older than the last 2, was sent %d bytes: %.160q; want 100 and the note", i+1, len(c), c)
		case i >= 3 && c != strings.Repeat("x", 400)+"…":
			t.Errorf("step %d, one of the last 2, was sent %d bytes, want its result whole at the 400-byte cap", i+1, len(c))
		}
	}
}

// A call's signature (Gemini 3's thoughtSignature) and its signer are
// kept in the step log with the call: a process resumed after a crash
// shows the model the recorded steps with the signatures they came with,
// byte for byte. Before, the journal kept id, name and arguments only, and
// a resumed Gemini 3 item was refused (400 INVALID_ARGUMENT, "Function
// call is missing a thought_signature").
func TestAResumedItemReplaysItsCallsSignatures(t *testing.T) {
	signed := func(id string) agent.Call {
		c := okCall(id)
		c.Signature, c.SignedBy = []byte("sig\x00\xff"+id), "gemini/gemini-3-pro"
		return c
	}
	answers := [][]agent.Call{{signed("1")}, {signed("2"), okCall("3")}, nil}
	log := &memLog{}
	dying := &byStep{answers: answers, fail: func(step int) bool { return step == 3 }}
	if _, err := newAgent(t, dying, agent.Config{}, echoTool(t, nil)).Durable(log, nil).Run(t.Context(), task.Item{}); err == nil {
		t.Fatal("the first process's step 3 failed, yet Run did not")
	}
	resumed := &byStep{answers: answers}
	if _, err := newAgent(t, resumed, agent.Config{}, echoTool(t, nil)).Durable(log, nil).Run(t.Context(), task.Item{}); err != nil {
		t.Fatal(err)
	}
	shown := resumed.shown[3]
	if len(shown) != 2 {
		t.Fatalf("step 3 was shown %d steps, want the 2 recorded", len(shown))
	}
	for i, want := range [][]agent.Call{answers[0], answers[1]} {
		for k, c := range shown[i].Calls {
			if string(c.Signature) != string(want[k].Signature) || c.SignedBy != want[k].SignedBy {
				t.Errorf("step %d call %d replayed with signature %q by %q, want %q by %q", i+1, k, c.Signature, c.SignedBy, want[k].Signature, want[k].SignedBy)
			}
		}
	}
}

// WithRunners called after Durable (a run's task given its process
// groups once its step log is set) keeps the answers counted: the copy
// had no accounting of its own and panicked at its first step, and a
// fresh one would count a retry's replayed steps twice. A retry on the
// copy of an attempt that failed on the original counts only the step
// it asks.
func TestWithRunnersAfterDurableKeepsTheAnswersCounted(t *testing.T) {
	var failed atomic.Bool
	m := &byStep{answers: [][]agent.Call{{okCall("1")}, {okCall("2")}, nil}, fail: func(step int) bool {
		return step == 3 && !failed.Swap(true)
	}}
	d := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(&memLog{}, nil)
	first, err := d.Run(t.Context(), task.Item{Idx: 0})
	if err == nil {
		t.Fatal("step 3 failed, yet Run did not")
	}
	wrapped := d.WithRunners(func(r task.Task) task.Task { return r })
	second, err := wrapped.Run(t.Context(), task.Item{Idx: 0})
	if err != nil {
		t.Fatal(err)
	}
	if total := first.Usage.InputTokens + second.Usage.InputTokens; total != 30 {
		t.Errorf("the attempt and its retry on the WithRunners copy counted %d input tokens, want 30 (three answers of 10): the copy lost the answers counted", total)
	}
	if second.Agent.Transcript == nil {
		t.Errorf("the copy's record has no transcript: it lost the step log")
	}
}

// appendLog is a memLog that keeps the kinds of each append, in order:
// what each fsync of a store's step log would hold.
type appendLog struct {
	memLog
	mu      sync.Mutex
	appends [][]string
}

func (a *appendLog) AppendSteps(ctx context.Context, idx int, entries ...[]byte) error {
	kinds := make([]string, len(entries))
	for i, b := range entries {
		var e struct{ Kind string }
		_ = json.Unmarshal(b, &e)
		kinds[i] = e.Kind
	}
	a.mu.Lock()
	a.appends = append(a.appends, kinds)
	a.mu.Unlock()
	return a.memLog.AppendSteps(ctx, idx, entries...)
}

// A fresh answer is written the moment it arrives, with a start mark for
// each of its calls, before any call is judged (schema, tool name) or
// run: the provider billed it when it answered, and nothing between its
// arrival and its fsync may widen the window a kill -9 pays it again in.
// The results of calls that run nothing go in with the tool's result,
// not in an fsync of their own.
func TestAFreshAnswerIsDurableBeforeItsCallsAreJudged(t *testing.T) {
	log := &appendLog{}
	var appendsAtRun int
	run := func(_ context.Context, it task.Item) (task.Result, error) {
		log.mu.Lock()
		appendsAtRun = len(log.appends)
		log.mu.Unlock()
		return task.Result{Output: json.RawMessage(`"echo hi"`)}, nil
	}
	m := &byStep{answers: [][]agent.Call{{badCall("1"), okCall("2")}, nil}}
	if _, err := newAgent(t, m, agent.Config{}, echoTool(t, run)).Durable(log, nil).Run(t.Context(), task.Item{}); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"answer", "start", "start"}, {"result", "result"}, {"answer"}}
	if got := fmt.Sprint(log.appends); got != fmt.Sprint(want) {
		t.Errorf("the appends held %s, want %s: the answer and its marks first, judged by nothing, then the results in one fsync", got, want)
	}
	if appendsAtRun != 1 {
		t.Errorf("the tool ran after %d appends, want 1: after the answer and its marks were durable", appendsAtRun)
	}
}
