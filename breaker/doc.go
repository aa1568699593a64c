// Package breaker is a circuit breaker: it stops a run from hammering a
// service (or burning through items) once calls keep failing, and tries
// again later.
//
// A Breaker is a small state machine. Closed, it lets every call through
// and counts the outcomes callers report. It opens after Threshold
// consecutive counted failures (any success ends the run), or, with
// FailureRate set, once that share of the last Window outcomes failed.
// Open, it rejects every call with ErrOpen for ResetTimeout. Then it turns
// half-open and lets exactly Probes trial calls through: if all of them
// succeed it closes, and if one fails it opens again and the timeout
// starts over. Reset closes it at once (an operator's "Continue"); Trip
// opens it at once.
//
// A call asks first and reports after:
//
//	p, err := b.Allow()
//	if err != nil {
//		return err // errors.Is(err, breaker.ErrOpen)
//	}
//	if err := call(); err != nil {
//		p.Failure() // or p.Release() if the failure says nothing about the service
//		return err
//	}
//	p.Success()
//
// Which failures count is the caller's decision; in tenax, the engine
// reports only the classes docs/classes.md's table marks as counted.
//
// Each state change starts a new generation, and a Permit belongs to the
// generation that gave it: outcomes reported after the breaker has moved
// on (a slow call that started before it opened) are ignored, so they can
// neither re-open a freshly closed breaker nor close one that is probing.
//
// A Breaker is safe for concurrent use. While closed, Allow and Success
// take no lock and allocate nothing: the state lives behind an atomic
// pointer and the counts are atomics. OnStateChange is called outside the
// lock, one change at a time and in order, so a listener may call back
// into the breaker.
package breaker
