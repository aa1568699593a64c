package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// routeTask answers each call on one route with fn, given the item and
// the route's call count (from 1); it keeps the items it was called with.
type routeTask struct {
	mu    sync.Mutex
	calls int
	seen  []task.Item
	fn    func(it task.Item, call int) (task.Result, error)
}

func (rt *routeTask) Run(_ context.Context, it task.Item) (task.Result, error) {
	rt.mu.Lock()
	rt.calls++
	n := rt.calls
	rt.seen = append(rt.seen, it)
	rt.mu.Unlock()
	return rt.fn(it, n)
}

func (rt *routeTask) called() int {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return rt.calls
}

// estimated is a routeTask that estimates every item at tokens.
type estimated struct {
	*routeTask
	tokens int
}

func (e estimated) EstimateTokens(task.Item) int { return e.tokens }

// kindErr is a provider refusal that calls for a fallback of its kind.
type kindErr string

func (k kindErr) Error() string        { return "400 " + string(k) }
func (k kindErr) FallbackKind() string { return string(k) }

func always(res func() (task.Result, error)) func(task.Item, int) (task.Result, error) {
	return func(task.Item, int) (task.Result, error) { return res() }
}

var (
	err503  = classify.WithClass(errors.New("503 Service Unavailable"), classify.Retryable, "test")
	answerB = always(func() (task.Result, error) { return ok("from b") })
)

// routeRun runs n items over routes and returns the records by idx.
func routeRun(t *testing.T, cfg engine.Config, n int) (engine.Summary, map[int]store.Record) {
	t.Helper()
	job := newMemJob()
	e := engine.New(cfg, task.Func(func(context.Context, task.Item) (task.Result, error) {
		t.Error("the task given to New was called in a run with routes")
		return ok("wrong")
	}), job)
	sum, err := e.Run(context.Background(), items(n))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, job.byIdx()
}

// TestOutageOnOneRouteMovesItemsAndNeverTrips: route a answers 503 to
// every call; with fallbacks.outage every item succeeds on b, a's breaker
// opens, the run's never does (on_trip abort would stop the run), and the
// items that met a's outage show it in their tries.
func TestOutageOnOneRouteMovesItemsAndNeverTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &routeTask{fn: always(func() (task.Result, error) { return task.Result{}, err503 })}
		b := &routeTask{fn: answerB}
		cfg := engine.Config{Concurrency: 4, Retry: fastRetry, OnTrip: engine.TripAbort,
			Breaker:   breaker.Settings{Threshold: 3, ResetTimeout: time.Hour},
			Routes:    []engine.Route{{Name: "a", Model: "m-a", Task: a}, {Name: "b", Model: "m-b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 40)
		if sum.Stop != engine.StopNone || sum.Succeeded != 40 || sum.Trips != 0 {
			t.Fatalf("stop %v (%s), %d succeeded, %d trips; want every item to succeed with no trip", sum.Stop, sum.StopDetail, sum.Succeeded, sum.Trips)
		}
		tried := 0
		for idx, r := range recs {
			if r.Route != "b" || r.Model != "m-b" {
				t.Errorf("item %d: route %q model %q, want b and m-b", idx, r.Route, r.Model)
			}
			if len(r.Tries) > 0 {
				tried++
				if r.Tries[0].Route != "a" || !strings.Contains(r.Tries[0].Error, "503") || r.Tries[0].Class != classify.Retryable {
					t.Errorf("item %d: tries %+v, want a's 503 (retryable)", idx, r.Tries)
				}
			}
		}
		if tried == 0 || tried != a.called() {
			t.Errorf("%d records show a in their tries, a was called %d times; want as many, and some", tried, a.called())
		}
		if a.called() > 4+3 {
			t.Errorf("a was called %d times: its breaker (threshold 3) should have kept calls off it", a.called())
		}
		if st := sum.Routes[0]; st.Name != "a" || st.Breaker != breaker.Open {
			t.Errorf("route stats %+v: want a with its breaker open", st)
		}
		if st := sum.Routes[1]; st.Succeeded != 40 {
			t.Errorf("route b produced %d records, want 40", st.Succeeded)
		}
	})
}

// TestNoRouteCanServeTripsTheRun: with every route down, the run's
// breaker trips (here on_trip abort stops the run), saying why.
func TestNoRouteCanServeTripsTheRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := func() *routeTask {
			return &routeTask{fn: always(func() (task.Result, error) { return task.Result{}, err503 })}
		}
		cfg := engine.Config{Concurrency: 2, Retry: fastRetry, OnTrip: engine.TripAbort,
			Breaker:   breaker.Settings{Threshold: 2, ResetTimeout: time.Hour},
			Routes:    []engine.Route{{Name: "a", Task: down()}, {Name: "b", Task: down()}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, _ := routeRun(t, cfg, 20)
		if sum.Stop != engine.StopBreaker || !strings.Contains(sum.StopDetail, "no route can serve") {
			t.Fatalf("stop %v (%q); want the breaker's stop, saying no route can serve", sum.Stop, sum.StopDetail)
		}
	})
}

// TestWithoutOutageFallbackRetriesKeepTheirBackoff: without
// fallbacks.outage, a retryable failure waits out its backoff; the item
// is still routed away from an open breaker.
func TestWithoutOutageFallbackRetriesKeepTheirBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &routeTask{fn: always(func() (task.Result, error) { return task.Result{}, err503 })}
		b := &routeTask{fn: answerB}
		slow := fastRetry
		slow.MaxAttempts = 10
		slow.Backoff.Base = time.Second
		cfg := engine.Config{Concurrency: 1, Retry: slow, Breaker: breaker.Settings{Threshold: 1, ResetTimeout: time.Hour},
			Routes: []engine.Route{{Name: "a", Task: a, Tier: 0}, {Name: "b", Task: b, Tier: 1}}}
		start := time.Now()
		sum, recs := routeRun(t, cfg, 1)
		if sum.Succeeded != 1 || recs[0].Route != "b" {
			t.Fatalf("%d succeeded, route %q; want the item on b once a's breaker opened", sum.Succeeded, recs[0].Route)
		}
		if waited := time.Since(start); waited < time.Second {
			t.Errorf("the retry went at once (%v); without fallbacks.outage it waits its backoff", waited)
		}
		if len(recs[0].Tries) != 0 {
			t.Errorf("tries %+v; a retry routed by the strategy is not a fallback", recs[0].Tries)
		}
	})
}

// TestContextWindowPreCheckSendsNothingToASmallRoute: an item estimated
// larger than a route's window never reaches it, whatever its tier; one
// larger than every window fails as the item's problem.
func TestContextWindowPreCheckSendsNothingToASmallRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		small := &routeTask{fn: always(func() (task.Result, error) { return ok("small") })}
		large := &routeTask{fn: always(func() (task.Result, error) { return ok("large") })}
		cfg := engine.Config{Concurrency: 2, Retry: fastRetry,
			Routes: []engine.Route{{Name: "small", Task: estimated{small, 5000}, ContextWindow: 4096},
				{Name: "large", Task: estimated{large, 5000}, ContextWindow: 128000, Tier: 1}}}
		sum, recs := routeRun(t, cfg, 5)
		if small.called() != 0 || sum.Succeeded != 5 {
			t.Errorf("small was called %d times, %d succeeded; want 0 and 5", small.called(), sum.Succeeded)
		}
		for idx, r := range recs {
			if r.Route != "large" {
				t.Errorf("item %d on %q, want large", idx, r.Route)
			}
		}
		cfg.Routes[1].ContextWindow = 4096
		sum, recs = routeRun(t, cfg, 1)
		if sum.Failed != 1 || recs[0].Class != classify.Item || !strings.Contains(recs[0].Error, "context window") {
			t.Errorf("an item too large for every route: %+v; want it failed (item) naming the context window", recs[0])
		}
	})
}

// TestRefusalsMoveToARouteThatMayTakeThem: the provider's context-length
// refusal moves the item to a larger window, a content filter to another
// provider, each only with its fallback on.
func TestRefusalsMoveToARouteThatMayTakeThem(t *testing.T) {
	tests := []struct {
		name   string
		kind   string
		fb     engine.Fallbacks
		routes func(a, b, c *routeTask) []engine.Route
		want   string
	}{
		{"context window to the larger one", engine.FallbackContextWindow, engine.Fallbacks{ContextWindow: true},
			func(a, b, c *routeTask) []engine.Route {
				return []engine.Route{{Name: "a", Task: a, ContextWindow: 8000}, {Name: "b", Task: b, ContextWindow: 8000, Tier: 1}, {Name: "c", Task: c, ContextWindow: 200000, Tier: 2}}
			}, "c"},
		{"content filter to another provider", engine.FallbackContentFilter, engine.Fallbacks{ContentFilter: true},
			func(a, b, c *routeTask) []engine.Route {
				return []engine.Route{{Name: "a", Provider: "azure", Task: a}, {Name: "b", Provider: "azure", Task: b, Tier: 1}, {Name: "c", Provider: "anthropic", Task: c, Tier: 2}}
			}, "c"},
		{"off: the refusal fails the item", engine.FallbackContentFilter, engine.Fallbacks{Outage: true},
			func(a, b, c *routeTask) []engine.Route {
				return []engine.Route{{Name: "a", Provider: "azure", Task: a}, {Name: "c", Provider: "anthropic", Task: c, Tier: 1}}
			}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				refuse := func() *routeTask {
					return &routeTask{fn: always(func() (task.Result, error) {
						return task.Result{}, classify.WithClass(kindErr(tt.kind), classify.Item, "test")
					})}
				}
				a, b, c := refuse(), refuse(), &routeTask{fn: always(func() (task.Result, error) { return ok("c") })}
				cfg := engine.Config{Concurrency: 1, Retry: fastRetry, Routes: tt.routes(a, b, c), Fallbacks: tt.fb}
				_, recs := routeRun(t, cfg, 1)
				r := recs[0]
				if tt.want == "" {
					if !r.Failed() || r.Route != "a" {
						t.Errorf("record %+v: want the item failed on a", r)
					}
					return
				}
				if r.Failed() || r.Route != tt.want || len(r.Tries) == 0 || r.Tries[0].Route != "a" {
					t.Errorf("record route %q, error %q, tries %+v; want success on %s after a", r.Route, r.Error, r.Tries, tt.want)
				}
				if b.called() != 0 {
					t.Errorf("b was called %d times; it cannot take the item", b.called())
				}
			})
		})
	}
}

// rejectBad finds "bad" outputs invalid.
type rejectBad struct{}

func (rejectBad) Validate(_ context.Context, out json.RawMessage) error {
	if string(out) == `"bad"` {
		return errors.New("missing property text")
	}
	return nil
}

// TestEscalationCarriesTheFeedbackToTheStrongerTier: a cheap model that
// keeps answering invalid output spends its heal budget; the item goes
// to the next tier, re-asked with the feedback on its last output.
func TestEscalationCarriesTheFeedbackToTheStrongerTier(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cheap := &routeTask{fn: always(func() (task.Result, error) { return ok("bad") })}
		strong := &routeTask{fn: func(it task.Item, _ int) (task.Result, error) { return ok("good") }}
		cfg := engine.Config{Concurrency: 1, Retry: fastRetry, Validator: rejectBad{}, Heal: heal.Budget{MaxAttempts: 2},
			Routes:    []engine.Route{{Name: "cheap", Task: cheap}, {Name: "strong", Task: strong, Tier: 1}},
			Fallbacks: engine.Fallbacks{Escalate: true}}
		sum, recs := routeRun(t, cfg, 1)
		r := recs[0]
		if sum.Succeeded != 1 || r.Route != "strong" || len(r.Tries) != 1 || r.Tries[0].Route != "cheap" || r.Tries[0].Class != classify.Invalid {
			t.Fatalf("record %+v; want success on strong after cheap's invalid outputs", r)
		}
		strong.mu.Lock()
		fb := strong.seen[0].Feedback
		strong.mu.Unlock()
		if fb == nil || fb.PreviousOutput != "bad" || !strings.Contains(fb.Message, "missing property") {
			t.Errorf("strong's first call had feedback %+v; want cheap's last output and its error", fb)
		}
	})
}

// TestRecoveredRouteGetsTrafficBack: a route down at first and back after
// its breaker's reset timeout serves its share again.
func TestRecoveredRouteGetsTrafficBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		a := &routeTask{fn: func(task.Item, int) (task.Result, error) {
			if time.Since(start) < 5*time.Second {
				return task.Result{}, err503
			}
			return ok("a")
		}}
		b := &routeTask{fn: func(task.Item, int) (task.Result, error) {
			time.Sleep(100 * time.Millisecond)
			return ok("b")
		}}
		cfg := engine.Config{Concurrency: 2, Retry: fastRetry, Breaker: breaker.Settings{Threshold: 2, ResetTimeout: 2 * time.Second},
			Routes:    []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 400)
		if sum.Succeeded != 400 {
			t.Fatalf("%d succeeded, want 400", sum.Succeeded)
		}
		late := 0
		for _, r := range recs {
			if r.Route == "a" && r.FinishedAt.Sub(start) > 5*time.Second {
				late++
			}
		}
		if late < 100 {
			t.Errorf("a produced %d records after it recovered; want it back in the mix (100 or more of 400)", late)
		}
	})
}

// TestItemsGoElsewhereWhileAProbeIsOut: while a half-open route's one
// probe is out (a slow call), the other items do not wait for its outcome:
// they go to the route that can serve now.
func TestItemsGoElsewhereWhileAProbeIsOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var (
			probeEnd time.Time
			probed   sync.Once // a's calls after the probe end too
		)
		a := &routeTask{fn: func(_ task.Item, call int) (task.Result, error) {
			if call <= 2 {
				return task.Result{}, err503
			}
			time.Sleep(20 * time.Second) // the probe
			probed.Do(func() { probeEnd = time.Now() })
			return ok("a")
		}}
		b := &routeTask{fn: func(task.Item, int) (task.Result, error) {
			time.Sleep(100 * time.Millisecond)
			return ok("b")
		}}
		cfg := engine.Config{Concurrency: 4, Retry: fastRetry, Breaker: breaker.Settings{Threshold: 2, ResetTimeout: time.Second},
			Routes:    []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 200)
		if sum.Succeeded != 200 || probeEnd.IsZero() {
			t.Fatalf("%d succeeded, probe ended %v; want 200 and a's probe answered", sum.Succeeded, probeEnd.Sub(start))
		}
		before := 0
		for _, r := range recs {
			if r.Route == "b" && r.FinishedAt.Before(probeEnd) {
				before++
			}
		}
		if before < 150 {
			t.Errorf("b finished %d items while a's probe was out (20s); want the others to go to b (150 or more)", before)
		}
	})
}

// fixingPrompter answers Continue after fixing the outage, as an operator
// who restarted the deployments would.
type fixingPrompter struct {
	scriptedPrompter
	fix func()
}

func (p *fixingPrompter) Trip(ctx context.Context, r engine.TripReport) engine.TripDecision {
	p.fix()
	return p.scriptedPrompter.Trip(ctx, r)
}

// TestOperatorIsAskedOnlyWhenNoRouteCanServe: one route down never asks;
// both down asks once, saying no route can serve, and Continue gives
// every route its chance again (their breakers close).
func TestOperatorIsAskedOnlyWhenNoRouteCanServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		down := map[string]bool{"a": true, "b": false}
		task := func(name string) *routeTask {
			return &routeTask{fn: func(task.Item, int) (task.Result, error) {
				mu.Lock()
				d := down[name]
				mu.Unlock()
				if d {
					return task.Result{}, err503
				}
				return ok(name)
			}}
		}
		a, b := task("a"), task("b")
		p := &fixingPrompter{scriptedPrompter: scriptedPrompter{answers: []engine.TripDecision{engine.TripContinue}}}
		p.fix = func() {
			mu.Lock()
			down["a"], down["b"] = false, false
			mu.Unlock()
		}
		var once sync.Once
		var aOpen atomic.Bool
		cfg := engine.Config{Concurrency: 1, Retry: fastRetry, OnTrip: engine.TripPrompt, Operator: p,
			Breaker:   breaker.Settings{Threshold: 2, ResetTimeout: time.Hour},
			Routes:    []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true},
			OnEvent: func(ev engine.Event) {
				// Once a's breaker is open and ten records are in, b goes
				// down too. Items pick a or b at random: a may still be
				// closed after ten, and an item that then spends its
				// retries on both before a's breaker opens fails as usual.
				if ev.Kind == engine.RouteChanged && ev.Route == "a" && ev.State == breaker.Open {
					aOpen.Store(true)
				}
				if ev.Kind == engine.ItemFinished && ev.Record.Idx >= 10 && aOpen.Load() {
					once.Do(func() { mu.Lock(); down["b"] = true; mu.Unlock() })
				}
			}}
		sum, recs := routeRun(t, cfg, 40)
		if sum.Succeeded != 40 || sum.Stop != engine.StopNone {
			t.Fatalf("%d succeeded, stop %v (%s); want every item after Continue", sum.Succeeded, sum.Stop, sum.StopDetail)
		}
		if len(p.reports) != 1 || !strings.Contains(p.reports[0].Reason, "no route can serve") {
			t.Fatalf("the operator was asked %d times (%+v); want once, when neither route could serve", len(p.reports), p.reports)
		}
		onA := 0
		for _, r := range recs {
			if r.Route == "a" {
				onA++
			}
		}
		if onA == 0 {
			t.Errorf("no record on a after Continue: its breaker should have closed")
		}
	})
}

// TestRoutesShareByTheirLimits: two routes told 600 and 300 requests a
// minute take calls in proportion to their limits, not half each: an
// item waits where the wait is shortest, and the job takes about as long
// as the sum of the limits allows.
func TestRoutesShareByTheirLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &routeTask{fn: always(func() (task.Result, error) { return ok("a") })}
		b := &routeTask{fn: always(func() (task.Result, error) { return ok("b") })}
		cfg := engine.Config{Concurrency: 16, Retry: fastRetry,
			Routes: []engine.Route{{Name: "a", Task: a, RequestsPerMinute: 600}, {Name: "b", Task: b, RequestsPerMinute: 300}}}
		start := time.Now()
		sum, _ := routeRun(t, cfg, 900)
		took := time.Since(start)
		share := float64(a.called()) / float64(sum.Calls)
		if sum.Succeeded != 900 || share < 0.6 || share > 0.72 {
			t.Errorf("%d succeeded, a took %.0f%% of the calls; want 900 and about two thirds", sum.Succeeded, 100*share)
		}
		if took > 66*time.Second {
			t.Errorf("900 calls at 600+300 rpm took %v; want about a minute", took)
		}
	})
}

// TestAnItemThatChoseARouteBeforeItsCooldownGoesElsewhere: with both
// routes at their limits, items queue at the limiter of the route whose
// turn comes soonest. A 429 then began a's one-minute cooldown, and the
// items queued at a waited it out there, each holding one of the run's
// call slots, while b's turns came every second. Now an item whose route
// began a cooldown after it chose the route chooses again. Only the item
// that met the 429 waits its retry hint.
func TestAnItemThatChoseARouteBeforeItsCooldownGoesElsewhere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		a := &routeTask{fn: func(_ task.Item, call int) (task.Result, error) {
			time.Sleep(100 * time.Millisecond)
			if call == 1 {
				return task.Result{}, classify.WithClass(hinted429{after: time.Minute}, classify.Retryable, "test")
			}
			return ok("a")
		}}
		b := &routeTask{fn: func(task.Item, int) (task.Result, error) {
			time.Sleep(100 * time.Millisecond)
			return ok("b")
		}}
		cfg := engine.Config{Concurrency: 16, Retry: fastRetry, Breaker: breaker.Settings{Threshold: 5, ResetTimeout: time.Second},
			Routes: []engine.Route{{Name: "a", Task: a, RequestsPerMinute: 60}, {Name: "b", Task: b, RequestsPerMinute: 60}}}
		sum, recs := routeRun(t, cfg, 20)
		if sum.Succeeded != 20 {
			t.Fatalf("%d of 20 succeeded", sum.Succeeded)
		}
		var late []string
		for _, r := range recs {
			if r.FinishedAt.Sub(start) >= time.Minute && r.Attempts == 1 {
				late = append(late, fmt.Sprintf("item %d on %s", r.Idx, r.Route))
			}
		}
		if len(late) > 0 {
			t.Errorf("%d items that met no 429 ended after a's one-minute cooldown though b was free (%s); a took %d calls, b %d",
				len(late), strings.Join(late, ", "), a.called(), b.called())
		}
	})
}

// TestRetriesSpentAsTheLastRouteOpensLeaveTheItemToTheOperator: an item
// whose retry streak ran out on the call that opened the last route's
// breaker, after it had tried every route, was failed, though no route
// could serve: the outage the operator is asked about. Which item met it
// depended on the order the strategy picked routes in. Now it waits for
// the run breaker's decision like every item, and goes on after Continue.
func TestRetriesSpentAsTheLastRouteOpensLeaveTheItemToTheOperator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		fixed := false
		down := func() *routeTask {
			return &routeTask{fn: func(it task.Item, _ int) (task.Result, error) {
				mu.Lock()
				defer mu.Unlock()
				if !fixed {
					return task.Result{}, err503
				}
				return ok("fixed")
			}}
		}
		p := &fixingPrompter{scriptedPrompter: scriptedPrompter{answers: []engine.TripDecision{engine.TripContinue}},
			fix: func() { mu.Lock(); fixed = true; mu.Unlock() }}
		twice := fastRetry
		twice.MaxAttempts = 2 // spent on the second route's call, which opens its breaker
		cfg := engine.Config{Concurrency: 1, Retry: twice, OnTrip: engine.TripPrompt, Operator: p,
			Breaker:   breaker.Settings{Threshold: 1, ResetTimeout: time.Hour},
			Routes:    []engine.Route{{Name: "a", Task: down()}, {Name: "b", Task: down()}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 1)
		if r := recs[0]; sum.Succeeded != 1 || r.Failed() {
			t.Fatalf("%d succeeded, record %+v; want the item to succeed after Continue", sum.Succeeded, r)
		}
		if len(p.reports) != 1 || !strings.Contains(p.reports[0].Reason, "no route can serve") {
			t.Errorf("the operator was asked %d times (%+v); want once, saying no route can serve", len(p.reports), p.reports)
		}
	})
}

// TestRefusedCallsGiveTheirInFlightCountBack: route a's breaker opens at
// its first failure and refuses the calls of the items that chose it
// before it opened; each refused call was counted in flight by the run's
// gate and must be given back. The count once stayed up by one a refusal
// (`in flight 16/8` on the progress line, the gauge above the limit after
// the run). The route counts its refusals (RouteStats.Refused): over
// 1,000 items they are 180 to 210, and the test needs 100 of them, so
// that the count given back is one of many refusals, not of a few.
func TestRefusedCallsGiveTheirInFlightCountBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &routeTask{fn: always(func() (task.Result, error) {
			time.Sleep(10 * time.Millisecond)
			return task.Result{}, err503
		})}
		b := &routeTask{fn: always(func() (task.Result, error) {
			time.Sleep(10 * time.Millisecond)
			return ok("from b")
		})}
		var peak atomic.Int64
		var e *engine.Engine
		cfg := engine.Config{Concurrency: 8, Retry: fastRetry, OnTrip: engine.TripAbort,
			Breaker:   breaker.Settings{Threshold: 1, ResetTimeout: 15 * time.Millisecond},
			Routes:    []engine.Route{{Name: "a", Task: a, Weight: 1}, {Name: "b", Task: b, Weight: 1}},
			Routing:   engine.RoutingWeighted,
			Fallbacks: engine.Fallbacks{Outage: true},
			OnEvent: func(ev engine.Event) {
				if ev.Kind == engine.ItemCalled {
					if n := int64(e.Stats().InFlight); n > peak.Load() {
						peak.Store(n)
					}
				}
			}}
		job := newMemJob()
		e = engine.New(cfg, task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("unused") }), job)
		sum, err := e.Run(context.Background(), items(1000))
		if err != nil {
			t.Fatal(err)
		}
		if sum.Succeeded != 1000 {
			t.Fatalf("%d of 1000 succeeded (stop %v: %s); want all, on b", sum.Succeeded, sum.Stop, sum.StopDetail)
		}
		st := e.Stats()
		if len(st.Routes) != 2 || st.Routes[0].Name != "a" {
			t.Fatalf("routes %+v; want a and b", st.Routes)
		}
		if a := st.Routes[0]; a.Refused < 100 || a.Faults == 0 {
			t.Errorf("route a's breaker refused %d calls (%d faults); want at least 100 refusals", a.Refused, a.Faults)
		}
		if got := st.InFlight; got != 0 {
			t.Errorf("in flight %d after the run; want 0: refused calls kept their count", got)
		}
		if p := peak.Load(); p > 8 {
			t.Errorf("in flight reached %d with concurrency 8", p)
		}
	})
}
