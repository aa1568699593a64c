// Package engine is tenax's scheduler: it runs one task over a stream of
// items and brings each item to a recorded outcome, using the retry policy,
// the classifier, the circuit breaker and the heal loop as the class table
// of docs/classes.md says.
//
// To run a function over a slice, RunSlice is all it takes: it builds the
// task, the source and a memory checkpoint, and returns each item's Outcome
// in order (see ExampleRunSlice). New and Run are for a task, a source and
// a store of your own.
//
// It is one continuous pipeline: a dispatcher hands items to at most
// Concurrency goroutines (adaptive when asked: one more slot per window of
// successes, half of them on a 429 or overload), each of which calls the task
// until the item succeeds, fails for good, or the run stops. Before each call
// an item passes the gate: the budget, a provider cooldown (a 429's hint
// pauses every item, not just the one that got it), the rate limiters and a
// breaker permit.
//
// What counts toward the breaker follows the class table: fatal and item
// errors at once, retryable errors once retries are exhausted, invalid
// outputs once heal budgets are; any success resets the count. When the
// breaker opens the engine stops dispatching, lets calls in flight finish and
// records them, then aborts, asks the Operator, or waits for the half-open
// probes. Items that never got a record stay pending: a resume runs them.
//
// Everything observable goes out as Events (OnEvent) and Stats, which the
// CLI's progress line, the logs and a future web view consume.
package engine
