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
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
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
)

var answerNames = [...]string{Valid: "valid", Invalid: "invalid", Unusable: "unusable", Retryable: "retryable", ItemError: "item", Fatal: "fatal"}

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
	}
}

// Errors of the scripted answers, marked with their classes so that any
// classifier reads them alike.
var (
	errRetryable = classify.WithClass(errors.New("503 service unavailable"), classify.Retryable, "scripted")
	errItem      = classify.WithClass(errors.New("400 bad request"), classify.Item, "scripted")
	errFatal     = classify.WithClass(errors.New("401 invalid api key"), classify.Fatal, "scripted")
	errNotJSON   = errors.New("the output is not JSON")
)

// Result is the answer as a task's call returns it, for the item's call
// number call (from 1): outputs differ from call to call, so that the heal
// loop never sees a re-ask answered with its own output.
func (a Answer) Result(call int) (task.Result, error) {
	switch a {
	case Valid:
		return task.Result{Output: json.RawMessage(`{"answer":"valid"}`)}, nil
	case Invalid:
		return task.Result{Output: json.RawMessage(fmt.Sprintf(`{"answer":"invalid %d"}`, call))}, nil
	case Unusable:
		return task.Result{}, &task.OutputError{Output: fmt.Sprintf("not json %d", call), Err: errNotJSON}
	case Retryable:
		return task.Result{}, errRetryable
	case ItemError:
		return task.Result{}, errItem
	case Fatal:
		return task.Result{}, errFatal
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
		raw, _ := json.Marshal(map[string]string{"scenario": sc.Name})
		items[i] = task.Item{Idx: i, ID: sc.Name, Raw: raw, Fields: map[string]any{"scenario": sc.Name}}
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
		if len(diffs) > 0 {
			t.Errorf("%s: %s %v: %s", mode, sc.Name, sc.Answers, strings.Join(diffs, "; "))
		}
	}
}
