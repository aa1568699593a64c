// Package task defines what tenax runs for each item: a Task takes one
// Item and makes one attempt at it, returning a Result or an error that
// carries what the classifier needs (see package classify).
//
// A Task never retries on its own. Retrying, classification, the circuit
// breaker and the heal loop belong to the engine, so that a retried item
// counts once and one policy decides. The exec, http and llm tasks live in
// the sub-packages of the same names.
package task
