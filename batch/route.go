package batch

import (
	"errors"
	"slices"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
)

// Routes in batch mode (docs/routes.md, docs/batch.md): a routed job's
// waves go to the first route, in tier order, whose breaker is not open.
// A route's breaker opens when one of its waves trips it (a share of its
// requests failing with one error, as Config.TripShare says) or when it
// refuses to create a batch: its items go to the next route's batches,
// and the operator is asked only when no route is left. With
// Config.Fallback (fallbacks.outage) an item whose request failed on a
// route as an outage (a retryable error other than a 429, an expired or
// unprocessed request, a fatal error) moves at once, its record's tries
// naming the route and the error; its retries spent on one route, it
// starts a fresh streak on a route it has not tried, or, with none left,
// fails, unless the wave tripped the run's breaker: no route can serve,
// and the item awaits the operator's decision with the items the trip
// holds. The online tail runs the engine over every route, the routes an
// item left counting as tried.

// Route is one deployment a routed batch job may send its waves to.
type Route struct {
	// Name, Provider and Model name the route in records and the ledger.
	Name, Provider, Model string
	// Client is the route's batch API.
	Client Client
	// Codec builds the route's requests and reads its answers.
	Codec Codec
}

// routeIndex returns the index of the route named name; 0 (the first)
// for "" or a name the job no longer has.
func (r *Runner) routeIndex(name string) int {
	for i, rt := range r.routes {
		if rt.Name == name {
			return i
		}
	}
	return 0
}

// routed reports whether the job names its routes (Config.Routes).
func (r *Runner) routed() bool { return r.routes[0].Name != "" }

// isOpen reports whether route i's breaker is open.
func (r *Runner) isOpen(i int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open[i]
}

// left reports whether f left route i (it is in f's tries).
func (r *Runner) left(f *flight, i int) bool {
	name := r.routes[i].Name
	return slices.ContainsFunc(f.Tries, func(t store.Try) bool { return t.Route == name })
}

// nextRoute is the route f goes to from its own: the first, in tier
// order, other than f's, whose breaker is not open, preferring one f has
// not left; with untried, only such a one. -1 when there is none.
func (r *Runner) nextRoute(f *flight, untried bool) int {
	other := -1
	for i := range r.routes {
		if i == f.route || r.isOpen(i) {
			continue
		}
		if !r.left(f, i) {
			return i
		}
		if other < 0 && !untried {
			other = i
		}
	}
	return other
}

// routeFor moves f off a route whose breaker opened, before its request
// is built: to a route it has not left, else any route not open. Nothing
// is added to its tries: the breaker, not the item's answer, moved it.
// With every route open, it stays (the run's trip check asks the
// operator).
func (r *Runner) routeFor(f *flight) {
	if !r.isOpen(f.route) {
		return
	}
	if i := r.nextRoute(f, false); i >= 0 {
		f.route = i
	}
}

// openRoute opens route i's breaker for the rest of the run, if another
// route may take its items; it reports whether it did. why is logged.
func (r *Runner) openRoute(i int, why string) bool {
	if len(r.routes) < 2 {
		return false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.open[i] {
		return true
	}
	n := 0
	for _, o := range r.open {
		if !o {
			n++
		}
	}
	if n < 2 {
		return false
	}
	r.open[i] = true
	r.log.Warn("route breaker open: its items go to the next route's batches", "route", r.routes[i].Name, "why", why)
	return true
}

// leave moves f off its route with err, if another route may take it
// (untried: only a route f has not left yet, unless no route can serve:
// a streak spent in the wave that tripped the run's breaker is the
// operator's to decide, as for the items the trip holds, not f's
// failure; f then goes to any route not open, else stays): the route and
// err join f's tries. It reports whether f left.
func (r *Runner) leave(f *flight, err error, class classify.Class, untried bool) bool {
	to := r.nextRoute(f, untried)
	if to < 0 && untried && r.outage {
		if to = r.nextRoute(f, false); to < 0 {
			to = f.route
		}
	}
	if to < 0 {
		return false
	}
	from := r.routes[f.route]
	f.Tries = append(f.Tries, store.Try{Route: from.Name, Model: from.Model, Error: err.Error(), Class: class})
	f.route = to
	return true
}

// moveAfter applies fallbacks.outage to the per-item core's decision on
// an answer from f's route, as the engine does online: a retry other than
// a 429's moves to another route, due at once; a failure that says the
// route is broken (retryable with its retries spent, fatal) starts a
// fresh streak on a route f has not tried. Other decisions stand.
func (r *Runner) moveAfter(f *flight, next engine.Next) engine.Next {
	if len(r.routes) < 2 {
		return next
	}
	if kind := r.cfg.Fallbacks.After(next); kind != "" && r.cfg.Online != nil {
		return r.moveOnline(f, next, kind)
	}
	if !r.cfg.Fallbacks.Outage {
		return next
	}
	switch {
	case next.Step == engine.StepRetry && !rateLimited(next.Err):
		if r.leave(f, next.Err, next.Decision.Class, false) {
			next.Delay = 0
		}
	case next.Step == engine.StepFail && (next.Decision.Class == classify.Retryable || next.Decision.Class == classify.Fatal):
		if r.leave(f, next.Err, next.Decision.Class, true) {
			f.Retrier = r.cfg.Retry.Continue(time.Now(), 0)
			f.RetrySince = time.Now().UTC()
			return engine.Next{Step: engine.StepRetry, Err: next.Err, Decision: next.Decision, Attempt: 1}
		}
	}
	return next
}

// moveOnline sends f online, where the engine picks a route of the kind
// the fallback wants (a larger context window, another provider, a
// stronger tier) over every route, none of which the waves can pick: the
// route joins its tries, and an escalation readies its re-ask there.
func (r *Runner) moveOnline(f *flight, next engine.Next, kind string) engine.Next {
	from := r.routes[f.route]
	f.Tries = append(f.Tries, store.Try{Route: from.Name, Model: from.Model, Error: next.Err.Error(), Class: next.Decision.Class})
	f.left = &engine.Left{Route: from.Name, Kind: kind}
	now := time.Now()
	fresh := r.cfg.Retry.Continue(now, 0)
	if kind == engine.FallbackEscalate {
		f.Escalate(&f.item, next.Cause, fresh)
		f.Feedback = f.item.Feedback
	} else {
		f.Retrier = fresh
	}
	f.RetrySince = now.UTC()
	return engine.Next{Step: engine.StepRetry, Err: next.Err, Decision: next.Decision, Attempt: 1}
}

// movedOnline returns the items of w that a fallback sends online.
func movedOnline(w *waveRun) map[int]*flight {
	var moved map[int]*flight
	for idx, f := range w.items {
		if f.left != nil {
			if moved == nil {
				moved = map[int]*flight{}
			}
			moved[idx] = f
		}
	}
	return moved
}

// rateLimited reports a 429: a capacity signal, which moves nothing.
func rateLimited(err error) bool {
	var sc classify.StatusCoder
	return errors.As(err, &sc) && sc.HTTPStatus() == 429
}
