package engine

import (
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Routes is a run's deployments and the one rule that sends an item to
// one of them: the lowest tier whose breaker is not open, the strategy
// within it, the routes an item left and what its fallbacks want of the
// next (route.go). The engine keeps one, with a gate per route; batch
// waves keep one without gates (NewRoutes), so that a wave's item goes
// where an online call of it would, and moves after an answer by the same
// Routes.After.
type Routes struct {
	list      []*route
	routing   Routing
	fallbacks Fallbacks
	retry     retry.Policy
}

// RouteRules are what a Routes chooses by: the spec's routing strategy
// and fallbacks, and the retry policy a moved item's fresh streak starts
// from.
type RouteRules struct {
	Routing   Routing
	Fallbacks Fallbacks
	Retry     retry.Policy
}

// NewRoutes returns the Routes of routes, in their order, for a mode that
// sends without the engine's gates (batch waves): a route always has room,
// and its breaker opens only by Open.
func NewRoutes(routes []Route, rules RouteRules) *Routes {
	rs := &Routes{routing: rules.Routing, fallbacks: rules.Fallbacks, retry: rules.Retry}
	for i, rc := range routes {
		r := newRoute(rc, i)
		r.br = breaker.New(breaker.Settings{})
		rs.list = append(rs.list, r)
	}
	return rs
}

// Len is the number of routes.
func (rs *Routes) Len() int { return len(rs.list) }

// Index is the index of the route named name, -1 when there is none.
func (rs *Routes) Index(name string) int {
	for i, r := range rs.list {
		if r.Name == name {
			return i
		}
	}
	return -1
}

// NoRouteError is an item no route can take now. With Open false the item
// fits none (a context window too small, its provider refused it, below
// the tier it escalated to): it fails as the item's problem, class item.
// With Open true routes could take it but each one's breaker is open: the
// run's breaker is the one to trip.
type NoRouteError struct {
	Why  string
	Open bool
}

func (e *NoRouteError) Error() string { return "no route can take this item: " + e.Why }

// Choose picks the route of the item's next call and makes it the item's
// (ItemRoute.Index): a *NoRouteError when there is none.
func (rs *Routes) Choose(ir *ItemRoute, item *task.Item) (int, error) {
	ir.item = item
	if ir.estimate == 0 && item != nil {
		ir.estimate = rs.routeEstimate(*item)
	}
	rt, why, open := rs.pick(ir)
	if rt == nil {
		return -1, classify.WithClass(&NoRouteError{Why: why, Open: open}, classify.Item, "no route fits")
	}
	rs.take(ir, rt)
	return rt.idx, nil
}

// take makes rt the item's route: a move asked for is done once the item
// is elsewhere.
func (rs *Routes) take(ir *ItemRoute, rt *route) {
	if ir.cur != nil && ir.cur != rt && ir.move {
		ir.move = false
	}
	if ir.cur != rt {
		// Call time is the route's own: calls on the route before (a
		// 429 sent elsewhere, with no try) are its, not this one's.
		ir.callTime = 0
	}
	ir.cur = rt
}

// Put says the item's last call went to route i, as a batch the ledger
// knows says of its requests; -1 says it has none yet.
func (rs *Routes) Put(ir *ItemRoute, i int) {
	if i < 0 || i >= len(rs.list) {
		ir.cur = nil
		return
	}
	ir.cur = rs.list[i]
}

// Open opens route i's breaker for the rest of the run, and reports
// whether another route's breaker is still closed to take its items: when
// none is, no route can serve and the run's breaker is the one to trip. A
// batch wave opens it when the wave's answers on it trip it
// (breaker.Share) or it refuses to create a batch.
func (rs *Routes) Open(i int) (others bool) {
	// A wave takes hours: a half-open probe of one request is a wave of
	// its own, so the route stays open until the run ends or the
	// operator continues (Reset).
	rs.list[i].br.TripUntil(time.Now().Add(100 * 365 * 24 * time.Hour))
	for _, o := range rs.list {
		if o.br.State() != breaker.Open {
			return true
		}
	}
	return false
}

// Reset closes every route's breaker: the operator continued the run.
func (rs *Routes) Reset() {
	for _, r := range rs.list {
		r.br.Reset()
	}
}

// Called counts n calls made on route i, Recorded a record it produced.
func (rs *Routes) Called(i, n int) { rs.list[i].calls.Add(int64(n)) }

// Recorded counts a record of route name, failed or not; a name no route
// has counts nowhere.
func (rs *Routes) Recorded(name string, failed bool) {
	i := rs.Index(name)
	if i < 0 {
		return
	}
	if failed {
		rs.list[i].failed.Add(1)
	} else {
		rs.list[i].succeeded.Add(1)
	}
}

// Add adds what an engine did on the routes (its Stats().Routes), by name:
// a batch job's online tail counted with its waves.
func (rs *Routes) Add(stats []RouteStats) {
	for _, s := range stats {
		if i := rs.Index(s.Name); i >= 0 {
			r := rs.list[i]
			r.calls.Add(int64(s.Calls))
			r.succeeded.Add(int64(s.Succeeded))
			r.failed.Add(int64(s.Failed))
			r.faults.Add(int64(s.Faults))
			r.refusals.Add(int64(s.Refused))
		}
	}
}

// Stats returns each route's counters; nil without routes, or with only
// the implicit route (unnamed), which no stat names.
func (rs *Routes) Stats() []RouteStats {
	if len(rs.list) == 0 || len(rs.list) == 1 && rs.list[0].Name == "" {
		return nil
	}
	out := make([]RouteStats, len(rs.list))
	for i, r := range rs.list {
		out[i] = RouteStats{Name: r.Name, Model: r.Model, Breaker: r.br.State(), Calls: int(r.calls.Load()),
			Succeeded: int(r.succeeded.Load()), Failed: int(r.failed.Load()),
			Faults: int(r.faults.Load()), Refused: int(r.refusals.Load())}
		out[i].RequestsPerMinute, out[i].TokensPerMinute = r.RequestsPerMinute, r.TokensPerMinute
		if r.gate != nil {
			out[i].Limit, out[i].InFlight = r.gate.conc.Limit(), int(r.gate.conc.executing.Load())
			out[i].RequestsPerMinuteLearned, out[i].TokensPerMinuteLearned = r.gate.learnedPerMinute()
		}
	}
	return out
}

// Index is the index of the item's route, -1 before its first choice.
func (ir *ItemRoute) Index() int {
	if ir.cur == nil {
		return -1
	}
	return ir.cur.idx
}

// Tries are the routes the item left, with their errors.
func (ir *ItemRoute) Tries() []store.Try { return ir.tries }

// Served names the item's route for its record: the zero Served for the
// implicit route (a run without routes), which no record names.
func (ir *ItemRoute) Served() Served {
	if !ir.named() {
		return Served{}
	}
	return Served{Route: ir.cur.Name, Model: ir.cur.Model, Tries: ir.tries, CallMS: ceilMS(ir.callTime)}
}

// named reports whether the item is on a named route, whose record
// names it and keeps its call time; not the implicit route of a run
// without routes.
func (ir *ItemRoute) named() bool { return ir.cur != nil && ir.cur.Name != "" }

// timed adds the own time of one call on the item's route.
func (ir *ItemRoute) timed(d time.Duration) { ir.callTime += d }

// takeCallMS is the call time on the route the item leaves (its try's
// call_ms), which it starts again from zero for the next route.
func (ir *ItemRoute) takeCallMS() int64 {
	ms := ceilMS(ir.callTime)
	ir.callTime = 0
	return ms
}

// ceilMS is d in whole milliseconds, rounded up: a call that took any
// time at all is never recorded as none (call_ms is absent when 0).
func ceilMS(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// executing is the number of r's calls under way: none without a gate.
func (r *route) executing() int64 {
	if r.gate == nil {
		return 0
	}
	return r.gate.conc.executing.Load()
}
