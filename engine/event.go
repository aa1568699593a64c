package engine

import (
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// ClassDecision is a classification with its reason (see package classify).
type ClassDecision = classify.Decision

// EventKind says what an Event reports.
type EventKind uint8

// The events the engine emits, in the order they typically occur.
const (
	// ItemStarted: an item was dispatched.
	ItemStarted EventKind = iota + 1
	// ItemRetry: a call failed with a retryable error; the item waits
	// Delay before the next call.
	ItemRetry
	// ItemHeal: an output was invalid; the item is re-asked with feedback.
	ItemHeal
	// ItemFinished: the item has its final record (Record).
	ItemFinished
	// ItemPending: the item stopped without a record (the run stopped);
	// a resume runs it again.
	ItemPending
	// BreakerChanged: the breaker moved to State.
	BreakerChanged
	// Cooldown: dispatch to the provider pauses until Until (a 429 hint or
	// exhausted rate-limit headers).
	Cooldown
	// ConcurrencyChanged: adaptive concurrency set the limit to Limit.
	ConcurrencyChanged
	// Stopping: the run stops dispatching, for Reason.
	Stopping
	// CallEnded: one call of the task returned, after Elapsed; Err is the
	// task's error (nil when it answered, even with an output that proved
	// invalid) and Decision what the engine made of the call (Invalid for
	// that output, Unknown for an answer that was recorded). It follows
	// the item event the call led to. Cache hits are no call and emit
	// none.
	CallEnded
	// RouteChanged: Route's breaker moved to State (runs with routes).
	RouteChanged
	// ItemCalled: one call of an item's task ended and was decided on;
	// Call says when it waited at the gate and ran, what it used and what
	// the item does next, Err and Decision what went wrong. It comes
	// before the ItemRetry, ItemHeal or ItemFinished the decision leads
	// to. Unlike CallEnded it reports every attempt, a cache hit's and
	// one that failed to prepare too, so that a trace draws them all.
	ItemCalled
	// Held: the operator paused dispatch (Engine.Pause); Reason says who
	// and from where. Calls in flight go on to their outcome.
	Held
	// Unheld: the operator let a paused run go on (Engine.Continue);
	// Reason says who.
	Unheld
)

var eventNames = [...]string{
	ItemStarted:        "item_started",
	ItemRetry:          "item_retry",
	ItemHeal:           "item_heal",
	ItemFinished:       "item_finished",
	ItemPending:        "item_pending",
	BreakerChanged:     "breaker_changed",
	Cooldown:           "cooldown",
	ConcurrencyChanged: "concurrency_changed",
	Stopping:           "stopping",
	CallEnded:          "call_ended",
	RouteChanged:       "route_changed",
	ItemCalled:         "item_called",
	Held:               "held",
	Unheld:             "unheld",
}

// String returns the event kind's snake_case name, as logs print it.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && eventNames[k] != "" {
		return eventNames[k]
	}
	return "unknown"
}

// Event is one thing that happened in a run. Only the fields that matter to
// its Kind are set.
type Event struct {
	Kind EventKind
	Time time.Time
	// Item events. Item and Record are copies, safe to keep: the engine
	// goes on changing its own (a re-ask sets the item's feedback).
	Item     task.Item
	Attempt  int
	Delay    time.Duration
	Err      error
	Decision classify.Decision
	Record   store.Record
	// Elapsed is a call's latency (CallEnded).
	Elapsed time.Duration
	// Breaker events.
	State breaker.State
	// Cooldown events.
	Until time.Time
	// ConcurrencyChanged events.
	Limit int
	// Stopping and Cooldown events.
	Reason string
	// Route names the route of a RouteChanged event, of a Cooldown that
	// pauses one route only, and of the call a CallEnded or ItemCalled
	// reports.
	Route string
	// ItemCalled events.
	Call Call
}

// Call is one call of an item's task as an ItemCalled event reports it:
// enough for a trace to draw the attempt (its wait at the gate, then the
// call) without the engine knowing about tracing.
type Call struct {
	// Number counts the item's calls in this run, from 1.
	Number int
	// Queued is when the attempt began: it was prepared, then waited at
	// the gate (limits, breaker, budget) until Started.
	Queued time.Time
	// Started and Ended bound the call itself.
	Started, Ended time.Time
	// Usage, CostUSD, CacheHit and FinishReason are the call's own, from
	// its task.Result.
	Usage        task.Usage
	CostUSD      float64
	CacheHit     bool
	FinishReason string
	// Next is what the item does after the call.
	Next Step
}

// Stats are a run's counters, cheap to read at any time (Engine.Stats) for a
// progress line.
type Stats struct {
	Started   time.Time
	Total     int // items in the input
	Skipped   int // items a resume skipped (already recorded)
	Planned   int // items this run means to finish
	Done      int // items finished in this run
	Succeeded int
	Failed    int
	InFlight  int // calls under way (items waiting out a backoff are not)
	Retries   int // retried calls
	// HealAttempts counts re-asks with feedback.
	HealAttempts int
	// Calls counts every call of the task.
	Calls   int
	Limit   int // current concurrency limit
	Breaker breaker.State
	// Trips counts the times the breaker opened from closed in this run.
	Trips int
	// Paused is how long dispatch stood paused for the operator in this
	// run, up to now (a tripped breaker's question, a check-in);
	// PausedSince is when the current pause began (zero while dispatch is
	// open) and Resumed when the latest pause ended (zero: none did). A
	// rate is measured over the time dispatch was open: since Started,
	// less Paused, or from Resumed to now or PausedSince.
	Paused      time.Duration
	PausedSince time.Time
	Resumed     time.Time
	// Hold is the operator's pause (Engine.Pause) in force, nil when
	// the operator holds nothing.
	Hold    *Hold
	Usage   task.Usage
	CostUSD float64
	// Routes are each route's counters, for a run with routes.
	Routes []RouteStats
}

// StopReason says why a run stopped before its end.
type StopReason uint8

const (
	// StopNone: the run reached the end of its input.
	StopNone StopReason = iota
	// StopBreaker: the breaker tripped and the action was abort.
	StopBreaker
	// StopBudget: a cost or token budget was reached.
	StopBudget
	// StopOperator: the operator answered Abort.
	StopOperator
	// StopSignal: SIGINT or SIGTERM.
	StopSignal
	// StopStorage: tenax's own storage or input failed (the checkpoint
	// could not be written, the input could not be read). Run returns the
	// error; what was written stays and the job is resumable.
	StopStorage
)

// String returns the reason's name.
func (r StopReason) String() string {
	switch r {
	case StopBreaker:
		return "breaker"
	case StopBudget:
		return "budget"
	case StopOperator:
		return "operator"
	case StopSignal:
		return "signal"
	case StopStorage:
		return "storage"
	default:
		return "none"
	}
}

// Summary is how a run ended.
type Summary struct {
	Stats
	// Stop is why the run stopped short, StopNone when it ran to the end.
	Stop StopReason
	// StopDetail explains Stop for people: "max_tokens budget of 1000
	// reached (1042 used)".
	StopDetail string
	// Pending counts the items of the input without a record after this
	// run (never dispatched, or interrupted).
	Pending int
	// Elapsed is the run's wall time.
	Elapsed time.Duration
	// LastFailure is the last item failure, for reports.
	LastFailure *Failure
}

// StopError is why a run stopped dispatching: the cause of the context
// that every wait of the run selects on (context.Cause returns it). The
// first stop wins; later ones are ignored.
type StopError struct {
	Reason StopReason
	// Detail explains the stop for people.
	Detail string
	// Err is the failure behind a StopStorage, nil otherwise.
	Err error
}

func (e *StopError) Error() string { return "run stopped (" + e.Reason.String() + "): " + e.Detail }

// Unwrap returns the failure behind the stop, if any.
func (e *StopError) Unwrap() error { return e.Err }
