//go:build race

package jsonl_test

// raceEnabled reports a -race build, whose instrumentation allocates.
const raceEnabled = true
