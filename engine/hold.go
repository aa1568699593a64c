package engine

import "time"

// Hold is an operator's pause of a run: who asked for it and when.
type Hold struct {
	// By names the operator as they named themselves ("alice on the web
	// page", "the terminal").
	By    string
	Since time.Time
}

// Pause holds dispatch for the operator until Continue: nothing new
// starts, calls in flight finish and are recorded, and the run waits —
// not stopped, not failed — however long it takes. A tripped breaker's
// Continue does not end it. by says who paused, for the page, status and
// the logs (a Held event). It reports false when the run is already
// paused by an operator (the first pause stands) or stopping.
func (e *Engine) Pause(by string) bool {
	if e.stopped() {
		return false
	}
	h := &Hold{By: by, Since: time.Now()}
	if !e.hold.CompareAndSwap(nil, h) {
		return false
	}
	e.gate.hold()
	e.emit(Event{Kind: Held, Reason: "paused by " + by})
	return true
}

// Continue ends the operator's pause: dispatch goes on where it left off.
// by says who, for the logs (an Unheld event). It reports false when the
// run was not paused by an operator.
func (e *Engine) Continue(by string) bool {
	h := e.hold.Load()
	if h == nil || !e.hold.CompareAndSwap(h, nil) {
		return false
	}
	e.gate.unhold()
	e.emit(Event{Kind: Unheld, Reason: "continued by " + by})
	return true
}

// holdNow returns a copy of the operator's pause in force, nil for none.
func (e *Engine) holdNow() *Hold {
	h := e.hold.Load()
	if h == nil {
		return nil
	}
	c := *h
	return &c
}
