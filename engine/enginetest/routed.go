package enginetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// RoutedScenarios are the scenarios of a routed job, one per fallback
// kind: route a (tier 0, provider p1, a context window of 1,000 tokens)
// fails the item's calls (Answers) the way that fallback is for, and route
// b (tier 1, provider p2, a window of 200,000) answers it (OnB). Every
// mode runs them over Routes with Fallbacks on, and must write the same
// record: b's answer, a in its tries with the fallback that moved it.
func RoutedScenarios() []Scenario {
	return []Scenario{
		{Name: "outage_moves_to_the_next_route", Answers: []Answer{Retryable}, OnB: []Answer{Valid},
			Succeeded: true, Calls: 2, Generations: 1, Route: "b", Tries: []string{"a:retryable"}},
		{Name: "context_window_moves_to_a_larger_window", Answers: []Answer{PastContextWindow}, OnB: []Answer{Valid},
			Succeeded: true, Calls: 2, Generations: 1, Route: "b", Tries: []string{"a:item:context_window"}},
		{Name: "content_filter_moves_to_another_provider", Answers: []Answer{Filtered}, OnB: []Answer{Valid},
			Succeeded: true, Calls: 2, Generations: 1, Route: "b", Tries: []string{"a:item:content_filter"}},
		{Name: "spent_heal_budget_escalates_to_the_next_tier", Answers: []Answer{Invalid, Invalid, Invalid}, OnB: []Answer{Valid},
			Succeeded: true, Calls: 4, Heals: 3, Generations: 4, Route: "b", Tries: []string{"a:invalid:escalate"}},
		{Name: "outage_then_item_error_fails_on_the_next_route", Answers: []Answer{Retryable}, OnB: []Answer{ItemError},
			Class: classify.Item, Calls: 2, Route: "b", Tries: []string{"a:retryable"}},
	}
}

// Fallbacks are the fallbacks the routed scenarios run with: all four.
func Fallbacks() engine.Fallbacks {
	return engine.Fallbacks{Outage: true, ContextWindow: true, ContentFilter: true, Escalate: true}
}

// RouteScripts are the scripts of routes a and b for scenarios: a answers
// item idx's calls by its Answers, b by its OnB.
func RouteScripts(scenarios []Scenario) (a, b *Script) {
	onB := make([]Scenario, len(scenarios))
	for i, sc := range scenarios {
		onB[i] = Scenario{Name: sc.Name, Answers: sc.OnB}
	}
	return &Script{Scenarios: scenarios}, &Script{Scenarios: onB}
}

// Routes are routes a and b of the routed scenarios, calling a and b.
func Routes(a, b task.Task) []engine.Route {
	return []engine.Route{
		{Name: "a", Provider: "p1", Model: "small", Task: a, Tier: 0, ContextWindow: 1000},
		{Name: "b", Provider: "p2", Model: "large", Task: b, Tier: 1, ContextWindow: 200000},
	}
}

// routedDiffs are the differences of rec's route and tries from sc's.
func routedDiffs(sc Scenario, rec store.Record) []string {
	var diffs []string
	if rec.Route != sc.Route {
		diffs = append(diffs, fmt.Sprintf("route %q, want %q", rec.Route, sc.Route))
	}
	var tries []string
	for _, t := range rec.Tries {
		s := t.Route + ":" + t.Class.String()
		if t.Fallback != "" {
			s += ":" + t.Fallback
		}
		tries = append(tries, s)
	}
	if strings.Join(tries, ",") != strings.Join(sc.Tries, ",") {
		diffs = append(diffs, fmt.Sprintf("tries %v, want %v", tries, sc.Tries))
	}
	return diffs
}

// LocalRouted runs the routed scenarios through the local engine over
// Routes and returns its records by idx: the reference of the other
// modes' (Same).
func LocalRouted(t testing.TB, scenarios []Scenario) map[int]store.Record {
	t.Helper()
	a, b := RouteScripts(scenarios)
	cfg := engine.Config{
		Concurrency: 4, Retry: Policy(), Heal: Budget(), Validator: Validator{},
		BreakerCount: []classify.Class{}, Routes: Routes(a, b), Fallbacks: Fallbacks(),
	}
	return run(t, scenarios, cfg, a)
}
