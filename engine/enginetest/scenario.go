// Package enginetest holds the per-item core's shared scenarios: scripted
// answers to one item's calls, and the outcome that every mode running the
// core (the local engine, batch waves, River's workers) must reach for
// them. A mode's test runs Scenarios as the items of one job, item idx
// answered by Scenarios()[idx] through Script, under Policy and Budget,
// and hands the records to Check.
package enginetest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/store/storetest"
	"github.com/tenaxhq/tenax/task"
)

// Answer is what one call of an item gets.
type Answer uint8

// The answers a script is made of.
const (
	// Valid is an output the Validator accepts.
	Valid Answer = iota + 1
	// Invalid is an output the Validator rejects.
	Invalid
	// Unusable is an output the task cannot read (a *task.OutputError).
	Unusable
	// Retryable is a retryable error (a 503).
	Retryable
	// ItemError is the item's own error (a 400).
	ItemError
	// Fatal is a setup error (a 401).
	Fatal
	// RateLimited is a provider's 429: retryable, and counted in the
	// record's rate_limited.
	RateLimited
	// CommandFailed is a command that exited non-zero with a traceback on
	// its stderr: the item's own error, whose stderr the record keeps.
	CommandFailed
	// PastContextWindow is a refusal as longer than the route's context
	// window (the context_window fallback's).
	PastContextWindow
	// Filtered is a content filter's refusal (the content_filter
	// fallback's).
	Filtered
)

var answerNames = [...]string{Valid: "valid", Invalid: "invalid", Unusable: "unusable", Retryable: "retryable", ItemError: "item", Fatal: "fatal", RateLimited: "rate_limited", CommandFailed: "command_failed", PastContextWindow: "past_context_window", Filtered: "filtered"}

func (a Answer) String() string {
	if int(a) < len(answerNames) && answerNames[a] != "" {
		return answerNames[a]
	}
	return "Answer(" + strconv.Itoa(int(a)) + ")"
}

// Scenario is one item's scripted answers and the record every mode must
// write for it.
type Scenario struct {
	Name    string
	Answers []Answer
	// Succeeded, Class: the record's outcome (Class is Unknown for a
	// success).
	Succeeded bool
	Class     classify.Class
	// Calls, Heals and Generations are the record's attempts,
	// heal_attempts and generation_attempts.
	Calls, Heals, Generations int
	// RateLimited is the record's rate_limited; Stderr its stderr.
	RateLimited int
	Stderr      string

	// OnB, in a routed scenario (RoutedScenarios), are the answers of
	// the item's calls on route b; Answers are its calls on route a.
	OnB []Answer
	// Route is the route of the record, in a routed scenario; Tries the
	// routes it left, each as "route:class" or "route:class:fallback".
	Route string
	Tries []string
}

// Policy is the retry policy the scenarios are written for: 3 failures in
// a row end an item. Its backoff is short and fixed, so that a run under
// testing/synctest, or a real one, waits little.
func Policy() retry.Policy {
	return retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond, Jitter: retry.JitterNone}}
}

// Budget is the heal budget the scenarios are written for: 2 re-asks.
func Budget() heal.Budget { return heal.Budget{MaxAttempts: 2} }

// Scenarios returns the scenarios, a new slice each time.
func Scenarios() []Scenario {
	return []Scenario{
		{Name: "valid_at_once", Answers: []Answer{Valid}, Succeeded: true, Calls: 1, Generations: 1},
		{Name: "design_scenario_invalid_resets_the_streak", Answers: []Answer{Retryable, Invalid, Retryable, Retryable, Valid}, Succeeded: true, Calls: 5, Heals: 1, Generations: 2},
		{Name: "retries_exhausted", Answers: []Answer{Retryable, Retryable, Retryable}, Class: classify.Retryable, Calls: 3},
		{Name: "healed_after_a_reask", Answers: []Answer{Invalid, Valid}, Succeeded: true, Calls: 2, Heals: 1, Generations: 2},
		{Name: "unusable_output_is_reasked", Answers: []Answer{Unusable, Valid}, Succeeded: true, Calls: 2, Heals: 1, Generations: 2},
		{Name: "heal_budget_spent", Answers: []Answer{Invalid, Invalid, Invalid}, Class: classify.Invalid, Calls: 3, Heals: 2, Generations: 3},
		{Name: "fatal_at_once", Answers: []Answer{Fatal}, Class: classify.Fatal, Calls: 1},
		{Name: "item_error_after_a_retry", Answers: []Answer{Retryable, ItemError}, Class: classify.Item, Calls: 2},
		{Name: "streak_after_a_reask_exhausts", Answers: []Answer{Retryable, Retryable, Invalid, Retryable, Retryable, Retryable}, Class: classify.Retryable, Calls: 6, Heals: 1, Generations: 1},
		{Name: "retry_then_heal_then_retry_succeeds", Answers: []Answer{Retryable, Unusable, Retryable, Invalid, Valid}, Succeeded: true, Calls: 5, Heals: 2, Generations: 3},
		{Name: "rate_limited_then_valid", Answers: []Answer{RateLimited, Valid}, Succeeded: true, Calls: 2, Generations: 1, RateLimited: 1},
		{Name: "rate_limited_until_retries_end", Answers: []Answer{RateLimited, Retryable, RateLimited}, Class: classify.Retryable, Calls: 3, RateLimited: 2},
		{Name: "command_failure_keeps_its_stderr", Answers: []Answer{CommandFailed}, Class: classify.Item, Calls: 1, Stderr: commandStderr},
	}
}

// Errors of the scripted answers, marked with their classes so that any
// classifier reads them alike.
var (
	errRetryable   = classify.WithClass(errors.New("503 service unavailable"), classify.Retryable, "scripted")
	errItem        = classify.WithClass(errors.New("400 bad request"), classify.Item, "scripted")
	errFatal       = classify.WithClass(errors.New("401 invalid api key"), classify.Fatal, "scripted")
	errRateLimited = classify.WithClass(statusError{429, "429 rate limit reached"}, classify.Retryable, "scripted")
	errCommand     = classify.WithClass(commandError{}, classify.Item, "scripted")
	errNotJSON     = errors.New("the output is not JSON")
	errWindow      = classify.WithClass(fallbackError{"400 this model's maximum context length is 1000 tokens", engine.FallbackContextWindow}, classify.Item, "scripted")
	errFiltered    = classify.WithClass(fallbackError{"400 the response was filtered", engine.FallbackContentFilter}, classify.Item, "scripted")
)

// fallbackError is a provider's refusal that calls for a fallback of its
// kind, as task/llm's errors do (engine.FallbackKinder).
type fallbackError struct{ msg, kind string }

func (e fallbackError) Error() string        { return e.msg }
func (e fallbackError) FallbackKind() string { return e.kind }

// statusError is an HTTP error with its status, as a provider's client
// returns one.
type statusError struct {
	status int
	msg    string
}

func (e statusError) Error() string   { return e.msg }
func (e statusError) HTTPStatus() int { return e.status }

// commandStderr is what the failed command printed.
const commandStderr = "Traceback (most recent call last):\n  File \"review.py\", line 3, in <module>\nValueError: no such file"

// commandError is a command's non-zero exit with its stderr, as an exec
// task returns one.
type commandError struct{}

func (commandError) Error() string  { return "exit status 1" }
func (commandError) Stderr() string { return commandStderr + "\n" }

// Spent is what every output (Valid or Invalid) costs and says: its usage,
// its cost — a price with more digits than a rounding would keep — and its
// finish reason. A record's usage and cost add up its outputs'.
var (
	SpentUsage   = task.Usage{InputTokens: 12, OutputTokens: 5}
	SpentCostUSD = 1.234567891234e-5
	SpentFinish  = "stop"
)

// Result is the answer as a task's call returns it, for the item's call
// number call (from 1): outputs differ from call to call, so that the heal
// loop never sees a re-ask answered with its own output.
func (a Answer) Result(call int) (task.Result, error) {
	spent := func(out string) task.Result {
		return task.Result{Output: json.RawMessage(out), Usage: SpentUsage, CostUSD: SpentCostUSD, FinishReason: SpentFinish}
	}
	switch a {
	case Valid:
		return spent(`{"answer":"valid"}`), nil
	case Invalid:
		return spent(fmt.Sprintf(`{"answer":"invalid %d"}`, call)), nil
	case Unusable:
		return task.Result{}, &task.OutputError{Output: fmt.Sprintf("not json %d", call), Err: errNotJSON}
	case Retryable:
		return task.Result{}, errRetryable
	case ItemError:
		return task.Result{}, errItem
	case Fatal:
		return task.Result{}, errFatal
	case RateLimited:
		return task.Result{}, errRateLimited
	case CommandFailed:
		return task.Result{}, errCommand
	case PastContextWindow:
		return task.Result{}, errWindow
	case Filtered:
		return task.Result{}, errFiltered
	}
	return task.Result{}, fmt.Errorf("enginetest: no answer %d", a)
}

// Validator accepts only the output Valid gives.
type Validator struct{}

// Validate implements engine.Validator.
func (Validator) Validate(_ context.Context, out json.RawMessage) error {
	if string(out) != `{"answer":"valid"}` {
		return fmt.Errorf("answer is not valid: %s", out)
	}
	return nil
}

// Script answers the calls of items by their scenarios: item idx's call n
// gets Scenarios[idx].Answers[n-1]. It is safe for concurrent use.
type Script struct {
	Scenarios []Scenario
	mu        sync.Mutex
	calls     map[int]int
}

// Next counts a call of item idx and returns its answer and its number,
// from 1. A call past the script gets Valid: the record then counts more
// calls than the scenario, which Check reports.
func (s *Script) Next(idx int) (Answer, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.calls == nil {
		s.calls = map[int]int{}
	}
	s.calls[idx]++
	n := s.calls[idx]
	if idx < 0 || idx >= len(s.Scenarios) || n > len(s.Scenarios[idx].Answers) {
		return Valid, n
	}
	return s.Scenarios[idx].Answers[n-1], n
}

// Run implements task.Task: the next answer of item it.
func (s *Script) Run(_ context.Context, it task.Item) (task.Result, error) {
	a, n := s.Next(it.Idx)
	return a.Result(n)
}

// Items are the scenarios' items, item idx for Scenarios[idx], with a
// JSON input naming its scenario.
func Items(scenarios []Scenario) []task.Item {
	items := make([]task.Item, len(scenarios))
	for i, sc := range scenarios {
		raw, _ := json.Marshal(map[string]string{"id": sc.Name, "scenario": sc.Name})
		items[i] = task.Item{Idx: i, ID: sc.Name, Raw: raw, Fields: map[string]any{"id": sc.Name, "scenario": sc.Name}}
	}
	return items
}

// Check reports every scenario whose record, by idx in recs, is missing or
// differs from what the scenario says. mode names the mode in messages.
func Check(t testing.TB, mode string, scenarios []Scenario, recs map[int]store.Record) {
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
		if rec.Attempts != sc.Calls {
			diffs = append(diffs, fmt.Sprintf("attempts %d, want %d", rec.Attempts, sc.Calls))
		}
		if rec.HealAttempts != sc.Heals {
			diffs = append(diffs, fmt.Sprintf("heal_attempts %d, want %d", rec.HealAttempts, sc.Heals))
		}
		if rec.GenerationAttempts != sc.Generations {
			diffs = append(diffs, fmt.Sprintf("generation_attempts %d, want %d", rec.GenerationAttempts, sc.Generations))
		}
		if rec.RateLimited != sc.RateLimited {
			diffs = append(diffs, fmt.Sprintf("rate_limited %d, want %d", rec.RateLimited, sc.RateLimited))
		}
		if sc.Route != "" {
			diffs = append(diffs, routedDiffs(sc, rec)...)
		}
		if rec.Stderr != sc.Stderr {
			diffs = append(diffs, fmt.Sprintf("stderr %q, want %q", rec.Stderr, sc.Stderr))
		}
		usage, cost, finish := sc.spent()
		if rec.Usage != usage {
			diffs = append(diffs, fmt.Sprintf("usage %+v, want %+v", rec.Usage, usage))
		}
		if rec.FinishReason != finish {
			diffs = append(diffs, fmt.Sprintf("finish_reason %q, want %q", rec.FinishReason, finish))
		}
		switch {
		case cost == nil && rec.CostUSD != nil:
			diffs = append(diffs, fmt.Sprintf("cost_usd %v, want none", *rec.CostUSD))
		case cost != nil && rec.CostUSD == nil:
			diffs = append(diffs, fmt.Sprintf("no cost_usd, want %v", *cost))
		case cost != nil && *rec.CostUSD != *cost:
			diffs = append(diffs, fmt.Sprintf("cost_usd %v, want %v (the sum of its outputs' costs, unrounded)", *rec.CostUSD, *cost))
		}
		if len(diffs) > 0 {
			t.Errorf("%s: %s %v: %s", mode, sc.Name, sc.Answers, strings.Join(diffs, "; "))
		}
	}
}

// spent is what the scenario's record says its calls spent: the usage and
// cost of its outputs, added in order, and the finish reason of the last.
func (sc Scenario) spent() (task.Usage, *float64, string) {
	var u task.Usage
	var cost float64
	var finish string
	n := 0
	made := append(slices.Clone(sc.Answers), sc.OnB...)
	for _, a := range made[:min(sc.Calls, len(made))] {
		if a == Valid || a == Invalid {
			u = u.Add(SpentUsage)
			cost += SpentCostUSD
			finish = SpentFinish
			n++
		}
	}
	if n == 0 {
		return u, nil, ""
	}
	return u, &cost, finish
}

// Same reports every record of got that differs from the reference run's
// (ref, the local engine's records of the same scenarios: Local), field by
// field, with what the clock decides left out (storetest.Untimed: the
// duration, the call times, the time it finished): a mode writes the
// records the engine writes, whole.
func Same(t testing.TB, mode string, scenarios []Scenario, ref, got map[int]store.Record) {
	t.Helper()
	for idx, sc := range scenarios {
		want, ok := ref[idx]
		if !ok {
			t.Errorf("%s: %s: the reference run has no record", mode, sc.Name)
			continue
		}
		rec, ok := got[idx]
		if !ok {
			continue // Check reports it
		}
		if msg := storetest.DiffRecord(storetest.Untimed(rec), storetest.Untimed(want)); msg != "" {
			t.Errorf("%s: %s %v: its record differs from the local engine's: %s", mode, sc.Name, sc.Answers, msg)
		}
	}
}

// Local runs the scenarios through the local engine, as engine_test's
// TestSharedScenariosLocally does, and returns its records by idx: the
// reference the other modes' records are compared with (Same).
func Local(t testing.TB, scenarios []Scenario) map[int]store.Record {
	t.Helper()
	cfg := engine.Config{
		Concurrency: 4, Retry: Policy(), Heal: Budget(), Validator: Validator{},
		BreakerCount: []classify.Class{}, // the breaker is not what the scenarios are about
	}
	return run(t, scenarios, cfg, &Script{Scenarios: scenarios})
}

// run runs the scenarios' items through an engine of cfg calling tk, and
// returns its records by idx.
func run(t testing.TB, scenarios []Scenario, cfg engine.Config, tk task.Task) map[int]store.Record {
	t.Helper()
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "reference", Created: time.Now(), Items: len(scenarios), State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	items := Items(scenarios)
	i := 0
	src := engine.SourceFunc(func() (task.Item, error) {
		if i == len(items) {
			return task.Item{}, io.EOF
		}
		i++
		return items[i-1], nil
	})
	if _, err := engine.New(cfg, tk, j).Run(context.Background(), src); err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}
