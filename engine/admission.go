package engine

import (
	"context"
	"time"

	"golang.org/x/time/rate"

	"github.com/tenaxhq/tenax/breaker"
)

// admission is one call on its way through the gate: what it has taken so
// far and the pace it holds. Its stages run in the gate's one order; each
// either lets the call on to the next or, when it must wait, gives back
// the permits taken this round, waits, and has the call start over at the
// pause (admission.run).
type admission struct {
	g             *gate
	ctx           context.Context
	tokens        int
	refuseCooling func() bool

	t       ticket
	p, c    breaker.Permit // the run breaker's and the cooldown's, this round
	changed chan struct{}  // the gate's broadcast, read as the round began
	err     error          // why the call stops; set by the stage that stopped it

	// The pace a call took holds for the limiters it was taken from and
	// until a cooldown begins: a limiter learned from the headers while
	// the call waited, or a cooldown that came and went, outdates it.
	paced    bool
	holds    bool // a pace counted in g.pacing
	spaced   bool // the pace was a turn waited in the request limiter
	pacedReq *rate.Limiter
	pacedTok *rate.Limiter
	pacedIn  uint64 // the cooldowns begun when the pace was taken
	shared   bool   // the shared limiter's turn is taken
}

// pass waits until a call estimated at tokens may go, and returns its
// ticket. A cached call makes no request: it only needs the pause and the
// run's breaker. A cooldown met on the way is refused (errRouteCooling)
// instead of waited out when refuseCooling, if set, says so: a route's
// gate whose item chose it before that cooldown began, and would rather
// choose again. It returns ctx's cause when the run stops first,
// *BudgetError when a budget is reached and *ledgerError when a shared
// ledger fails.
//
// The stages run in the gate's one order (see gate); a stage that waits
// has the call start over at the pause, holding only its budget and pace.
func (g *gate) pass(ctx context.Context, tokens int, cached bool, refuseCooling func() bool) (ticket, error) {
	a := admission{g: g, ctx: ctx, tokens: tokens, refuseCooling: refuseCooling}
	if cached {
		for !(a.pause() && a.breaker()) {
			if a.err != nil {
				return ticket{}, a.err
			}
		}
		return ticket{permit: a.p}, nil
	}
	// On every return: a started call is counted in the limiter's starts
	// by then, one that gives up holds no pace.
	defer a.unhold()
	if err := a.budget(); err != nil {
		return ticket{}, err
	}
	for !(a.pause() && a.breaker() && a.cooldown() && a.limiters() && a.sharedLimiters() && a.slot()) {
		if a.err != nil {
			g.abandon(&a.t)
			return ticket{}, a.err
		}
	}
	return a.t, nil
}

// budget reserves the call's estimated tokens against budget.max_tokens
// (gate.reserve), waiting only for calls under way to settle. It comes
// first and once: a spent budget stops the run before the call waits on
// anything else, and the hold is kept across every wait that follows, so
// calls waiting at the gate count against the budget they will spend.
func (a *admission) budget() error {
	held, err := a.g.reserve(a.ctx, a.tokens)
	a.t.tokens = held
	return err
}

// pause waits while the run is paused (a tripped breaker or a check-in
// awaiting the operator, or the operator's own pause: gate.closed) or
// another engine's breaker holds every call.
// It comes before every permit: a paused call takes nothing another
// needs. A call that waited here forgets its pace: the pace of a moment
// that passed is stale, and a burst of items released together must be
// paced again.
func (a *admission) pause() bool {
	g := a.g
	// Read before the state it waits on: a change after it closes it.
	a.changed = *g.changed.Load()
	if g.sharedBr == nil && !g.closed() {
		return true // the open gate's path, kept small enough to inline
	}
	return a.pauseShared()
}

// pauseShared is pause with another engine's breaker to ask, or a pause
// to wait out.
func (a *admission) pauseShared() bool {
	g := a.g
	var held bool
	var sharedChanged <-chan struct{}
	if g.sharedBr != nil {
		held, sharedChanged = g.sharedBr.Hold()
	}
	if !g.closed() && !held {
		return true
	}
	if !held {
		sharedChanged = nil
	}
	select {
	case <-a.ctx.Done():
		a.err = context.Cause(a.ctx)
		return false
	case <-a.changed:
	case <-sharedChanged:
	}
	a.forgetPace()
	return false
}

// breaker takes the run breaker's permit, waiting while it is open (until
// it turns half-open, or a state change) or half-open with its probes
// out. A route's gate (gate.refuse) refuses instead: its item would rather
// go to another route. It comes right after the pause, which an open
// breaker usually brings, and before the cooldown and limiters, so that
// no call spends a pace on a breaker that will not let it through.
func (a *admission) breaker() bool {
	p, err := a.g.br.Allow()
	if err == nil {
		a.p = p
		return true
	}
	return a.waitBreaker()
}

// waitBreaker is breaker when the breaker gave no permit.
func (a *admission) waitBreaker() bool {
	g := a.g
	if g.refuse {
		a.err = errRouteRefused
		return false
	}
	var timer <-chan time.Time
	if d := time.Until(g.br.ReadyAt()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	// Half-open with its probes out: a probe's outcome changes the state,
	// or its release broadcasts.
	select {
	case <-a.ctx.Done():
		a.err = context.Cause(a.ctx)
		return false
	case <-a.changed:
	case <-timer:
	}
	a.forgetPace()
	return false
}

// cooldown takes the provider cooldown's permit: a second breaker, opened
// until the time a server named (its quota exhausted), that then lets one
// probe call through. Waiting, it holds no run-breaker permit: a probe of
// each held by two calls that each wait for the other's would wait
// forever. It comes before the limiters, which a cooldown outdates
// (g.cooled), so that a pace is never taken for a moment the provider
// refuses.
func (a *admission) cooldown() bool {
	c, err := a.g.cool.Allow()
	if err == nil {
		a.c = c
		return true
	}
	return a.waitCooldown()
}

// waitCooldown is cooldown when the cooldown gave no permit.
func (a *admission) waitCooldown() bool {
	a.drop()
	if a.refuseCooling != nil && a.refuseCooling() {
		a.err = errRouteCooling
		return false
	}
	a.err = a.g.waitCooldown(a.ctx)
	return false
}

// limiters waits for the call's turn in the request and token rate
// limiters, configured or learned from the provider's rate-limit headers,
// unless the pace it holds is still good (stale). Limiter tokens are
// taken only by calls that may go now, so it comes after the pause, the
// breaker and the cooldown, and holds none of their permits while it
// waits; and before the slot, so that a call waiting for its pace holds
// no slot.
func (a *admission) limiters() bool {
	if !a.stale() {
		return true
	}
	return a.waitLimiters()
}

// waitLimiters is limiters for a call that needs a new pace.
func (a *admission) waitLimiters() bool {
	g := a.g
	a.drop()
	a.unhold()
	a.pacedReq, a.pacedTok, a.pacedIn = g.req.Load(), g.tok.Load(), g.cooled.Load()
	holding, turn, err := g.waitLimiters(a.ctx, a.pacedReq, a.pacedTok, a.tokens)
	if err != nil {
		a.err = err
		return false
	}
	a.paced, a.holds, a.spaced = true, holding, turn
	return false
}

// sharedLimiters waits for the call's turn in the rate limits shared with
// other engines (Config.SharedLimiter), once per pace: after this
// engine's own limiters, so that a call this engine would hold back
// spends none of what the others share.
func (a *admission) sharedLimiters() bool {
	if a.g.sharedLim == nil || a.shared {
		return true
	}
	return a.waitSharedLimiters()
}

// waitSharedLimiters is sharedLimiters for a call without its turn.
func (a *admission) waitSharedLimiters() bool {
	g := a.g
	a.drop()
	if err := g.sharedLim.Wait(a.ctx, a.tokens); err != nil {
		if a.ctx.Err() != nil {
			a.err = context.Cause(a.ctx)
		} else {
			a.err = &ledgerError{"the shared rate limits", err}
		}
		return false
	}
	a.shared = true
	return false
}

// slot takes a call slot, the concurrency limit (adaptive or fixed), and
// with it the ticket. It comes last, so that calls waiting on a limiter
// hold none: a full set of slots then means concurrency is what binds,
// the signal for adaptive concurrency to grow. It waits for a slot
// holding no permit, and takes the permits again holding the slot: a
// call waiting for a slot with the one probe of a half-open breaker or
// cooldown, while the calls holding the slots wait for that probe's
// outcome, waits forever.
func (a *admission) slot() bool {
	g := a.g
	full, ok := g.conc.tryAcquire()
	if !ok {
		a.drop()
		if err := g.conc.acquire(a.ctx); err != nil {
			a.err = err
			return false
		}
		full = true
		// The run may have paused, or a cooldown begun, meanwhile.
		if a.p, a.c, ok = g.tryPermits(); !ok {
			g.conc.release()
			return false
		}
		if a.stale() {
			// A cooldown came and went, or a limiter was learned,
			// while this call waited for its slot.
			a.drop()
			g.conc.release()
			return false
		}
	}
	a.t.slot = true
	a.t.permit, a.t.cool = a.p, a.c
	a.t.call = g.conc.started(full)
	a.t.call.spaced = a.spaced
	return true
}

// stale reports whether the call needs a new pace: it holds none, or the
// limiters it was taken from were replaced, or a cooldown began since.
func (a *admission) stale() bool {
	g := a.g
	req, tok := g.req.Load(), g.tok.Load()
	if req == nil && (tok == nil || a.tokens <= 0) {
		return false
	}
	return !a.paced || req != a.pacedReq || tok != a.pacedTok || g.cooled.Load() != a.pacedIn
}

// drop gives back the permits taken this round, before a wait.
func (a *admission) drop() {
	a.g.release(a.p)
	a.g.release(a.c)
	a.p, a.c = breaker.Permit{}, breaker.Permit{}
}

// forgetPace drops the pace the call holds, after a wait at the pause or
// the breaker made it stale.
func (a *admission) forgetPace() {
	a.paced, a.shared = false, false
	a.unhold()
}

// unhold stops counting the call's pace in g.pacing.
func (a *admission) unhold() {
	if a.holds {
		a.g.pacing.Add(-1)
		a.holds = false
	}
}
