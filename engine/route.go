package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Routes: a run over several deployments (docs/routes.md). A run without
// routes is a run over one, the implicit route: unnamed, calling the run's
// task, whose gate is the run's and whose breaker is the run's (its own
// never opens), so that every item takes one path — pick, pass, call,
// settle, record — whatever the spec says. Each named route has a gate of
// its own — its breaker, provider cooldown, learned limits and
// adaptive concurrency — behind the run's gate, which keeps what belongs
// to the whole job: the budget, the operator's pause and the run's
// breaker, which counts items' final failures as without routes. Before
// each call the item picks a route:
//
//  1. routes the item may not use are skipped: a context window smaller
//     than its estimated tokens, a tier below the one it escalated to,
//     the provider a content filter refused it on, a route it left under
//     fallbacks.outage while an untried one remains;
//  2. of the rest, those whose breaker is open are skipped; when that
//     leaves none, no route can serve: the run's breaker trips and
//     breaker.on_trip decides (the operator is asked only then);
//  3. the lowest tier with a route that has headroom (no cooldown, a free
//     call slot) wins, and the strategy picks within it (routing.go):
//     weighted at random, least loaded, cheapest or fastest; without
//     headroom anywhere, the lowest tier is picked and the call waits at
//     that route's gate.
//
// After the call, the per-item core decides as without routes, and a
// fallback the spec turned on may move the item (Routes.After): an outage
// moves it to another route at once, a spent retry streak starts afresh on
// an untried route, a context window or content filter refusal moves it
// to a route that may take it, a spent heal budget to the next tier.

// Route is one deployment a run may call.
type Route struct {
	// Name names the route in records, events and stats.
	Name string
	// Provider and Model are the route's, for records and for the
	// content-filter fallback (which wants another provider).
	Provider, Model string
	// Task makes one attempt on this route.
	Task task.Task
	// Tier orders routes: the lowest tier with headroom serves.
	Tier int
	// Weight is the route's share of its tier (RoutingWeighted); 0 is 1.
	Weight int
	// ContextWindow is the model's context in tokens: an item whose
	// estimate (Estimator or Preparer: prompt and answer) is larger is
	// never sent to it. 0 is unknown.
	ContextWindow int
	// RequestsPerMinute and TokensPerMinute are the route's told limits;
	// 0 learns them from the provider's headers.
	RequestsPerMinute, TokensPerMinute int
}

// Routing chooses among one tier's routes.
type Routing uint8

const (
	// RoutingWeighted picks at random in proportion to Route.Weight.
	RoutingWeighted Routing = iota
	// RoutingLeastLoaded picks the route with the fewest calls under way
	// per unit of weight.
	RoutingLeastLoaded
	// RoutingCost picks the route where the item's call costs least, by
	// the route's price and the item's estimated tokens (CostEstimator).
	RoutingCost
	// RoutingLatency picks the route with the lowest recent time per
	// answer, trying each other route once in a while to see it again.
	RoutingLatency
)

// Fallbacks says which failures move an item to another route; each is
// off unless set.
type Fallbacks struct {
	// Outage: a retryable failure other than a 429, or a fatal one (the
	// route's setup is wrong), moves the next attempt to another route at
	// once; a spent retry streak starts afresh on a route not tried yet.
	Outage bool
	// ContextWindow: a refusal as longer than the context window moves
	// the item to a route with a larger one.
	ContextWindow bool
	// ContentFilter: a content filter or refusal moves the item to a
	// route of another provider.
	ContentFilter bool
	// Escalate: a spent heal budget moves the item to the next tier, with
	// the feedback so far.
	Escalate bool
}

// The kinds of failure a FallbackKinder names.
const (
	// FallbackContextWindow is a prompt longer than the model's window.
	FallbackContextWindow = "context_window"
	// FallbackContentFilter is an answer or prompt a content filter
	// stopped, or a model's refusal.
	FallbackContentFilter = "content_filter"
	// FallbackEscalate is a spent heal budget that moves the item to a
	// stronger tier (Fallbacks.Escalate).
	FallbackEscalate = "escalate"
)

// After names the fallback fb applies to a failure (a StepFail decision)
// that asks for another kind of route, not for another try: a prompt past
// the route's context window (FallbackContextWindow), a content filter's
// refusal (FallbackContentFilter), a spent heal budget with Escalate on
// (FallbackEscalate); "" for none. The engine and batch waves both ask
// it, so that the rules are written once.
func (fb Fallbacks) After(next Next) string {
	if next.Step != StepFail {
		return ""
	}
	kind := ""
	if k, ok := errors.AsType[fallbackKindError](next.Err); ok {
		kind = k.FallbackKind()
	}
	switch {
	case kind == FallbackContextWindow && fb.ContextWindow:
		return FallbackContextWindow
	case kind == FallbackContentFilter && fb.ContentFilter:
		return FallbackContentFilter
	case next.Decision.Class == classify.Invalid && fb.Escalate && next.Decision.Reason != "heal disabled":
		return FallbackEscalate
	}
	return ""
}

// hinterError is a retry.Hinter as errors.AsType takes it: errors.As
// into a Hinter variable moves the variable to the heap on every 429.
type hinterError interface {
	error
	retry.Hinter
}

// fallbackKindError is a FallbackKinder as errors.AsType takes it.
type fallbackKindError interface {
	error
	FallbackKinder
}

// FallbackKinder is implemented by errors that call for a fallback of
// their own kind (FallbackContextWindow, FallbackContentFilter); task/llm's
// errors do.
type FallbackKinder interface {
	FallbackKind() string
}

// RouteStats are one route's counters.
type RouteStats struct {
	Name, Model string
	Breaker     breaker.State
	// Calls counts the calls made on the route; Succeeded and Failed
	// the records it produced.
	Calls, Succeeded, Failed int
	// Faults counts its calls that failed as an outage or a fatal error
	// (a 5xx, a dropped connection, a wrong key): the failures its
	// breaker counts. Refused counts the calls its open (or half-open,
	// probe out) breaker refused, each sent back to choose a route again.
	Faults, Refused int
	// Limit is its current concurrency limit, InFlight its calls under
	// way now (past its gate, not yet settled).
	Limit, InFlight int
	// RequestsPerMinute and TokensPerMinute are the limits the spec told
	// the route (Route's), 0 for none; RequestsPerMinuteLearned and
	// TokensPerMinuteLearned those its gate learned from the provider's
	// rate-limit headers while the spec told none (docs/concurrency.md),
	// 0 before any header named one.
	RequestsPerMinute, TokensPerMinute               int
	RequestsPerMinuteLearned, TokensPerMinuteLearned int
}

// route is one route's state.
type route struct {
	Route
	idx  int
	br   *breaker.Breaker
	gate *gate
	prep task.Preparer
	est  Estimator
	cach Cacher
	lat  latency // for RoutingLatency
	// shared is the route's state shared with the other engines of the
	// job, nil when alone; seen is its state as last followed here.
	shared SharedRoute
	seen   RouteState
	// coolShared tells the other engines of the job of a cooldown the
	// route's gate began on a 429's hint: the route's SharedRoute, or
	// for the implicit route the run's SharedBreaker; nil when alone.
	coolShared interface{ Cooldown(until time.Time) }

	calls, succeeded, failed atomic.Int64
	faults, refusals         atomic.Int64
}

// errRouteRefused is a route's gate refusing a call because its breaker
// gives no permit now: the item picks again.
var errRouteRefused = errors.New("engine: the route's breaker refused the call")

// errRouteCooling is a route's gate refusing a call because the route
// began a cooldown after the item chose it: the item chooses again rather
// than wait the cooldown out.
var errRouteCooling = errors.New("engine: the route began a cooldown after it was chosen")

// routesOf is what a run calls: cfg.Routes, or without them one implicit
// route of t, unnamed (docs/routes.md). Every later step takes the list
// as it comes: a run without routes is a run over one route.
func routesOf(cfg Config, t task.Task) []Route {
	if len(cfg.Routes) > 0 {
		return cfg.Routes
	}
	return []Route{{Task: t}}
}

// hasOwnGate reports whether route rc has a gate and a breaker of its own
// behind the run's: a named route. The implicit route (unnamed, so no
// record, event or stat names it) calls through the run's gate, and the
// run's breaker at that gate is the one that holds its calls.
func hasOwnGate(rc Route) bool { return rc.Name != "" }

// newRoutes makes each route's breaker and gate, one route at a time by
// the same code, the implicit route of a run without routes included.
func (e *Engine) newRoutes(cfg Config, routes []Route) {
	ch := make(chan struct{})
	e.routing.changed.Store(&ch)
	e.routing.routing, e.routing.fallbacks, e.routing.retry = cfg.Routing, cfg.Fallbacks, cfg.Retry
	for i, rc := range routes {
		e.routing.list = append(e.routing.list, e.buildRoute(cfg, rc, i))
	}
}

// buildRoute is route rc at index i with its breaker and gate. A named
// route's breaker decides whether items pick it, and its gate holds its
// told limits and learns its concurrency; its state is shared with the
// other engines of the job through cfg.SharedRoute. The implicit route's
// breaker never opens (no pick skips it) and its gate is the run's, its
// cooldowns shared through the run's SharedBreaker.
func (e *Engine) buildRoute(cfg Config, rc Route, i int) *route {
	r := newRoute(rc, i)
	if !hasOwnGate(rc) {
		r.br = breaker.New(breaker.Settings{Threshold: -1})
		r.gate = e.gate
		if cfg.SharedBreaker != nil {
			r.coolShared = cfg.SharedBreaker
		}
		return r
	}
	bs := cfg.Breaker
	bs.OnStateChange = func(from, to breaker.State, c breaker.Counts) { e.routeBreakerChanged(r, from, to) }
	r.br = breaker.New(bs)
	gc := Config{Concurrency: cfg.Concurrency, Adaptive: cfg.Adaptive, InitialConcurrency: cfg.InitialConcurrency,
		RequestsPerMinute: rc.RequestsPerMinute, TokensPerMinute: rc.TokensPerMinute}
	if cfg.SharedRoute != nil {
		r.shared = cfg.SharedRoute(rc.Name)
		gc.SharedLimiter = r.shared
		r.coolShared = r.shared
	}
	r.gate = newGate(gc, r.br, e.spentNow)
	r.gate.refuse = true
	r.gate.onChange = e.kickRoutes
	if r.shared != nil {
		// A route another engine found down is down here before the
		// first call: none is sent to learn it again.
		st, _ := r.shared.Follow()
		e.follow(r, st)
	}
	return r
}

// newRoute is route rc at index i, with the optional interfaces of its
// task asserted once.
func newRoute(rc Route, i int) *route {
	r := &route{Route: rc, idx: i}
	if r.Weight <= 0 {
		r.Weight = 1
	}
	r.prep, _ = rc.Task.(task.Preparer)
	r.est, _ = rc.Task.(Estimator)
	r.cach, _ = rc.Task.(Cacher)
	return r
}

// ownGate reports whether rt has a gate of its own behind the run's: a
// named route; the implicit route's gate is the run's.
func (e *Engine) ownGate(rt *route) bool { return rt.gate != e.gate }

// followRoutes follows the state the other engines of the job share for
// each route until ctx ends; the returned func waits for it to stop.
func (e *Engine) followRoutes(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	for _, r := range e.routing.list {
		if r.shared == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				st, changed := r.shared.Follow()
				e.follow(r, st)
				select {
				case <-ctx.Done():
					return
				case <-changed:
				}
			}
		}()
	}
	return wg.Wait
}

// follow applies what the engines of the job shared about r since it was
// last followed: a breaker opened elsewhere opens r's here until the same
// instant, when this engine probes too; one closed elsewhere closes r's
// (the route answered, or the operator continued); a cooldown elsewhere
// holds r's calls here. What this engine shared comes back to it, and
// changes nothing: its own breaker is already there.
func (e *Engine) follow(r *route, st RouteState) {
	last := r.seen
	r.seen = st
	switch {
	case st.Open && (!last.Open || st.OpenUntil.After(last.OpenUntil)):
		r.br.TripUntil(st.OpenUntil)
	case !st.Open && last.Open && r.br.State() != breaker.Closed:
		r.br.Reset()
	}
	if st.Cooldown.After(last.Cooldown) && r.gate.cooldown(st.Cooldown) {
		e.emit(Event{Kind: Cooldown, Until: st.Cooldown, Reason: "route " + r.Name + ": a cooldown met by another worker of the job", Route: r.Name})
	}
}

// kickRoutes wakes items waiting for a route to change.
func (e *Engine) kickRoutes() {
	ch := make(chan struct{})
	old := e.routing.changed.Swap(&ch)
	close(*old)
}

// routeBreakerChanged reports a route's breaker moving. It never asks the
// operator: that is the run breaker's, once no route can serve.
func (e *Engine) routeBreakerChanged(r *route, from, to breaker.State) {
	if to == breaker.Closed {
		r.lat.forgetFailures()
	}
	if r.shared != nil {
		switch to {
		case breaker.Open:
			r.shared.Opened(r.br.ReadyAt())
		case breaker.Closed:
			r.shared.Closed()
		}
	}
	r.gate.broadcast()
	e.emit(Event{Kind: RouteChanged, Route: r.Name, State: to})
}

// ItemRoute is one item's routing state.
type ItemRoute struct {
	cur      *route      // the route of the last call
	tried    []bool      // routes left under a fallback, by index
	tries    []store.Try // the routes left, with their errors
	minTier  int         // escalated to
	provider string      // avoided after a content filter
	window   int         // a context window larger than this is needed
	estimate int         // the item's estimated tokens, -1 unknown
	move     bool        // the next call must go to another route
	refused  []bool      // routes whose gate just refused the call (probe out)
	item     *task.Item  // the item, for its cost on each route
	costs    []float64   // its estimated cost per route (NaN: not yet)
	sent     time.Time   // when the call under way went, for its latency
	// callTime sums the item's calls' own time on cur since it chose
	// it: the call_ms of the try it leaves, or of its record.
	callTime time.Duration
	cooledAt []uint64 // each route's cooldowns begun, read before the last pick
}

// excluded says why the item may not use r now, "" when it may.
func (ir *ItemRoute) excluded(r *route) string {
	switch {
	case ir.tried != nil && ir.tried[r.idx]:
		return "tried"
	case ir.refused != nil && ir.refused[r.idx]:
		return "its half-open probe is out"
	}
	if why := ir.unfit(r); why != "" {
		return why
	}
	if ir.move && ir.cur == r {
		return "moved away"
	}
	return ""
}

// unfit says why r cannot take the item whatever the item met on it, ""
// when it can.
func (ir *ItemRoute) unfit(r *route) string {
	switch {
	case r.Tier < ir.minTier:
		return "below the escalated tier"
	case ir.provider != "" && r.Provider == ir.provider:
		return "the provider refused the item"
	case ir.window > 0 && r.ContextWindow > 0 && r.ContextWindow <= ir.window:
		return "context window too small"
	case ir.estimate > 0 && r.ContextWindow > 0 && ir.estimate > r.ContextWindow:
		return fmt.Sprintf("context window of %d tokens, the item needs about %d", r.ContextWindow, ir.estimate)
	}
	return ""
}

// noRouteCanServe reports whether every route the item fits, tried or
// not, has its breaker open.
func (rs *Routes) noRouteCanServe(ir *ItemRoute) bool {
	fits := false
	for _, r := range rs.list {
		if ir.unfit(r) != "" {
			continue
		}
		if r.br.State() != breaker.Open {
			return false
		}
		fits = true
	}
	return fits
}

// pick chooses the route for the item's next call. With none, open says
// whether routes could take the item but every one's breaker is open (the
// run's breaker should trip); otherwise the item fits no route.
func (rs *Routes) pick(ir *ItemRoute) (r *route, why string, open bool) {
	pick, reasons := rs.candidates(ir, true)
	if pick == nil && slices.Contains(ir.refused, true) {
		// A probe's outcome is a wait, never a reason to trip.
		clear(ir.refused)
		pick, reasons = rs.candidates(ir, true)
	}
	if pick == nil && ir.move {
		// Nowhere else to go: stay rather than fail.
		ir.move = false
		pick, reasons = rs.candidates(ir, true)
	}
	if pick == nil && ir.tried != nil {
		// Every route was tried: the fallbacks have done what they could,
		// the item goes on where the strategy says.
		clear(ir.tried)
		pick, reasons = rs.candidates(ir, true)
	}
	if pick != nil {
		return pick, "", false
	}
	if _, all := rs.candidates(ir, false); all == "" {
		return nil, reasons, true
	}
	return nil, reasons, false
}

// candidates picks among the routes the item may use: the lowest tier
// with headroom, by the strategy, else the lowest tier that can serve at
// all. With checkOpen false, routes with an open breaker count as
// usable, and the reasons are empty when one is.
func (rs *Routes) candidates(ir *ItemRoute, checkOpen bool) (*route, string) {
	var reasons []string
	var usable []*route
	for _, r := range rs.list {
		if why := ir.excluded(r); why != "" {
			reasons = append(reasons, r.Name+": "+why)
			continue
		}
		if checkOpen && r.br.State() == breaker.Open {
			reasons = append(reasons, r.Name+": breaker open")
			continue
		}
		usable = append(usable, r)
	}
	if len(usable) == 0 {
		return nil, strings.Join(reasons, "; ")
	}
	if !checkOpen || len(usable) == 1 {
		// One route left is the pick, with headroom or to wait at: the
		// implicit route's every pick.
		return usable[0], ""
	}
	best := -1
	for _, r := range usable {
		if r.headroom() && (best < 0 || r.Tier < best) {
			best = r.Tier
		}
	}
	if best < 0 {
		// No headroom anywhere: wait at the lowest tier's gates.
		best = usable[0].Tier
		for _, r := range usable {
			if r.Tier < best {
				best = r.Tier
			}
		}
		return soonest(usable, best), ""
	}
	return rs.strategy(ir, usable, best, true), ""
}

// headroom reports whether a call to r could go now: no cooldown, a
// request rate limiter (told or learned) with a request's turn free, a
// free call slot.
func (r *route) headroom() bool { return r.readyIn(time.Now()) == 0 }

// readyIn is how long until a call to r could go: the rest of its
// cooldown, or its request limiter's wait for one turn (calls already
// waiting in it included); 0 when one could go now. A route whose call
// slots are all taken is ready in a moment that cannot be told: a
// nanosecond, behind every route ready now.
func (r *route) readyIn(now time.Time) time.Duration {
	if r.gate == nil {
		return 0 // a route without a gate (batch waves) always has room
	}
	if r.gate.cool.State() == breaker.Open {
		return max(r.gate.cool.ReadyAt().Sub(now), time.Nanosecond)
	}
	if l := r.gate.req.Load(); l != nil && l.Limit() != rate.Inf && l.Limit() > 0 {
		if tokens := l.TokensAt(now); tokens < 1 {
			return max(time.Duration((1-tokens)/float64(l.Limit())*float64(time.Second)), time.Nanosecond)
		}
	}
	if int(r.gate.conc.executing.Load()) >= r.gate.conc.Limit() {
		return time.Nanosecond
	}
	return 0
}

// soonest is the route of tier that can take a call first: with no
// headroom anywhere, the item waits where the wait is shortest, so that a
// route with twice the limit takes twice the calls.
func soonest(rs []*route, tier int) *route {
	now := time.Now()
	var best *route
	var wait time.Duration
	for _, r := range rs {
		if r.Tier != tier {
			continue
		}
		if d := r.readyIn(now); best == nil || d < wait {
			best, wait = r, d
		}
	}
	return best
}

// routeEstimate is the item's estimated tokens when a route's context
// window needs it, -1 when none does or no route can tell.
func (rs *Routes) routeEstimate(item task.Item) int {
	for _, r := range rs.list {
		if r.ContextWindow > 0 && r.est != nil {
			return r.est.EstimateTokens(item)
		}
	}
	return -1
}

// passRouted picks the item's route and passes the run's gate and, for a
// named route, the route's: it returns the run's ticket and readies the
// call on the route (r.route.cur, r.rt; the implicit route's ticket is the
// run's). A pick that finds every usable route open trips the run's
// breaker and waits at its gate like every item; an item no route can
// take gets a prepare error that fails it.
func (e *Engine) passRouted(ctx, dctx context.Context, r *itemRun) (t ticket, prep task.Prepared, perr, err error) {
	ir := &r.route
	ir.item = &r.item
	if ir.estimate == 0 {
		ir.estimate = e.routing.routeEstimate(r.item)
	}
	// waitCooling lets the next pick's call wait out its route's
	// cooldown: the route it left for one was the only one.
	waitCooling := false
	for {
		e.readCooled(ir)
		rt, why, open := e.routing.pick(ir)
		if rt == nil && !open {
			return ticket{}, task.Prepared{}, classify.WithClass(&NoRouteError{Why: why}, classify.Item, "no route fits"), nil
		}
		if rt == nil {
			e.tripNoRoute(why)
			// Wait at the run's gate as every item does while it is open;
			// then pick again.
			t, err = e.gate.pass(dctx, 0, true, nil)
			if err != nil {
				return t, prep, nil, err
			}
			t.permit.Release()
			continue
		}
		e.routing.take(ir, rt)
		prep, perr = e.prepare(ctx, rt, r.item)
		t, err = e.gate.pass(dctx, prep.Tokens, prep.Cached || perr != nil, nil)
		if err != nil || prep.Cached || perr != nil || !e.ownGate(rt) {
			return t, prep, perr, err
		}
		// Read before the route's gate: a change after its refusal wakes
		// an item that waits for one (refusedBy).
		changed := *e.routing.changed.Load()
		if r.rt, err = e.passRoute(dctx, ir, rt, prep.Tokens, waitCooling); err == nil {
			return t, prep, perr, nil
		}
		e.gate.abandon(&t)
		t.permit.Release()
		if waitCooling, err = e.refusedBy(dctx, ir, rt, err, changed); err != nil {
			return ticket{}, prep, nil, err
		}
	}
}

// readCooled reads each named route's cooldowns begun, before the pick:
// one that begins between the pick and a read after it would count as
// known to the item, which would then wait it out
// (TestAnItemThatChoseARouteBeforeItsCooldownGoesElsewhere failed 8 times
// in 3,000); gate.coolingSince tells one being set as the count was read.
func (e *Engine) readCooled(ir *ItemRoute) {
	ir.cooledAt = ir.cooledAt[:0]
	if !e.ownGate(e.routing.list[0]) {
		return
	}
	for _, r := range e.routing.list {
		ir.cooledAt = append(ir.cooledAt, r.gate.cooled.Load())
	}
}

// passRoute passes a named route's gate, for a call the run's gate let
// through. A cooldown the route begins after the item chose it (while the
// item waits at the run's gate or for the route's limiter) sends the item
// back to choose (errRouteCooling): waiting there would hold one of the
// run's call slots for the whole cooldown, though another route may be
// free sooner. One it chose knowing of the cooldown, or with waitCooling,
// it waits out.
func (e *Engine) passRoute(dctx context.Context, ir *ItemRoute, rt *route, tokens int, waitCooling bool) (ticket, error) {
	chosenAt := ir.cooledAt[rt.idx]
	var refuseCooling func() bool
	if !waitCooling {
		refuseCooling = func() bool { return rt.gate.coolingSince(chosenAt) }
	}
	t, err := rt.gate.pass(dctx, tokens, false, refuseCooling)
	if err != nil {
		return t, err
	}
	rt.calls.Add(1)
	clear(ir.refused)
	if e.cfg.Routing == RoutingLatency {
		ir.sent = time.Now()
	}
	return t, nil
}

// refusedBy takes a route gate's refusal of the item's call, err, before
// the item picks again: the route is left out of the next pick while
// another may serve. waitCooling says the next call may wait out its
// route's cooldown (the one that began cooling was the only route); a
// non-nil error is one that was not a refusal, or the run's end while
// the item waited for a route to change.
func (e *Engine) refusedBy(dctx context.Context, ir *ItemRoute, rt *route, err error, changed chan struct{}) (waitCooling bool, _ error) {
	if ir.refused == nil {
		ir.refused = make([]bool, len(e.routing.list))
	}
	if errors.Is(err, errRouteCooling) {
		ir.refused[rt.idx] = true
		if other, _ := e.routing.candidates(ir, true); other == nil {
			ir.refused[rt.idx] = false
			return true, nil
		}
		return false, nil
	}
	if !errors.Is(err, errRouteRefused) {
		return false, err
	}
	// The route's breaker opened (the next pick skips it), or its
	// half-open probe is out: another route takes the call, or, with
	// none, the item waits for some route to change.
	rt.refusals.Add(1)
	ir.refused[rt.idx] = true
	if other, _ := e.routing.candidates(ir, true); other == nil && rt.br.State() != breaker.Open {
		clear(ir.refused)
		select {
		case <-changed:
		case <-dctx.Done():
			return false, context.Cause(dctx)
		}
	}
	return false, nil
}

// tripNoRoute opens the run's breaker because no route can serve: the
// operator is asked (breaker.on_trip) now, and only now.
func (e *Engine) tripNoRoute(why string) {
	e.mu.Lock()
	e.routing.noRouteReason = "no route can serve: " + why
	e.mu.Unlock()
	e.br.Trip()
}

// settle settles the gates' side of the call the item made (or, cached
// or unprepared, did not make): the route's gate learns from it — its
// breaker permit, a 429's judgement and cooldown, adaptive concurrency —
// and the run's, when the route has a gate of its own, only counts it. A
// call that worked is settled before its output is judged, one that
// failed once the per-item core decided (next).
func (e *Engine) settle(r *itemRun, t *ticket, worked bool, next Next) {
	rt := r.route.cur
	own := r.rt != ticket{}
	ct := t // the ticket of the route's gate
	if own {
		ct = &r.rt
	}
	o, cooled := outcomeNeutral, false
	switch {
	case worked:
		o = outcomeSuccess
	case limitedBy429(next):
		o, cooled = e.rateLimited(rt, next.Err, ct.call)
	}
	if !own {
		e.endCall(t, o, cooled)
		return
	}
	if e.cfg.Routing == RoutingLatency {
		e.observeLatency(r, worked, next)
	}
	switch {
	case worked:
		r.rt.permit.Success()
	case !limitedBy429(next) && next.Step != StepPending && routeFault(next.Decision.Class):
		r.rt.permit.Failure()
		rt.faults.Add(1)
	default:
		r.rt.permit.Release()
	}
	rt.gate.callEnded(&r.rt, o, cooled)
	r.rt = ticket{}
	if !worked {
		o = outcomeNeutral
	}
	e.endCall(t, o, false)
}

// limitedBy429 reports whether the failed call that led to next was a
// 429 to retry: the shared limit or a sporadic refusal, never a fault of
// the route.
func limitedBy429(next Next) bool {
	return next.Step != StepPending && next.Decision.Class == classify.Retryable && isRateLimit(next.Err)
}

// routeFault reports whether a failure of class c says the route is
// broken: an outage (retryable) or a setup the route cannot serve with
// (fatal: a wrong key, an unknown model).
func routeFault(c classify.Class) bool { return c == classify.Retryable || c == classify.Fatal }

// rateLimited judges a 429 met by call c on route rt. When the route's
// latest rate-limit headers showed room for more calls than are under way,
// it is sporadic: only its own item waits (its retry delay honours the
// hint), and it says nothing about capacity. Otherwise it is the shared
// limit speaking: a capacity signal for adaptive concurrency and, with a
// retry hint, a cooldown that pauses every call to the route until the
// hint expires (docs/concurrency.md), so the herd does not come back at
// once; the other engines of the job hold theirs too.
func (e *Engine) rateLimited(rt *route, err error, c callStart) (o outcome, cooled bool) {
	if room, known := rt.gate.quotaRoomFor(c, int(rt.gate.conc.executing.Load())); known && room {
		return outcomeNeutral, false
	}
	until, ok := e.hintUntil(err)
	if !ok {
		return outcomeCapacity, false
	}
	e.cooldownOn(rt, until, "rate limited: retry hint")
	if rt.coolShared != nil {
		rt.coolShared.Cooldown(until)
	}
	return outcomeCapacity, true
}

// cooldownOn begins a cooldown of rt's gate until the given instant, and
// reports it as Cooldown does, naming the route if it has a name.
func (e *Engine) cooldownOn(rt *route, until time.Time, reason string) {
	if !rt.gate.cooldown(until) {
		return
	}
	if rt.Name != "" {
		reason = "route " + rt.Name + ": " + reason
	}
	e.emit(Event{Kind: Cooldown, Until: until, Reason: reason, Route: rt.Name})
}

// hintUntil is when a 429's retry hint, capped by retry.max_hint, ends;
// false without a hint or with hints off.
func (e *Engine) hintUntil(err error) (time.Time, bool) {
	if h, ok := errors.AsType[hinterError](err); ok && h.RetryAfter() > 0 && e.cfg.Retry.MaxHint >= 0 {
		return time.Now().Add(min(h.RetryAfter(), e.maxHint())), true
	}
	return time.Time{}, false
}

// observe is ObserveQuota for the headers of the answer to call c on
// route rt, which its gate learns from (gate.learnFrom dates them by c). A
// quota the server said is exhausted (a retry hint beside counts showing
// no room) holds the other engines' calls to the route too.
func (e *Engine) observe(rt *route, q Quota, c callStart) {
	q, c = e.heard(q, c)
	until, reason := rt.gate.learnFrom(q, int(rt.gate.conc.executing.Load()), c)
	if until.IsZero() {
		return
	}
	e.cooldownOn(rt, until, reason)
	if rt.coolShared != nil && q.RetryAfter > 0 && !q.showsRoom() {
		rt.coolShared.Cooldown(until)
	}
}

// After applies the fallbacks the spec turned on to the decision after a
// call on the item's route, and returns the decision to act on: a move to
// another route turns a retry into an immediate one, and a failure into a
// retry there (the item's retry streak starts afresh: s.Retrier is
// replaced). The engine calls it after every routed call and batch waves
// after every answer, so that one rule moves an item in every mode.
func (rs *Routes) After(ir *ItemRoute, s *State, item *task.Item, next Next) Next {
	fb := rs.fallbacks
	if ir.cur == nil || len(rs.list) < 2 {
		return next
	}
	kind := fb.After(next)
	switch {
	case next.Step == StepRetry && fb.Outage && !isRateLimit(next.Err):
		if !rs.leave(ir, next, false, "") {
			return next
		}
		next.Delay = 0
		return next
	case next.Step != StepFail:
		return next
	case kind == FallbackContextWindow:
		ir.window = max(ir.window, ir.cur.ContextWindow, 1)
	case kind == FallbackContentFilter:
		ir.provider = ir.cur.Provider
	case kind == FallbackEscalate:
		if !rs.escalate(ir, s, item, next) {
			return next
		}
		return Next{Step: StepReask, Feedback: item.Feedback, Err: next.Err, Cause: next.Cause, Decision: next.Decision, Attempt: s.Heals}
	case routeFault(next.Decision.Class) && fb.Outage:
	default:
		return next
	}
	if !rs.leave(ir, next, true, kind) {
		return next
	}
	s.Retrier = rs.retry.Start()
	return Next{Step: StepRetry, Err: next.Err, Decision: next.Decision, Attempt: 1}
}

// leave marks the item's route as left with next's error, if another
// route may take the item; untried says only a route not tried yet will
// do, unless no route can serve the item now: a streak spent on an outage
// of every route is the run breaker's to decide (the next pick trips it),
// not the item's failure. kind is the fallback that moved the item, ""
// for an outage.
func (rs *Routes) leave(ir *ItemRoute, next Next, untried bool, kind string) bool {
	if ir.tried == nil {
		ir.tried = make([]bool, len(rs.list))
	}
	ir.tried[ir.cur.idx] = true
	if other, _ := rs.candidates(ir, false); other == nil {
		ir.tried[ir.cur.idx] = false
		if untried && !rs.noRouteCanServe(ir) {
			return false
		}
		ir.move = true
	}
	ir.tries = append(ir.tries, store.Try{Route: ir.cur.Name, Model: ir.cur.Model, Error: next.Err.Error(), Class: next.Decision.Class, Fallback: kind, CallMS: ir.takeCallMS()})
	return true
}

// escalate moves an item whose heal budget is spent to the next tier,
// re-asking there with the feedback on its last output and a fresh heal
// budget. It reports false when there is no higher tier.
func (rs *Routes) escalate(ir *ItemRoute, s *State, item *task.Item, next Next) bool {
	up := -1
	for _, rt := range rs.list {
		if rt.Tier > ir.cur.Tier && (up < 0 || rt.Tier < up) {
			up = rt.Tier
		}
	}
	if up < 0 {
		return false
	}
	ir.minTier = up
	ir.tries = append(ir.tries, store.Try{Route: ir.cur.Name, Model: ir.cur.Model, Error: next.Err.Error(), Class: next.Decision.Class, Fallback: FallbackEscalate, CallMS: ir.takeCallMS()})
	s.Escalate(item, next.Cause, rs.retry.Start())
	return true
}

// Escalate readies s and its item for a stronger tier after its heal
// budget was spent on cause: one more re-ask, with the feedback on its
// last output, a fresh heal budget and the retry streak fresh.
func (s *State) Escalate(item *task.Item, cause error, fresh *retry.Retrier) {
	s.Heals++
	prev := ""
	if item.Feedback != nil {
		prev = item.Feedback.PreviousOutput
	}
	if len(s.LastOutput) > 0 {
		prev = heal.OutputText(s.LastOutput)
	}
	item.Feedback = &task.Feedback{PreviousOutput: prev, Message: cause.Error(), Attempt: s.Heals}
	s.Tracker = nil
	s.Retrier = fresh
}
