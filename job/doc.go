// Package job turns a job spec into a finished job: it loads and checks the
// spec and the input, creates or reopens the job's checkpoint in a store,
// builds the task and its validator, runs the engine, and closes the run
// properly whatever stopped it (failures.jsonl, the compacted output, the
// manifest's state, the exit code).
//
// It is what `tenax run` and `tenax resume` do, as a library: a Go program
// can call Run and Resume with its own Operator and event consumer.
package job
