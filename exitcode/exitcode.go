// Package exitcode is tenax's exit-code policy: the codes docs/records.md fixes,
// and For, which maps how a run stopped to one. tenax run, resume, fix
// and the workers all exit through it, so a script reads one meaning
// from every command.
package exitcode

import "github.com/tenaxhq/tenax/engine"

// Exit codes, as docs/records.md ("States and exit codes") fixes them.
const (
	OK          = 0   // every item succeeded
	Failures    = 1   // finished with failures
	Usage       = 2   // usage or spec error
	Aborted     = 3   // aborted by the breaker, a budget or the operator
	Storage     = 4   // tenax's own storage or input failed; the job is resumable
	Interrupted = 130 // interrupted by a signal
)

// For maps how a run stopped, and how many of the job's items are failed
// after it, to the process exit code. Pending items alone (a
// --limit run) are not failures.
func For(s engine.Summary, failed int) int {
	switch s.Stop {
	case engine.StopBreaker, engine.StopBudget, engine.StopOperator:
		return Aborted
	case engine.StopSignal:
		return Interrupted
	case engine.StopStorage:
		return Storage
	}
	if failed > 0 {
		return Failures
	}
	return OK
}
