package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// Move is one answer of an agent's scripted model: a step of tool calls,
// or, with no calls, Answer's final answer (Valid, Invalid, Unusable) or
// error (Retryable: a provider's 503, no answer at all).
type Move struct {
	Name string
	// Calls are the step's calls, each a tool's name and its arguments.
	Calls  [][2]string
	Answer Answer
}

func (m Move) String() string { return m.Name }

// The moves agent scenarios are made of. The one tool is "lookup", whose
// arguments must be {"text": string}; it fails, as a command exiting 1,
// for the text "fail", and for "flaky" it fails as a command exiting 75
// would (retryable) at its first run for the item, then answers.
var (
	Lookup      = Move{Name: "lookup", Calls: [][2]string{{"lookup", `{"text":"ok"}`}}}
	LookupTwice = Move{Name: "lookup_twice", Calls: [][2]string{{"lookup", `{"text":"a"}`}, {"lookup", `{"text":"b"}`}}}
	BadArgs     = Move{Name: "bad_args", Calls: [][2]string{{"lookup", `{}`}}}
	UnknownTool = Move{Name: "unknown_tool", Calls: [][2]string{{"nope", `{}`}}}
	ToolFails   = Move{Name: "tool_fails", Calls: [][2]string{{"lookup", `{"text":"fail"}`}}}
	ToolFlaky   = Move{Name: "tool_flaky", Calls: [][2]string{{"lookup", `{"text":"flaky"}`}}}
	FinalValid  = Move{Name: "final_valid", Answer: Valid}
	FinalBad    = Move{Name: "final_invalid", Answer: Invalid}
	FinalJunk   = Move{Name: "final_unusable", Answer: Unusable}
	ModelDown   = Move{Name: "model_down", Answer: Retryable}
)

// errToolTransient is the "flaky" lookup's first failure: a command's
// exit 75, retryable.
var errToolTransient = classify.WithClass(errors.New("exit status 75: try again"), classify.Retryable, "scripted")

// AgentMaxSteps and AgentMaxErrors are the agent's limits the agent
// scenarios are written for (agent.Config's MaxSteps and
// MaxConsecutiveErrors).
const (
	AgentMaxSteps  = 8
	AgentMaxErrors = 3
)

// AgentScenario is one agent item's scripted model answers, in the order
// the model is asked (a replayed step is not asked), and the record every
// mode must write for it.
type AgentScenario struct {
	Name  string
	Moves []Move
	// Succeeded, Class: the record's outcome (Class Unknown for a
	// success). Calls and Heals are its attempts and heal_attempts.
	Succeeded    bool
	Class        classify.Class
	Calls, Heals int
	// Steps, FedBack and Peak are the record's agent steps,
	// errors_fed_back and consecutive_errors_peak (its last attempt's).
	Steps, FedBack, Peak int
	// OnB, for a routed agent scenario (RoutedAgentScenarios), are route
	// b's answers, asked once Moves (route a's) moved the item there;
	// Route and Tries are the record's route and tries, as Scenario's.
	OnB   []Move
	Route string
	Tries []string
}

// AgentScenarios returns the agent scenarios, a new slice each time.
func AgentScenarios() []AgentScenario {
	m := func(ms ...Move) []Move { return ms }
	return []AgentScenario{
		{Name: "agent_tool_then_final", Moves: m(Lookup, FinalValid), Succeeded: true, Calls: 1, Steps: 2},
		{Name: "agent_two_calls_in_one_step", Moves: m(LookupTwice, FinalValid), Succeeded: true, Calls: 1, Steps: 2},
		{Name: "agent_bad_arguments_then_recovery", Moves: m(BadArgs, Lookup, FinalValid), Succeeded: true, Calls: 1, Steps: 3, FedBack: 1, Peak: 1},
		{Name: "agent_transient_tool_failure_is_retried_unseen", Moves: m(ToolFlaky, FinalValid), Succeeded: true, Calls: 1, Steps: 2},
		{Name: "agent_failing_tool_is_fed_back", Moves: m(ToolFails, FinalValid), Succeeded: true, Calls: 1, Steps: 2, FedBack: 1, Peak: 1},
		{Name: "agent_unknown_tool_until_the_limit", Moves: m(UnknownTool, UnknownTool, UnknownTool), Class: classify.Item, Calls: 1, Steps: 3, FedBack: 3, Peak: 3},
		{Name: "agent_errors_count_from_the_recovery", Moves: m(BadArgs, BadArgs, Lookup, UnknownTool, ToolFails, BadArgs), Class: classify.Item, Calls: 1, Steps: 6, FedBack: 5, Peak: 3},
		{Name: "agent_provider_error_goes_on_at_that_step", Moves: m(Lookup, ModelDown, FinalValid), Succeeded: true, Calls: 2, Steps: 2},
		{Name: "agent_provider_errors_exhaust_the_retries", Moves: m(Lookup, ModelDown, ModelDown, ModelDown), Class: classify.Retryable, Calls: 3, Steps: 2},
		{Name: "agent_invalid_final_is_healed", Moves: m(Lookup, FinalBad, Lookup, FinalValid), Succeeded: true, Calls: 2, Heals: 1, Steps: 2},
		{Name: "agent_unusable_final_is_healed", Moves: m(FinalJunk, FinalValid), Succeeded: true, Calls: 2, Heals: 1, Steps: 1},
		{Name: "agent_no_final_within_max_steps", Moves: m(Lookup, Lookup, Lookup, Lookup, Lookup, Lookup, Lookup, Lookup), Class: classify.Item, Calls: 1, Steps: AgentMaxSteps},
	}
}

// AgentScript is the model of agent items that plays their scenarios:
// item idx's k-th question gets Scenarios[idx].Moves[k-1]. It is safe for
// concurrent use.
type AgentScript struct {
	Scenarios []AgentScenario
	mu        sync.Mutex
	asked     map[int]int
}

// Next implements agent.Model. A question past the script gets a final
// Valid answer: the record then counts more steps than the scenario,
// which CheckAgents reports.
func (s *AgentScript) Next(_ context.Context, it task.Item, _ []agent.Def, _ []agent.Step) (agent.Reply, error) {
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[int]int{}
	}
	s.asked[it.Idx]++
	n := s.asked[it.Idx]
	s.mu.Unlock()
	mv := FinalValid
	if it.Idx >= 0 && it.Idx < len(s.Scenarios) && n <= len(s.Scenarios[it.Idx].Moves) {
		mv = s.Scenarios[it.Idx].Moves[n-1]
	}
	if len(mv.Calls) == 0 {
		res, err := mv.Answer.Result(n)
		return agent.Reply{Result: res}, err
	}
	rep := agent.Reply{Text: "step " + mv.Name, Result: task.Result{Usage: SpentUsage, CostUSD: SpentCostUSD, FinishReason: "tool_calls"}}
	for i, c := range mv.Calls {
		rep.Calls = append(rep.Calls, agent.Call{ID: fmt.Sprintf("call_%d_%d_%d", it.Idx, n, i), Name: c[0], Arguments: json.RawMessage(c[1])})
	}
	return rep, nil
}

// Asked returns how many questions item idx's model was asked.
func (s *AgentScript) Asked(idx int) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.asked[idx]
}

// lookup is the scenarios' one tool's runner: flaky counts the "flaky"
// runs of each item.
type lookup struct {
	mu    sync.Mutex
	flaky map[int]int
}

func (l *lookup) Run(_ context.Context, it task.Item) (task.Result, error) {
	args, _ := it.Fields[agent.ArgsField].(map[string]any)
	text, _ := args["text"].(string)
	switch text {
	case "fail":
		return task.Result{}, errCommand
	case "flaky":
		l.mu.Lock()
		l.flaky[it.Idx]++
		first := l.flaky[it.Idx] == 1
		l.mu.Unlock()
		if first {
			return task.Result{}, errToolTransient
		}
	}
	out, _ := json.Marshal("looked up " + text)
	return task.Result{Output: out}, nil
}

// NewAgent returns the agent task of the agent scenarios, its model
// script, and its one tool: a mode's test runs it in place of the spec's
// task and makes it durable as the mode does (agent.Task.Durable).
func NewAgent(scenarios []AgentScenario) (*agent.Task, *AgentScript, error) {
	script := &AgentScript{Scenarios: scenarios}
	tool, err := agent.NewTool(agent.Def{Name: "lookup", Description: "Looks a text up.",
		Parameters: json.RawMessage(`{"type":"object","required":["text"],"properties":{"text":{"type":"string"}}}`)}, &lookup{flaky: map[int]int{}}, true)
	if err != nil {
		return nil, nil, err
	}
	a, err := agent.New(agent.Config{Model: script, Tools: []*agent.Tool{tool},
		MaxSteps: AgentMaxSteps, MaxConsecutiveErrors: AgentMaxErrors, Retry: Policy()})
	return a, script, err
}

// AgentItems are the agent scenarios' items, as Items are the scenarios'.
func AgentItems(scenarios []AgentScenario) []task.Item {
	s := make([]Scenario, len(scenarios))
	for i, sc := range scenarios {
		s[i].Name = sc.Name
	}
	return Items(s)
}

// LocalAgents runs the agent scenarios through the local engine, the
// agent's steps kept in the in-memory store's step log as a local run
// keeps them in steps.jsonl, and returns the records by idx: the
// reference the other modes' records are compared with (SameAgents).
func LocalAgents(t testing.TB, scenarios []AgentScenario) map[int]store.Record {
	t.Helper()
	a, _, err := NewAgent(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "agent-reference", Created: time.Now(), Items: len(scenarios), State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{
		Concurrency: 4, Retry: Policy(), Heal: Budget(), Validator: Validator{},
		BreakerCount: []classify.Class{},
	}
	items := AgentItems(scenarios)
	i := 0
	src := engine.SourceFunc(func() (task.Item, error) {
		if i == len(items) {
			return task.Item{}, io.EOF
		}
		i++
		return items[i-1], nil
	})
	log, ok := store.StepsOf(j)
	if !ok {
		t.Fatal("the in-memory job keeps no steps")
	}
	if _, err := engine.New(cfg, a.Durable(log, nil), j).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

// CheckAgents reports every agent scenario whose record, by idx in recs,
// is missing or differs from what the scenario says; mode names the mode.
func CheckAgents(t testing.TB, mode string, scenarios []AgentScenario, recs map[int]store.Record) {
	t.Helper()
	for idx, sc := range scenarios {
		rec, ok := recs[idx]
		if !ok {
			t.Errorf("%s: %s: no record", mode, sc.Name)
			continue
		}
		var diffs []string
		if got := !rec.Failed(); got != sc.Succeeded {
			diffs = append(diffs, fmt.Sprintf("succeeded %t, want %t (%s)", got, sc.Succeeded, rec.Error))
		}
		if rec.Class != sc.Class {
			diffs = append(diffs, fmt.Sprintf("class %s, want %s", rec.Class, sc.Class))
		}
		if rec.Attempts != sc.Calls || rec.HealAttempts != sc.Heals {
			diffs = append(diffs, fmt.Sprintf("attempts %d and heal_attempts %d, want %d and %d", rec.Attempts, rec.HealAttempts, sc.Calls, sc.Heals))
		}
		st := rec.Agent
		switch {
		case st == nil:
			diffs = append(diffs, "no agent stats")
		case st.Steps != sc.Steps || st.ErrorsFedBack != sc.FedBack || st.ConsecutiveErrorsPeak != sc.Peak:
			diffs = append(diffs, fmt.Sprintf("agent steps %d, errors_fed_back %d, consecutive_errors_peak %d; want %d, %d, %d",
				st.Steps, st.ErrorsFedBack, st.ConsecutiveErrorsPeak, sc.Steps, sc.FedBack, sc.Peak))
		case st.Transcript == nil:
			diffs = append(diffs, "no transcript: the steps were not kept")
		}
		if sc.OnB != nil {
			diffs = append(diffs, routedDiffs(Scenario{Route: sc.Route, Tries: sc.Tries}, rec)...)
		}
		if len(diffs) > 0 {
			t.Errorf("%s: %s %v: %s", mode, sc.Name, sc.Moves, strings.Join(diffs, "; "))
		}
	}
}

// SameAgents is Same for the agent scenarios: every record of got must
// be the reference run's, whole, but for its duration, the time it
// finished and the name of the step log its transcript is in, which is
// the mode's store ("memory", "tenax_notes", "steps.jsonl").
func SameAgents(t testing.TB, mode string, scenarios []AgentScenario, ref, got map[int]store.Record) {
	t.Helper()
	s := make([]Scenario, len(scenarios))
	for i, sc := range scenarios {
		s[i].Name = sc.Name
	}
	unlog := func(recs map[int]store.Record) map[int]store.Record {
		out := make(map[int]store.Record, len(recs))
		for idx, r := range recs {
			if r.Agent != nil && r.Agent.Transcript != nil {
				st, tr := *r.Agent, *r.Agent.Transcript
				tr.Log = ""
				st.Transcript = &tr
				r.Agent = &st
			}
			out[idx] = r
		}
		return out
	}
	Same(t, mode, s, unlog(ref), unlog(got))
}

// RoutedAgentScenarios are agent scenarios over Routes with Fallbacks
// on: route a answers an item's first questions by its Moves, then
// fails (a 503); the engine moves the item to route b, which goes on at
// the next step, the steps recorded on a replayed from the step log, and
// answers by OnB. The conversation's counts carry over: the record's
// stats are the whole conversation's.
func RoutedAgentScenarios() []AgentScenario {
	m := func(ms ...Move) []Move { return ms }
	return []AgentScenario{
		{Name: "agent_outage_moves_the_conversation_to_route_b", Moves: m(Lookup, ModelDown), OnB: m(FinalValid),
			Succeeded: true, Calls: 2, Steps: 2, Route: "b", Tries: []string{"a:retryable"}},
		{Name: "agent_errors_fed_back_count_across_routes", Moves: m(BadArgs, ModelDown), OnB: m(UnknownTool, ToolFails),
			Class: classify.Item, Calls: 2, Steps: 3, FedBack: 3, Peak: 3, Route: "b", Tries: []string{"a:retryable"}},
		{Name: "agent_no_final_within_max_steps_across_routes", Moves: m(Lookup, Lookup, Lookup, ModelDown), OnB: m(Lookup, Lookup, Lookup, Lookup, Lookup),
			Class: classify.Item, Calls: 2, Steps: AgentMaxSteps, Route: "b", Tries: []string{"a:retryable"}},
	}
}

// RoutedAgentScripts are the model scripts of routes a and b for the
// routed agent scenarios: a answers by Moves, b by OnB.
func RoutedAgentScripts(scenarios []AgentScenario) (a, b *AgentScript) {
	onB := make([]AgentScenario, len(scenarios))
	for i, sc := range scenarios {
		onB[i] = AgentScenario{Name: sc.Name, Moves: sc.OnB}
	}
	return &AgentScript{Scenarios: scenarios}, &AgentScript{Scenarios: onB}
}

// LocalRoutedAgents runs the routed agent scenarios through the local
// engine over Routes, each route the durable agent asking its script,
// and returns the records by idx: the reference of the other modes'
// (SameAgents).
func LocalRoutedAgents(t testing.TB, scenarios []AgentScenario) map[int]store.Record {
	t.Helper()
	a, _, err := NewAgent(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "routed-agent-reference", Created: time.Now(), Items: len(scenarios), State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	log, ok := store.StepsOf(j)
	if !ok {
		t.Fatal("the in-memory job keeps no steps")
	}
	d := a.Durable(log, nil)
	sa, sb := RoutedAgentScripts(scenarios)
	cfg := engine.Config{
		Concurrency: 4, Retry: Policy(), Heal: Budget(), Validator: Validator{},
		BreakerCount: []classify.Class{}, Routes: Routes(d.WithModel(sa), d.WithModel(sb)), Fallbacks: Fallbacks(),
	}
	items := AgentItems(scenarios)
	i := 0
	src := engine.SourceFunc(func() (task.Item, error) {
		if i == len(items) {
			return task.Item{}, io.EOF
		}
		i++
		return items[i-1], nil
	})
	if _, err := engine.New(cfg, d, j).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}
