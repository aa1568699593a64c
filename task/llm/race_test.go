//go:build race

package llm

// raceEnabled reports a -race build, whose instrumentation allocates.
const raceEnabled = true
