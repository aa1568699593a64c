package job

import "github.com/tenaxhq/tenax/engine"

// Exit codes, as docs/records.md ("States and exit codes") fixes them.
const (
	ExitOK          = 0   // every item succeeded
	ExitFailures    = 1   // finished with failures
	ExitUsage       = 2   // usage or spec error
	ExitAborted     = 3   // aborted by the breaker, a budget or the operator
	ExitStorage     = 4   // tenax's own storage or input failed; the job is resumable
	ExitInterrupted = 130 // interrupted by a signal
)

// exitCode maps how a run stopped, and how many of the job's items are
// failed after it, to the process exit code. Pending items alone (a
// --limit run) are not failures.
func exitCode(s engine.Summary, failed int) int {
	switch s.Stop {
	case engine.StopBreaker, engine.StopBudget, engine.StopOperator:
		return ExitAborted
	case engine.StopSignal:
		return ExitInterrupted
	case engine.StopStorage:
		return ExitStorage
	}
	if failed > 0 {
		return ExitFailures
	}
	return ExitOK
}
