package engine_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// pricedRoute is a routeTask whose every call is estimated at usd.
type pricedRoute struct {
	*routeTask
	usd float64
}

func (p pricedRoute) EstimateCost(task.Item) (float64, bool) { return p.usd, true }

// sleepy answers after d, which may change with the time of the call.
func sleepy(name string, d func() time.Duration) *routeTask {
	return &routeTask{fn: func(task.Item, int) (task.Result, error) {
		time.Sleep(d())
		return ok(name)
	}}
}

// shareAfter is the share of the records finished after from that route
// produced, and how many records that is.
func shareAfter(recs map[int]store.Record, route string, from time.Time) (float64, int) {
	on, all := 0, 0
	for _, r := range recs {
		if r.FinishedAt.Before(from) {
			continue
		}
		all++
		if r.Route == route {
			on++
		}
	}
	if all == 0 {
		return 0, 0
	}
	return float64(on) / float64(all), all
}

// TestCostRoutingFillsTheCheapestRouteFirst: the cheap route takes every
// call it has room for; told a rate limit, it takes its limit's worth and
// the dearer route the rest.
func TestCostRoutingFillsTheCheapestRouteFirst(t *testing.T) {
	tests := []struct {
		name     string
		cheapRPM int
		// want is the cheap route's share of the calls, within 5 points.
		want func(took time.Duration, calls int) float64
	}{
		{"no limit: all of it", 0, func(time.Duration, int) float64 { return 1 }},
		{"600 rpm: its limit's worth", 600, func(took time.Duration, calls int) float64 { return 10 * took.Seconds() / float64(calls) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				d := func() time.Duration { return 100 * time.Millisecond }
				cheap, dear := sleepy("cheap", d), sleepy("dear", d)
				cfg := engine.Config{Concurrency: 8, Retry: fastRetry, Routing: engine.RoutingCost,
					Routes: []engine.Route{{Name: "dear", Task: pricedRoute{dear, 0.01}}, {Name: "cheap", Task: pricedRoute{cheap, 0.001}, RequestsPerMinute: tt.cheapRPM}}}
				start := time.Now()
				sum, _ := routeRun(t, cfg, 600)
				took := time.Since(start)
				share := float64(cheap.called()) / float64(sum.Calls)
				want := tt.want(took, sum.Calls)
				if sum.Succeeded != 600 || share < want-0.05 || share > want+0.05 {
					t.Errorf("%d succeeded in %v, cheap took %.0f%% of %d calls; want 600 and about %.0f%%", sum.Succeeded, took, 100*share, sum.Calls, 100*want)
				}
			})
		})
	}
}

// TestLatencyRoutingFollowsTheFastestRoute: a is fast and b slow, then b
// becomes the faster one: most calls go to a, then, once exploration has
// seen b again, to b.
func TestLatencyRoutingFollowsTheFastestRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		switched := start.Add(30 * time.Second)
		a := sleepy("a", func() time.Duration { return 50 * time.Millisecond })
		b := sleepy("b", func() time.Duration {
			if time.Now().Before(switched) {
				return 400 * time.Millisecond
			}
			return 10 * time.Millisecond
		})
		cfg := engine.Config{Concurrency: 4, Retry: fastRetry, Routing: engine.RoutingLatency,
			Routes: []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}}}
		_, recs := routeRun(t, cfg, 10000)
		early := 0
		all := 0
		for _, r := range recs {
			if r.FinishedAt.After(start.Add(time.Second)) && r.FinishedAt.Before(switched) {
				all++
				if r.Route == "a" {
					early++
				}
			}
		}
		if all == 0 || float64(early)/float64(all) < 0.9 {
			t.Errorf("before b sped up, a produced %d of %d records; want 90%% or more on the faster route", early, all)
		}
		late, n := shareAfter(recs, "b", switched.Add(8*time.Second))
		if n == 0 || late < 0.9 {
			t.Errorf("8s after b became the faster route, it produced %.0f%% of %d records; want 90%% or more", 100*late, n)
		}
	})
}

// TestLatencyRoutingReturnsToARecoveredRoute: the fast route is down for
// the first ten seconds; its breaker keeps calls off it, and once it
// answers again the traffic comes back to it, as it is the faster one.
func TestLatencyRoutingReturnsToARecoveredRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		recovered := start.Add(10 * time.Second)
		a := &routeTask{fn: func(task.Item, int) (task.Result, error) {
			time.Sleep(20 * time.Millisecond)
			if time.Now().Before(recovered) {
				return task.Result{}, err503
			}
			return ok("a")
		}}
		b := sleepy("b", func() time.Duration { return 100 * time.Millisecond })
		cfg := engine.Config{Concurrency: 4, Retry: fastRetry, Routing: engine.RoutingLatency,
			Breaker:   breaker.Settings{Threshold: 3, ResetTimeout: 2 * time.Second},
			Routes:    []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 3000)
		if sum.Succeeded != 3000 {
			t.Fatalf("%d succeeded, want 3000", sum.Succeeded)
		}
		during, _ := shareAfter(recs, "b", start)
		if during == 0 {
			t.Errorf("b produced no record: the outage of a should have sent items there")
		}
		back, n := shareAfter(recs, "a", recovered.Add(8*time.Second))
		if n == 0 || back < 0.9 {
			t.Errorf("8s after a recovered it produced %.0f%% of %d records; want 90%% or more, being the faster route", 100*back, n)
		}
	})
}
