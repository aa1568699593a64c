package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// Errors a caller may need to tell apart, reachable with errors.Is through
// whatever context a store wraps them in.
var (
	// ErrNotFound is returned by Store.Open and Store.OpenReadOnly for a
	// job id the store does not hold.
	ErrNotFound = errors.New("store: job not found")
	// ErrExists is returned by Store.Create for an explicit Manifest.ID
	// that is already taken.
	ErrExists = errors.New("store: job already exists")
	// ErrInUse is returned by Store.Open when another process holds the
	// job open for writing (a second `tenax resume` of a running job).
	ErrInUse = errors.New("store: job is in use")
	// ErrReadOnly is returned by the writing methods of a job opened with
	// Store.OpenReadOnly.
	ErrReadOnly = errors.New("store: job is open read-only")
	// ErrClosed is returned by the methods of a job after Close.
	ErrClosed = errors.New("store: job is closed")
)

// NoteKeeper is what a Job of a store without job directories offers in
// place of a side file: an ordered, durable log of notes of each kind,
// beside the records, for what a resumed run must know that no record
// holds (batch mode's ledger of the batches it submitted). The PostgreSQL
// and in-memory stores' jobs implement it; a JSONL job keeps such files
// in its directory instead.
type NoteKeeper interface {
	// AppendNote makes note durable under kind before it returns. A job
	// open read-only returns ErrReadOnly.
	AppendNote(ctx context.Context, kind string, note []byte) error
	// Notes returns the notes of kind, oldest first; none is not an
	// error.
	Notes(ctx context.Context, kind string) ([][]byte, error)
}

// Notes returns the job's NoteKeeper, looking through the wrappers a
// caller puts around a job (a wrapper offers Unwrap() Job, as errors do).
func Notes(j Job) (NoteKeeper, bool) {
	for {
		if n, ok := j.(NoteKeeper); ok {
			return n, true
		}
		u, ok := j.(interface{ Unwrap() Job })
		if !ok {
			return nil, false
		}
		j = u.Unwrap()
	}
}

// Store holds jobs: their manifests and their records. The JSONL job
// directory (store/jsonl) and PostgreSQL (store/postgres) implement it,
// and both pass the conformance suite in store/storetest.
type Store interface {
	// Create records a new job. When m.ID is empty the store assigns
	// "job_YYYYMMDD_HHMMSS" from m.Created, adding a suffix on collision.
	Create(ctx context.Context, m Manifest) (Job, error)
	// Open returns an existing job for writing (resume); ErrNotFound
	// (wrapped) if there is none, ErrInUse if another process has it open
	// for writing.
	Open(ctx context.Context, id string) (Job, error)
	// OpenReadOnly returns an existing job for reading (status, export),
	// even while another process writes to it. Its writing methods return
	// ErrReadOnly.
	OpenReadOnly(ctx context.Context, id string) (Job, error)
	// List returns the manifests of every job, oldest first. A job whose
	// manifest cannot be read is left out: List returns the others with an
	// *UnreadableJobsError naming it, so one damaged job hides no other.
	List(ctx context.Context) ([]Manifest, error)
}

// UnreadableJob is a job whose manifest could not be read.
type UnreadableJob struct {
	ID  string
	Err error
}

// UnreadableJobsError is returned by Store.List beside the manifests it
// could read: the jobs it skipped, each with why. It is tenax's own storage
// failing for those jobs only (exit 4, docs/records.md, for a command about one
// of them); the rest of the list is whole.
type UnreadableJobsError struct {
	Jobs []UnreadableJob
}

func (e *UnreadableJobsError) Error() string {
	parts := make([]string, len(e.Jobs))
	for i, j := range e.Jobs {
		parts[i] = fmt.Sprintf("job %s cannot be read (%v)", j.ID, j.Err)
	}
	return strings.Join(parts, "; ") + ": repair its manifest.json or remove the job"
}

// Find returns the unreadable job id, if it is one.
func (e *UnreadableJobsError) Find(id string) (UnreadableJob, bool) {
	for _, j := range e.Jobs {
		if j.ID == id {
			return j, true
		}
	}
	return UnreadableJob{}, false
}

// Job is one job's checkpoint: an append-only log of records, of which the
// latest per idx is the item's outcome. Its methods are safe for concurrent
// use.
type Job interface {
	// Manifest returns the job's manifest as last saved.
	Manifest() Manifest
	// SetState saves the job's state in its manifest.
	SetState(ctx context.Context, s State) error
	// UpdateManifest applies fn to the manifest and saves the result (a
	// stop reason with the state, a new input hash on a forced resume).
	// The job's id and creation time cannot change.
	UpdateManifest(ctx context.Context, fn func(*Manifest)) error
	// Append adds records. They are durable once Flush returns, and the
	// store flushes by itself every FlushEvery records or second. A batch
	// holding a record that cannot be encoded (invalid raw JSON, a NaN
	// cost) is refused whole: an error, and nothing of it written.
	Append(ctx context.Context, recs ...Record) error
	// Flush makes every appended record durable (fsync for files).
	Flush(ctx context.Context) error
	// Outcomes returns the latest outcome of every idx, compactly: what
	// resume needs, never the records themselves. When appended records
	// could not be written (a full disk), it returns the outcomes of the
	// records that were, non-nil, together with that error; nil when none
	// can be read.
	Outcomes(ctx context.Context) (Outcomes, error)
	// Scan calls fn with the latest record of every idx that has one, in
	// idx order, holding no more than one record in memory at a time.
	Scan(ctx context.Context, fn func(Record) error) error
	// Failures calls fn with the latest record of every idx whose latest
	// record failed, in idx order: the failed items with their last error.
	Failures(ctx context.Context, fn func(Record) error) error
	// Finish is called at the end of a run, or when it is aborted or
	// interrupted: it flushes, and the JSONL store writes failures.jsonl
	// beside the log.
	Finish(ctx context.Context) error
	// Close flushes and releases the job's resources.
	Close() error
}

// Historian is a Job that reads every record of one item, not only its
// latest: the log is append-only, so every run's outcome of the item is
// there (a failure, the re-run that failed again, the one that worked).
// Every store of this module implements it; the page's item history
// asks for it.
//
// Log reads the whole log the same way, every record of every item: what
// a chart of the job's attempts over time needs, where the latest record
// of each item would erase the failures a re-run fixed.
type Historian interface {
	// History calls fn with every record of idx, oldest first.
	History(ctx context.Context, idx int, fn func(Record) error) error
	// Log calls fn with every record of the job, in the order they were
	// appended, holding no more than one record in memory at a time.
	Log(ctx context.Context, fn func(Record) error) error
}

// State is a job's lifecycle state, saved in its manifest.
type State string

// Job states.
const (
	StateRunning     State = "running"
	StateCompleted   State = "completed"   // every item succeeded
	StateFailed      State = "failed"      // finished, some items failed
	StateAborted     State = "aborted"     // stopped by the breaker, a budget or the operator
	StateInterrupted State = "interrupted" // stopped by a signal
	StateIncomplete  State = "incomplete"  // ran to its end with items left pending (a --limit run)
	// StateStorageFailed: stopped because tenax's own storage or input
	// failed (a full disk, a vanished job directory, a lost database):
	// not the operator's doing, and resumable once the storage is back.
	StateStorageFailed State = "storage_failed"
	// StateStale is never saved: status reports it for a job whose
	// manifest says running although no process holds it any more (its
	// run was killed without a chance to close it). Resume continues it.
	StateStale State = "stale"
)

// Manifest describes a job: what ran, over which input.
type Manifest struct {
	ID      string    `json:"id"`
	Name    string    `json:"name,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated,omitempty"`
	// Version is the tenax version that created the job.
	Version string `json:"tenax_version"`
	// SpecPath is the spec file the job was started from.
	SpecPath string `json:"spec_path,omitempty"`
	// Spec is the resolved spec with secrets redacted.
	Spec json.RawMessage `json:"spec,omitempty"`
	// InputPath and InputSHA256 identify the input; resume refuses a
	// changed input unless forced.
	InputPath   string `json:"input_path"`
	InputSHA256 string `json:"input_sha256"`
	// InputBytes, when not zero, says that InputSHA256 and Items cover
	// only the first InputBytes bytes of the input: a --limit run read no
	// further. A later run reads on, checks the prefix and completes them.
	InputBytes int64 `json:"input_sha256_bytes,omitempty"`
	// Items is the number of items in the input (in its first InputBytes
	// bytes when that is set).
	Items int   `json:"items"`
	State State `json:"state"`
	// StopReason says why the job last stopped short (breaker, budget,
	// operator, signal), empty when it ran to its end.
	StopReason string `json:"stop_reason,omitempty"`
	// BreakerTrips counts the times the circuit breaker opened, over every
	// run of the job.
	BreakerTrips int `json:"breaker_trips,omitempty"`
	// RunSeconds sums the wall time of the job's runs (the first and each
	// resume) that ended properly, for the rate status shows; a run killed
	// before it could close the job adds nothing.
	RunSeconds float64 `json:"run_seconds,omitempty"`
	// Paused is set while an operator's pause holds the running job
	// (`tenax pause`, the page's Pause): written by the run (or, on
	// workers, by the pause itself) once it holds dispatch, cleared by
	// `tenax continue` and when the run ends.
	Paused *Pause `json:"paused,omitempty"`
	// RouteBreakers keeps each named route's breaker counts over every
	// run of the job (and every worker's run of it), for status: a
	// refused call leaves no record, so the records cannot say them.
	RouteBreakers map[string]RouteBreaker `json:"route_breakers,omitempty"`
}

// RouteBreaker is what a route's breaker counted, summed over the runs
// of a job.
type RouteBreaker struct {
	// Faults counts the route's calls that failed as an outage or a
	// fatal error: the failures its breaker counts.
	Faults int `json:"faults"`
	// Refused counts the calls its open breaker turned away, each sent
	// back to choose a route again.
	Refused int `json:"refused"`
}

// AddRouteBreaker adds a run's breaker counts of route to the job's;
// counts of zero keep no entry.
func (m *Manifest) AddRouteBreaker(route string, faults, refused int) {
	if route == "" || faults+refused == 0 {
		return
	}
	if m.RouteBreakers == nil {
		m.RouteBreakers = map[string]RouteBreaker{}
	}
	rb := m.RouteBreakers[route]
	rb.Faults += faults
	rb.Refused += refused
	m.RouteBreakers[route] = rb
}

// Pause is an operator's pause of a running job, as its manifest keeps it.
type Pause struct {
	// By names the operator as they named themselves (`--by`, the OS user).
	By    string    `json:"by"`
	Since time.Time `json:"since"`
}

// Record is one finished item, as a line of results.jsonl. docs/records.md
// ("Fields") fixes its fields; Error and Class are set only on failure.
type Record struct {
	Idx                int             `json:"_idx"`
	ID                 string          `json:"id,omitempty"`
	Input              json.RawMessage `json:"input"`
	Output             json.RawMessage `json:"output"`
	Error              string          `json:"error,omitempty"`
	Class              classify.Class  `json:"class,omitempty"`
	Retryable          bool            `json:"retryable"`
	Attempts           int             `json:"attempts"`
	HealAttempts       int             `json:"heal_attempts"`
	GenerationAttempts int             `json:"generation_attempts"`
	// RateLimited counts the item's calls the provider answered 429
	// (rate limited), whatever came of them; absent for none.
	RateLimited int  `json:"rate_limited,omitempty"`
	CacheHit    bool `json:"cache_hit"`
	// FinishReason is why the provider stopped the item's last answer
	// (LLM tasks only): "stop", "length", "end_turn", "refusal", ….
	FinishReason string `json:"finish_reason,omitempty"`
	// Stderr is the tail of a failed command's stderr (exec tasks and
	// command validators), at most MaxStderrTail bytes.
	Stderr string `json:"stderr,omitempty"`
	// Route and Model name the route and model whose call produced the
	// record, for a job with routes (docs/routes.md); Tries are the routes
	// the item left before it, each with the error it met there.
	Route string `json:"route,omitempty"`
	Model string `json:"model,omitempty"`
	Tries []Try  `json:"tries,omitempty"`
	// CallMS is the time the item's calls on Route took (on the one route
	// of a job without routes), each call's own time summed — no
	// queueing, rate-limit wait, backoff or validator — rounded up to a
	// whole millisecond, so a record whose item made a call has at least
	// 1; 0 (absent) when no call was timed: cache hits, batch waves.
	CallMS        int64           `json:"call_ms,omitempty"`
	Fingerprint   string          `json:"fingerprint,omitempty"`
	TrackedErrors json.RawMessage `json:"tracked_errors,omitempty"`
	// Agent is what an agent item's last attempt did (steps, tool calls
	// by tool, errors fed back, the consecutive-error peak), absent for
	// items of tasks without tools (docs/agents.md).
	Agent      *task.AgentStats `json:"agent,omitempty"`
	Usage      task.Usage       `json:"usage"`
	CostUSD    *float64         `json:"cost_usd,omitempty"`
	DurationMS int64            `json:"duration_ms"`
	FinishedAt time.Time        `json:"finished_at"`
}

// Try is one route an item left for another: its name, model and the
// error that moved the item, with that error's class, and the time its
// calls there took.
type Try struct {
	Route string         `json:"route"`
	Model string         `json:"model,omitempty"`
	Error string         `json:"error"`
	Class classify.Class `json:"class,omitempty"`
	// Fallback names the fallback that moved the item off the route
	// when it wanted another kind of route (context_window,
	// content_filter, escalate); "" for an outage or a spent streak.
	// A run that goes on with the item (a resume, a batch job's next
	// wave or online tail) reads what the item needs from it.
	Fallback string `json:"fallback,omitempty"`
	// CallMS is the time the item's calls on the route took, as
	// Record.CallMS counts it: the route's latency as the item met it.
	CallMS int64 `json:"call_ms,omitempty"`
}

// MaxStderrTail is the most of a command's stderr a Record keeps: its
// last bytes, where programs print their conclusion.
const MaxStderrTail = 4 << 10

// Failed reports whether the record is a failure.
func (r *Record) Failed() bool { return r.Class != classify.Unknown || r.Error != "" }

// Outcome is the latest outcome of one idx.
type Outcome uint8

// Outcomes of an item. Pending is the zero value: no record.
const (
	Pending Outcome = iota
	Succeeded
	Failed
)

func (o Outcome) String() string {
	switch o {
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	default:
		return "pending"
	}
}

// Outcomes holds the latest outcome of every idx, one byte each, so resume
// over ten million items costs ten megabytes whatever the outputs weigh.
type Outcomes []Outcome

// Get returns the outcome of idx, Pending beyond the slice.
func (o Outcomes) Get(idx int) Outcome {
	if idx < 0 || idx >= len(o) {
		return Pending
	}
	return o[idx]
}

// Set records the outcome of idx, growing the slice as needed.
func (o *Outcomes) Set(idx int, out Outcome) {
	if idx >= len(*o) {
		if idx < cap(*o) {
			n := len(*o)
			*o = (*o)[:idx+1]
			clear((*o)[n:idx]) // a caller may have shortened the slice

		} else {
			grown := make(Outcomes, idx+1, max(2*cap(*o), idx+1))
			copy(grown, *o)
			*o = grown
		}
	}
	(*o)[idx] = out
}

// Count returns how many idx have each outcome among the first n items.
func (o Outcomes) Count(n int) (succeeded, failed, pending int) {
	for i := 0; i < n; i++ {
		switch o.Get(i) {
		case Succeeded:
			succeeded++
		case Failed:
			failed++
		default:
			pending++
		}
	}
	return succeeded, failed, pending
}
