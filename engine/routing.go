package engine

import (
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// The strategies that choose among one tier's routes with headroom
// (docs/routes.md, "Routing strategies"). Each sees only routes that could
// take a call now, so a cheap or fast route that is cooling down, out of
// call slots or past its rate limit overflows to the next.

// CostEstimator is implemented by route tasks that can price a call before
// making it, for RoutingCost; task/llm's does, from the route's price and
// the item's estimated tokens.
type CostEstimator interface {
	// EstimateCost is what a call for item may cost in US dollars; known
	// is false when the route's model has no price.
	EstimateCost(item task.Item) (usd float64, known bool)
}

const (
	// latencyAlpha is the weight of a new call in a route's averages: the
	// last ten or so calls make the estimate, so a route that slows down
	// loses its place within a few calls.
	latencyAlpha = 0.25
	// exploreEvery is how long a route with headroom may go unpicked under
	// RoutingLatency before it gets the next call anyway: its estimate is
	// only as recent as its last call, and a route that was slow, or down,
	// must be seen again to be found fast.
	exploreEvery = 5 * time.Second
	// latencyMemory is how fast a route's estimate ages: a call made this
	// long after the previous one weighs 63% against the estimate, one
	// made five seconds after it 92%, so a route seen only by exploration
	// is judged by what it does now, not by what it did minutes ago.
	latencyMemory = 2 * time.Second
	// minAnswered keeps a route that answered nothing lately from an
	// infinite score: it ranks last, and exploration still reaches it.
	minAnswered = 0.02
)

// latency is a route's recent call time, for RoutingLatency.
type latency struct {
	mu sync.Mutex
	// dur is the average duration of the route's calls in seconds,
	// answered or failed; answered the average share that the route
	// answered (a failure of the route counts 0, any answer 1); n counts
	// the calls seen.
	dur, answered float64
	n             int
	last          time.Time // the last call's end
	// picked is when the strategy last chose the route, unix nanoseconds.
	picked atomic.Int64
}

// observe adds one call of duration d; ok says the route answered it.
func (l *latency) observe(d time.Duration, ok bool) {
	a := 0.0
	if ok {
		a = 1
	}
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		l.dur, l.answered = d.Seconds(), a
	} else {
		w := max(latencyAlpha, 1-math.Exp(-now.Sub(l.last).Seconds()/latencyMemory.Seconds()))
		l.dur += w * (d.Seconds() - l.dur)
		l.answered += w * (a - l.answered)
	}
	l.n++
	l.last = now
}

// forgetFailures is a route's recovery: its breaker closed again after an
// outage, so the failures that opened it no longer say what the route
// is worth. Its call time is kept.
func (l *latency) forgetFailures() {
	l.mu.Lock()
	l.answered = 1
	l.mu.Unlock()
}

// score is the route's expected time per answer in seconds: its average
// call time over the share of calls it answers, so a route that fails
// fast is not taken for a fast one. 0 for a route never called: it is
// tried first.
func (l *latency) score() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n == 0 {
		return 0
	}
	return l.dur / max(l.answered, minAnswered)
}

// strategy picks one of rs in tier (with headroom, when room is set) by
// the run's Routing, for the item ir.
func (rs *Routes) strategy(ir *ItemRoute, from []*route, tier int, room bool) *route {
	var in []*route
	for _, r := range from {
		if r.Tier == tier && (!room || r.headroom()) {
			in = append(in, r)
		}
	}
	if len(in) == 0 {
		// The headroom the caller read a moment ago is gone (another
		// item took the slot, a cooldown began): wait at the tier's
		// soonest route rather than pick from nothing.
		return soonest(from, tier)
	}
	switch rs.routing {
	case RoutingLeastLoaded:
		return leastLoaded(in)
	case RoutingCost:
		return rs.cheapest(ir, in)
	case RoutingLatency:
		return fastest(in, time.Now())
	}
	return weighted(in)
}

// weighted picks at random in proportion to the routes' weights.
func weighted(in []*route) *route {
	total := 0
	for _, r := range in {
		total += r.Weight
	}
	n := rand.IntN(total)
	for _, r := range in {
		if n < r.Weight {
			return r
		}
		n -= r.Weight
	}
	return in[len(in)-1]
}

// leastLoaded picks the route with the fewest calls under way per unit of
// weight, the first of equals.
func leastLoaded(in []*route) *route {
	best := in[0]
	for _, r := range in[1:] {
		if lighter(r, best) {
			best = r
		}
	}
	return best
}

// lighter reports whether a has fewer calls under way per unit of weight
// than b: a/wa < b/wb without division.
func lighter(a, b *route) bool {
	return a.executing()*int64(b.Weight) < b.executing()*int64(a.Weight)
}

// cheapest picks the route where the item's call costs least, by the
// route's price and the item's estimated tokens; a route whose price is
// unknown ranks after every priced one. Equal costs (two deployments of
// one model) go to the least loaded.
func (rs *Routes) cheapest(ir *ItemRoute, in []*route) *route {
	best, bestCost := in[0], rs.routeCost(ir, in[0])
	for _, r := range in[1:] {
		c := rs.routeCost(ir, r)
		if c < bestCost || c == bestCost && lighter(r, best) {
			best, bestCost = r, c
		}
	}
	return best
}

// routeCost is the item's estimated cost on r, +Inf when r cannot price
// it. It is estimated once per item and route: a re-ask's feedback
// changes the prompt, not which route is cheaper.
func (rs *Routes) routeCost(ir *ItemRoute, r *route) float64 {
	if ir.costs == nil {
		ir.costs = make([]float64, len(rs.list))
		for i := range ir.costs {
			ir.costs[i] = math.NaN()
		}
	}
	if c := ir.costs[r.idx]; !math.IsNaN(c) {
		return c
	}
	c := math.Inf(1)
	if ce, ok := r.Task.(CostEstimator); ok && ir.item != nil {
		if usd, known := ce.EstimateCost(*ir.item); known {
			c = usd
		}
	}
	ir.costs[r.idx] = c
	return c
}

// fastest picks the route with the lowest expected time per answer. A
// route left unpicked for exploreEvery takes the call instead, one call
// per period, so that a route that was slow or down is measured again;
// equal scores (routes not called yet) go to the least loaded.
func fastest(in []*route, now time.Time) *route {
	for _, r := range in {
		last := r.lat.picked.Load()
		if now.UnixNano()-last >= int64(exploreEvery) && r.lat.picked.CompareAndSwap(last, now.UnixNano()) {
			return r
		}
	}
	best, bestScore := in[0], in[0].lat.score()
	for _, r := range in[1:] {
		s := r.lat.score()
		if s < bestScore || s == bestScore && lighter(r, best) {
			best, bestScore = r, s
		}
	}
	best.lat.picked.Store(now.UnixNano())
	return best
}

// observeLatency adds the item's call to its route's latency: an answer
// (whatever it is worth) or a failure of the route. A 429 is neither: it
// says the route is busy, which its gate handles, not how fast it is; nor
// is a call the run's stop cut short.
func (e *Engine) observeLatency(r *itemRun, worked bool, next Next) {
	ir := &r.route
	if ir.sent.IsZero() || next.Step == StepPending || !worked && next.Decision.Class == classify.Retryable && isRateLimit(next.Err) {
		return
	}
	ir.cur.lat.observe(time.Since(ir.sent), worked || !routeFault(next.Decision.Class))
	ir.sent = time.Time{}
}
