package engine

import (
	"context"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/task"
)

// pricedTask is a route task whose calls cost usd each, or whose price is
// unknown.
type pricedTask struct {
	usd   float64
	known bool
}

func (pricedTask) Run(context.Context, task.Item) (task.Result, error) { return task.Result{}, nil }

func (p pricedTask) EstimateCost(task.Item) (float64, bool) { return p.usd, p.known }

func priced(usd float64) task.Task { return pricedTask{usd: usd, known: true} }

// sample gives a route n calls of d each, answered or not, picked just
// now (no exploration due).
func sample(r *route, n int, d time.Duration, answered bool) {
	for range n {
		r.lat.observe(d, answered)
	}
	r.lat.picked.Store(time.Now().UnixNano())
}

func TestStrategyPicks(t *testing.T) {
	unpriced := pricedTask{}
	tests := []struct {
		name    string
		routing Routing
		routes  []Route
		setup   func(rs map[string]*route)
		want    string
	}{
		{"cost: the cheapest route", RoutingCost,
			[]Route{{Name: "a", Task: priced(0.02)}, {Name: "b", Task: priced(0.001)}, {Name: "c", Task: priced(0.01)}}, nil, "b"},
		{"cost: a route without a price ranks after every priced one", RoutingCost,
			[]Route{{Name: "a", Task: unpriced}, {Name: "b", Task: priced(5)}}, nil, "b"},
		{"cost: equal prices go to the least loaded", RoutingCost,
			[]Route{{Name: "a", Task: priced(1)}, {Name: "b", Task: priced(1)}},
			func(rs map[string]*route) { rs["a"].gate.conc.executing.Store(3) }, "b"},
		{"cost: the cheapest without headroom overflows to the next", RoutingCost,
			[]Route{{Name: "a", Task: priced(1)}, {Name: "b", Task: priced(2)}, {Name: "c", Task: priced(3)}},
			func(rs map[string]*route) { rs["a"].gate.cooldown(time.Now().Add(time.Minute)) }, "b"},
		{"cost: a cheaper route in a higher tier waits its turn", RoutingCost,
			[]Route{{Name: "a", Task: priced(0.001), Tier: 1}, {Name: "b", Task: priced(2)}}, nil, "b"},
		{"latency: the fastest route", RoutingLatency,
			[]Route{{Name: "a", Task: priced(0)}, {Name: "b", Task: priced(0)}},
			func(rs map[string]*route) {
				sample(rs["a"], 5, time.Second, true)
				sample(rs["b"], 5, 200*time.Millisecond, true)
			}, "b"},
		{"latency: a route that fails fast is not fast", RoutingLatency,
			[]Route{{Name: "a", Task: priced(0)}, {Name: "b", Task: priced(0)}},
			func(rs map[string]*route) {
				sample(rs["a"], 1, 50*time.Millisecond, true)
				sample(rs["a"], 8, 50*time.Millisecond, false)
				sample(rs["b"], 5, 300*time.Millisecond, true)
			}, "b"},
		{"latency: a route not called yet is tried first", RoutingLatency,
			[]Route{{Name: "a", Task: priced(0)}, {Name: "b", Task: priced(0)}},
			func(rs map[string]*route) {
				sample(rs["a"], 5, time.Millisecond, true)
				rs["b"].lat.picked.Store(time.Now().UnixNano())
			}, "b"},
		{"latency: a slow route left unpicked for a while is explored", RoutingLatency,
			[]Route{{Name: "a", Task: priced(0)}, {Name: "b", Task: priced(0)}},
			func(rs map[string]*route) {
				sample(rs["a"], 5, 10*time.Millisecond, true)
				sample(rs["b"], 5, time.Second, true)
				rs["b"].lat.picked.Store(time.Now().Add(-exploreEvery).UnixNano())
			}, "b"},
		{"latency: a recovered route's failures are forgotten", RoutingLatency,
			[]Route{{Name: "a", Task: priced(0)}, {Name: "b", Task: priced(0)}},
			func(rs map[string]*route) {
				sample(rs["a"], 20, 20*time.Millisecond, false)
				rs["a"].lat.forgetFailures()
				sample(rs["b"], 5, 100*time.Millisecond, true)
			}, "a"},
		{"least_loaded: fewest calls under way per unit of weight", RoutingLeastLoaded,
			[]Route{{Name: "a", Task: priced(0), Weight: 1}, {Name: "b", Task: priced(0), Weight: 3}},
			func(rs map[string]*route) {
				rs["a"].gate.conc.executing.Store(1)
				rs["b"].gate.conc.executing.Store(2)
			}, "b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{Concurrency: 8, Routing: tt.routing, Routes: tt.routes}, pricedTask{}, nil)
			rs := map[string]*route{}
			for _, r := range e.routing.list {
				rs[r.Name] = r
			}
			if tt.setup != nil {
				tt.setup(rs)
			}
			got, why, _ := e.routing.pick(&ItemRoute{item: &task.Item{}})
			if got == nil {
				t.Fatalf("no route picked (%s), want %s", why, tt.want)
			}
			if got.Name != tt.want {
				t.Errorf("picked %s, want %s", got.Name, tt.want)
			}
		})
	}
}

// TestExplorationTakesOneCallPerPeriod: when a route is due to be seen
// again, one item explores it; the items picking at the same moment go to
// the fastest route, so a slow route is not flooded by its turn.
func TestExplorationTakesOneCallPerPeriod(t *testing.T) {
	e := New(Config{Concurrency: 8, Routing: RoutingLatency, Routes: []Route{{Name: "fast", Task: priced(0)}, {Name: "slow", Task: priced(0)}}}, pricedTask{}, nil)
	fast, slow := e.routing.list[0], e.routing.list[1]
	sample(fast, 5, 10*time.Millisecond, true)
	sample(slow, 5, time.Second, true)
	slow.lat.picked.Store(time.Now().Add(-2 * exploreEvery).UnixNano())
	got := map[string]int{}
	for range 10 {
		r, _, _ := e.routing.pick(&ItemRoute{item: &task.Item{}})
		got[r.Name]++
	}
	if got["slow"] != 1 || got["fast"] != 9 {
		t.Errorf("ten picks went %v; want one to explore slow and nine to fast", got)
	}
}

// TestAStrategyLeftWithoutHeadroomWaitsAtTheTier: pick read a tier's
// headroom, then strategy read it again, and another item could take the
// last slot (or a cooldown begin) in between: weighted got no route and
// panicked (rand.IntN(0), seen once in CI). Every strategy now waits at
// the tier's soonest route.
func TestAStrategyLeftWithoutHeadroomWaitsAtTheTier(t *testing.T) {
	for _, routing := range []Routing{RoutingWeighted, RoutingLeastLoaded, RoutingCost, RoutingLatency} {
		e := New(Config{Concurrency: 8, Routing: routing, Routes: []Route{
			{Name: "a", Task: priced(1)}, {Name: "b", Task: priced(1)},
		}}, pricedTask{}, nil)
		e.routing.list[0].gate.cooldown(time.Now().Add(time.Minute))
		e.routing.list[1].gate.cooldown(time.Now().Add(time.Second))
		got := e.routing.strategy(&ItemRoute{item: &task.Item{}}, e.routing.list, 0, true)
		if got == nil || got.Name != "b" {
			t.Errorf("routing %v with no headroom left picked %v, want b, the sooner ready", routing, got)
		}
	}
}
