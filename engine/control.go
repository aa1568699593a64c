package engine

import (
	"context"
	"fmt"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/store"
)

// breakerChanged is the run breaker's listener: a trip pauses the gate and
// asks the control loop to handle it (except on_trip wait, where the
// breaker's own timeout and probes are the whole story).
func (e *Engine) breakerChanged(from, to breaker.State, c breaker.Counts) {
	if from == breaker.Closed && to == breaker.Open {
		e.n.Tripped()
	}
	trip := to == breaker.Open && e.cfg.OnTrip != TripWait
	if trip {
		reason := fmt.Sprintf("%d consecutive failures", c.ConsecutiveFailures)
		if c.ConsecutiveFailures < max(e.cfg.Breaker.Threshold, 1) && c.WindowSize > 0 {
			reason = fmt.Sprintf("%d failures in the last %d outcomes", c.WindowFailures, c.WindowSize)
		}
		e.mu.Lock()
		if e.routing.noRouteReason != "" {
			reason, e.routing.noRouteReason = e.routing.noRouteReason, ""
		}
		e.seen.tripReason = reason
		e.mu.Unlock()
		e.heldOpen.Store(true)
		e.gate.pause()
	} else {
		e.gate.broadcast()
	}
	e.emit(Event{Kind: BreakerChanged, State: to})
	if trip {
		e.requestControl(func() { e.want.trip = true })
	}
}

// controlLoop handles what needs the operator: trips and check-ins. It runs
// beside the dispatcher so that a trip is handled even while the
// dispatcher waits.
func (e *Engine) controlLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.want.kick:
		}
		// Drain: calls in flight finish and are recorded before anyone is
		// asked anything.
		if !e.waitIdle(ctx) {
			return
		}
		e.mu.Lock()
		trip, checkin := e.want.trip, e.want.checkin
		e.want.trip, e.want.checkin = false, false
		e.mu.Unlock()
		if e.exhausted.Load() && e.n.inFlight.Load() == 0 {
			// Every item has its outcome: there is nothing left to decide,
			// and a stop now would call a finished run aborted.
			e.gate.unpause()
			continue
		}
		if trip {
			e.handleTrip(ctx)
		}
		if checkin && !e.stopped() {
			e.handleCheckin(ctx)
		}
	}
}

func (e *Engine) stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.stopCause != nil
}

// requestControl records a request for the control loop and wakes it,
// without ever blocking: requests made while it is busy coalesce.
func (e *Engine) requestControl(set func()) {
	e.mu.Lock()
	set()
	e.mu.Unlock()
	select {
	case e.want.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) handleTrip(ctx context.Context) {
	// A check-in answered meanwhile may have unpaused: a trip pauses until
	// its own answer.
	e.gate.pause()
	e.mu.Lock()
	report := TripReport{Reason: e.seen.tripReason, Last: e.seen.lastFail}
	e.mu.Unlock()
	report.Stats = e.Stats()
	if e.cfg.OnTrip != TripPrompt || e.cfg.Operator == nil {
		e.Stop(StopBreaker, "circuit breaker open: "+report.Reason)
		return
	}
	if err := e.job.Flush(ctx); err != nil {
		e.failRun(fmt.Errorf("engine: flushing the checkpoint before asking the operator: %w", err))
		return
	}
	decision := e.cfg.Operator.Trip(ctx, report)
	if ctx.Err() != nil {
		// The run ended while the operator was asked: nobody answered.
		return
	}
	switch decision {
	case TripNoAnswer:
		e.Stop(StopBreaker, "circuit breaker open: "+report.Reason+"; no operator answered the prompt (its input ended)")
		return
	case TripContinue:
	default:
		e.Stop(StopOperator, "aborted by the operator after the circuit breaker opened: "+report.Reason)
		return
	}
	e.heldOpen.Store(false)
	e.br.Reset()
	for _, r := range e.routing.list {
		// Continue means try again: every route gets its chance.
		r.br.Reset()
	}
	e.gate.unpause()
}

func (e *Engine) handleCheckin(ctx context.Context) {
	e.mu.Lock()
	latest := append([]store.Record(nil), e.seen.latest...)
	e.mu.Unlock()
	goOn := e.cfg.Operator.CheckIn(ctx, CheckIn{Stats: e.Stats(), Latest: latest})
	if ctx.Err() != nil {
		return
	}
	if !goOn {
		e.Stop(StopOperator, "aborted by the operator at a check-in")
		return
	}
	e.gate.unpause()
}

// waitIdle waits until no call is between the gate and its outcome.
func (e *Engine) waitIdle(ctx context.Context) bool {
	for {
		e.mu.Lock()
		if e.active.Load() == 0 {
			e.mu.Unlock()
			return true
		}
		if e.idle == nil {
			e.idle = make(chan struct{})
		}
		idle := e.idle
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-idle:
		}
	}
}

// callEnded counts a call out of those a drain waits for; the lock is
// taken only when the count reaches zero, where a drain may be waiting.
func (e *Engine) callEnded() {
	if e.active.Add(-1) != 0 {
		return
	}
	e.mu.Lock()
	if e.idle != nil && e.active.Load() == 0 {
		close(e.idle)
		e.idle = nil
	}
	e.mu.Unlock()
}
