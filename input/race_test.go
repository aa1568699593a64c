//go:build race

package input

// raceEnabled reports a -race build, whose instrumentation allocates.
const raceEnabled = true
