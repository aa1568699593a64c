package workertype

import (
	"cmp"
	"errors"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
)

// AliveSQL is the one rule that judges a worker of tenax_workers w alive,
// in SQL: it has not stopped, and it beat within its own rescue-after (it
// beats six times in that span). Past that, River's rescuer takes its
// items for other workers: they are no longer its own, whatever its row
// last said. Package worker judges by it the shared breaker's owner, the
// peers that share a quota, the budget holds it gives back and Info.Lost;
// the PostgreSQL store, whether a job saved as running is held by a live
// worker or is stale.
const AliveSQL = `(w.stopped IS NULL AND w.heartbeat > now() - w.rescue_after)`

// Info is one worker process as tenax_workers knows it.
type Info struct {
	ID          string
	Host        string
	PID         int
	Jobs        []string
	Concurrency int
	InFlight    int
	Finished    int64
	Started     time.Time
	Heartbeat   time.Time
	// Stopped is set once the worker stopped cleanly.
	Stopped *time.Time
	// Lost is set for a worker that did not stop and whose heartbeat is
	// older than its rescue-after (killed, its machine gone): River
	// rescues its items, which go back to the queue, so InFlight is 0.
	Lost bool
}

// Status is what a worker is doing, for a report of its progress.
type Status struct {
	// Jobs are the jobs it has taken up, sorted.
	Jobs []string
	// InFlight counts its items in the engine (their calls under way or
	// waiting to be made), over all its jobs; not the items River fetched
	// ahead or whose records wait for their group's commit.
	InFlight int
	// Finished counts the items it recorded since it started.
	Finished int64
}

// JobRun is a job as a worker runs it: what worker.Config.OnJob is told.
type JobRun struct {
	ID   string
	Spec *spec.Spec
	// Stats reads the counters of the job's engine on this worker.
	Stats func() engine.Stats
}

// Progress is where a job run by workers stands, from its River jobs:
// each count is of items, a River job counting the items of its group.
type Progress struct {
	// Finished counts the items with their final record this round: those
	// of the River jobs completed, and those already recorded in a group
	// still under way or to be run again.
	Finished int
	// Waiting, Running and Retrying count the items still to record, by
	// the state of their River job.
	Waiting, Running, Retrying int
	// Discarded counts the items without a record of River jobs River
	// gave up on (MaxAttempts crashed executions) or cancelled (inputs
	// missing): they are pending until `tenax resume`.
	Discarded int
	// Paused is set while the job's queue is paused (the shared breaker,
	// a check-in, or an operator's pause).
	Paused bool
	// Hold is the operator's pause of the job (`tenax pause`, the page's
	// Pause), nil when none holds it.
	Hold *store.Pause
	// Breaker is the job's shared breaker.
	Breaker BreakerState
	// Budget is what the job's workers spent of its budget; nil when the
	// job has none.
	Budget *Spend
	// CheckIns is set while a terminal holds the job's check-ins (an
	// attached tenax run of a spec with checkin_every).
	CheckIns *CheckIns
}

// CheckIns is where a job's check-ins stand while a terminal holds them.
type CheckIns struct {
	// Every is the spec's checkin_every.
	Every int64
	// Done counts the items recorded since the terminal began attending;
	// the next check-in comes when it reaches Next.
	Done, Next int64
	// Due is set from the Nth item until the terminal's answer: the
	// job's queue is paused meanwhile.
	Due bool
}

// Spend is a job's shared budget account: what its workers' calls spent
// since the job was created or last resumed, and what calls under way hold.
type Spend struct {
	Tokens  int64
	CostUSD float64
	// Held is the estimated tokens of the calls under way on every worker.
	Held int64
	// Reached says why the budget stopped the job, "" while it has not.
	Reached string
}

// BreakerState is a job's shared circuit breaker as an operator sees it.
type BreakerState struct {
	Open bool
	// Action is the spec's on_trip: abort, wait or prompt.
	Action    string
	Reason    string
	LastError string
	// Owner is the worker whose breaker tripped.
	Owner    string
	Decision string
	// DecidedBy is who gave Decision.
	DecidedBy string
	Trips     int
	// Summary and Failures are the question of a prompt trip as the
	// worker that tripped rendered it (the terminal prompt's), empty until
	// it wrote them.
	Summary  string
	Failures []string
}

// Decision is the operator's answer to a job's open shared breaker.
type Decision string

// Decisions.
const (
	Continue Decision = "continue"
	Abort    Decision = "abort"
)

// ErrBreakerClosed is returned by a decision for a job whose breaker is
// not open.
var ErrBreakerClosed = errors.New("the job's circuit breaker is not open")

// ErrTripSettled is returned by a decision on one trip when that trip was
// settled (answered, or closed by its probes) and the breaker tripped
// again since: an answer to one question never answers the next.
var ErrTripSettled = errors.New("that trip of the circuit breaker was settled already, and it tripped again since")

// AnsweredError is returned by a decision when the breaker's trip was
// answered already: the first answer wins.
type AnsweredError struct {
	JobID    string
	Decision Decision
	// By is who answered, as the answer's decision was told.
	By string
}

func (e *AnsweredError) Error() string {
	return fmt.Sprintf("the circuit breaker of job %s was answered already: %s, by %s", e.JobID, e.Decision, cmp.Or(e.By, "someone"))
}

// ErrNotQueued is returned for a job that was not enqueued for workers.
var ErrNotQueued = errors.New("the job was not enqueued for workers")

// ErrNotPaused is returned by a continue of a job that no operator
// paused.
var ErrNotPaused = errors.New("the job is not paused")

// ErrStopping is returned by a pause of a job that is stopping or
// stopped (by an operator, its breaker or its budget): there is nothing
// to pause; `tenax resume` carries it on.
var ErrStopping = errors.New("the job is stopping or stopped")

// PausedError is returned by a pause of a job already paused: the first
// pause stands.
type PausedError struct {
	JobID string
	// By and Since are the pause in force.
	By    string
	Since time.Time
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("job %s is already paused, by %s since %s", e.JobID, cmp.Or(e.By, "someone"), e.Since.UTC().Format(time.RFC3339))
}

// RequeueOptions are what `tenax resume` takes for a job run by workers.
type RequeueOptions struct {
	// RetryFailures enqueues the items whose latest record failed too, in
	// a new round.
	RetryFailures bool
	// Force enqueues even though the input changed since the job was
	// created.
	Force bool
}

// Enqueued says what an enqueue or a requeue inserted.
type Enqueued struct {
	JobID string
	Queue string
	Round int
	// Items is how many items were inserted, worker.GroupItems to a River job.
	Items   int
	Elapsed time.Duration
}
