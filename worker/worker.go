package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/tracing"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// Defaults of Config.
const (
	// DefaultRescueAfter is how long after a worker's last heartbeat River
	// rescues the items it was running.
	DefaultRescueAfter = time.Minute
	// idleQueue is the queue every worker's River client is created with,
	// which nothing is ever inserted into: River needs one queue to start
	// a client that works, before any job exists (`--all`).
	idleQueue = "tenax_idle"
	// jobPollInterval is how often a worker with no --job looks for new
	// jobs.
	jobPollInterval = 2 * time.Second
	// sharedPollInterval is how often a worker's poll of each job ticks:
	// it counts the job's live workers (every peersEvery) and looks
	// whether the job is drained (finalizeEvery). While the worker is not
	// listening (its listener's connection down) each tick also reads the
	// job's whole shared state: breaker, pause, cooldown, budget,
	// check-ins, routes, resumes. While it listens, those arrive by
	// notification (notify.go) and the whole state is read only every
	// sharedSafetyInterval.
	sharedPollInterval = 250 * time.Millisecond
	// sharedSafetyInterval is how often a listening worker reads a job's
	// whole shared state anyway: the safety net of a notification lost
	// with a connection that died without a word, and the clock of what
	// no row's change announces (a breaker's owner or a check-in's
	// terminal found dead by its heartbeat's age).
	sharedSafetyInterval = 5 * time.Second
)

// Config says what a worker runs.
type Config struct {
	// Jobs are the ids of the jobs to work on. Empty means every job
	// enqueued for workers, new ones included.
	Jobs []string
	// Concurrency is the most items of one job this worker runs at once;
	// 0 takes the spec's concurrency.max.
	Concurrency int
	// RescueAfter is how long after a worker's last heartbeat River
	// rescues the items that worker was running, so that another worker
	// finishes them (default DefaultRescueAfter). Heartbeats come every
	// RescueAfter/6, so a live worker is never rescued however long an
	// item takes (retries with backoff, heal loops).
	RescueAfter time.Duration
	// Options carry the data directory (response cache), the environment
	// secrets come from, the version and the logger.
	Options job.Options
	// ID names the worker in tenax_workers and River (default
	// host-pid-random).
	ID string
	// DBOutageLimit is how long the worker rides out a lost database
	// (its connections terminated, PostgreSQL restarting), trying again
	// with backoff, before it exits (default DefaultDBOutageLimit).
	DBOutageLimit time.Duration
	// OnJob, when set, is called as the worker takes a job up, its engine
	// built and nothing run yet; the function it returns (nil: none)
	// receives that job's engine events on this worker. tenax worker
	// --metrics counts them (package metrics).
	OnJob func(JobRun) func(engine.Event)
	// Tracer, when enabled, traces each item this worker runs as a child
	// of the span of the process that enqueued it (docs/tracing.md); nil
	// traces nothing.
	Tracer *tracing.Tracer

	// wrapTask, set by tests (export_test.go), wraps each job's task,
	// wrapRoutes replaces its routes; validator, set by tests, replaces
	// each job's validator.
	wrapTask   func(task.Task) task.Task
	wrapRoutes func([]engine.Route) []engine.Route
	validator  engine.Validator
	// finalizeEvery, set by tests, replaces the default finalizeEvery.
	finalizeEvery time.Duration
	// noIdleLook, set by tests of the end written as a worker stops,
	// keeps a runner's last execution from asking for a look at once.
	noIdleLook bool
	// sharedPoll, set by tests of the notifications, replaces
	// sharedPollInterval in each job's poll and, when longer,
	// sharedSafetyInterval; noListen, set by the benchmark of the poll
	// alone, keeps the worker from listening.
	sharedPoll time.Duration
	noListen   bool
}

// JobRun is a job as a worker runs it: what Config.OnJob is told.
type JobRun = workertype.JobRun

// Worker runs the items of jobs as a River client: each item's River job
// hands the item to the job's engine, which runs tenax's whole per-item
// logic; the final record is written in the transaction that completes
// the River job.
type Worker struct {
	c     *Client
	cfg   Config
	id    string
	log   *slog.Logger
	river *river.Client[pgx.Tx]
	// proc is this process as the notes of its process groups name it.
	proc self

	mu      sync.Mutex
	runners map[string]*runner
	queues  map[string]bool // job ids whose queue this worker works
	skipped map[string]bool // jobs this worker cannot run (logged once)

	liveMu sync.Mutex
	live   map[int64]int // River job ids of the executions under way here

	hard     context.Context // canceled by StopNow: calls in flight end
	stopNow  context.CancelFunc
	items    *goPool // the goroutines a group's items run on, ended with hard
	finished atomic.Int64
	failure  chan error
	outage   outage
	// listening is true while the listener's LISTEN holds (notify.go):
	// the polls then read the shared state only as a safety net.
	listening atomic.Bool
}

// NewWorker returns a worker on c's database. Run starts it.
func (c *Client) NewWorker(cfg Config) (*Worker, error) {
	if cfg.RescueAfter <= 0 {
		cfg.RescueAfter = DefaultRescueAfter
	}
	if cfg.DBOutageLimit <= 0 {
		cfg.DBOutageLimit = DefaultDBOutageLimit
	}
	if cfg.RescueAfter < 6*time.Second {
		return nil, fmt.Errorf("worker: rescue-after %s is too short: heartbeats come every sixth of it, and River's rescuer runs every 30s anyway", cfg.RescueAfter)
	}
	id := cfg.ID
	if id == "" {
		host, _ := os.Hostname()
		var b [3]byte
		_, _ = rand.Read(b[:])
		id = fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
	}
	log := cfg.Options.Logger
	if log == nil {
		log = slog.Default()
	}
	w := &Worker{
		c: c, cfg: cfg, id: id, log: log.With("worker", id),
		runners: map[string]*runner{}, queues: map[string]bool{}, skipped: map[string]bool{}, live: map[int64]int{},
		failure: make(chan error, 1), proc: thisProcess(),
	}
	w.hard, w.stopNow = context.WithCancel(context.Background())
	w.items = newGoPool(w.hard.Done())
	c.nameConnections("tenax worker " + id)
	return w, nil
}

// ID returns the worker's id.
func (w *Worker) ID() string { return w.id }

// Finished returns how many items this worker has recorded.
func (w *Worker) Finished() int64 { return w.finished.Load() }

// Status is what a worker is doing, for a report of its progress.
type Status = workertype.Status

// Status returns what the worker is doing now.
func (w *Worker) Status() Status {
	w.mu.Lock()
	st := Status{Jobs: make([]string, 0, len(w.runners))}
	for id, r := range w.runners {
		st.Jobs = append(st.Jobs, id)
		st.InFlight += r.calling()
	}
	w.mu.Unlock()
	slices.Sort(st.Jobs)
	st.Finished = w.finished.Load()
	return st
}

// StopNow cancels the calls in flight (their items go back to the queue
// for another worker); Run then returns at once.
func (w *Worker) StopNow() { w.stopNow() }

// Run works until ctx is canceled, then stops gracefully: no new item is
// taken, the calls in flight finish and are recorded, and the items that
// were waiting go back to the queue for other workers. It returns an error
// when the worker cannot go on (a lost database, a job it cannot build).
//
// Long: a worker's life in order: register, River client, heartbeat, outage watch, stop.
func (w *Worker) Run(ctx context.Context) error {
	defer w.stopNow()
	if _, err := w.c.pool.Exec(ctx, `
		INSERT INTO tenax_workers (id, host, pid, concurrency, rescue_after) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (id) DO UPDATE SET started = now(), heartbeat = now(), stopped = NULL, rescue_after = EXCLUDED.rescue_after`,
		w.id, hostname(), os.Getpid(), w.cfg.Concurrency, w.cfg.RescueAfter); err != nil {
		return fmt.Errorf("worker: registering: %w", err)
	}
	// Nothing runs here yet: budget holds left under this id (a worker
	// restarted under the same id) are stale.
	if err := w.c.releaseHolds(ctx, w.id); err != nil {
		return err
	}
	queues := map[string]river.QueueConfig{idleQueue: {MaxWorkers: 1}}
	for _, id := range w.cfg.Jobs {
		r, err := w.runnerFor(ctx, id)
		if errors.Is(err, errJobStopped) {
			// Aborted before this worker started: its items wait in the
			// paused queue, which this worker serves once the operator
			// continues the job (Work builds the runner then).
			var queue string
			var group int
			if qerr := w.c.pool.QueryRow(ctx, `SELECT queue, group_items FROM tenax_queues WHERE job_id = $1`, id).Scan(&queue, &group); qerr != nil {
				return fmt.Errorf("worker: job %s: %w", id, qerr)
			}
			w.log.Warn("the job is stopped; its items wait until `tenax breaker continue` (its breaker) or `tenax resume` (its budget)", "job", id)
			queues[queue] = river.QueueConfig{MaxWorkers: riverSlots(max(1, w.cfg.Concurrency), group)}
			w.queues[id] = true
			continue
		}
		if err != nil {
			return err
		}
		queues[r.queue] = river.QueueConfig{MaxWorkers: r.riverSlots()}
		w.queues[id] = true
	}
	workers := itemWorkers(w)
	rc, err := river.NewClient(riverpgxv5.New(w.c.pool), &river.Config{
		ID:                   w.id,
		Schema:               w.c.schema,
		Queues:               queues,
		Workers:              workers,
		MaxAttempts:          MaxAttempts,
		RetryPolicy:          retryPolicy{},
		RescueStuckJobsAfter: w.cfg.RescueAfter,
		JobTimeout:           w.cfg.RescueAfter,
		// The deadline River puts on an execution is never acted on (see
		// itemWorker.Work): stuck-job reports would be false alarms.
		JobStuckThreshold: 365 * 24 * time.Hour,
		// A fetch takes River jobs of several items each: one every 5 ms
		// keeps a worker's places fed at zero latency for a fetch's
		// commit per tens of items.
		FetchCooldown:     5 * time.Millisecond,
		FetchPollInterval: 500 * time.Millisecond,
		Logger:            quietLogger(w.log),
	})
	if err != nil {
		return fmt.Errorf("worker: river client: %w", err)
	}
	w.river = rc
	if err := rc.Start(w.hard); err != nil {
		return fmt.Errorf("worker: starting river: %w", err)
	}
	if !w.cfg.noListen {
		go w.listen(w.hard)
	}
	w.log.Info("worker started", "jobs", w.cfg.Jobs, "rescue_after", w.cfg.RescueAfter)

	beat := time.NewTicker(w.cfg.RescueAfter / 6)
	defer beat.Stop()
	poll := time.NewTicker(jobPollInterval)
	defer poll.Stop()
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-w.hard.Done():
			break loop
		case err := <-w.failure:
			runErr = err
			break loop
		case <-beat.C:
			// A worker with nothing in flight learns of a lost
			// database here: it tries again with backoff, up to its
			// limit counted from this heartbeat's beginning (it used to
			// look again only at the next beat, and counted from the
			// first error's return: 12s became 29s).
			err := w.withDB(ctx, "heartbeat", w.heartbeat)
			switch {
			case err == nil:
			case errors.Is(err, errPastOutageLimit):
				runErr = err
				break loop
			case ctx.Err() != nil || w.hard.Err() != nil:
			default:
				w.log.Warn("heartbeat failed", "error", err)
			}
		case <-poll.C:
			if len(w.cfg.Jobs) == 0 {
				w.addNewJobs(ctx)
			}
		}
	}
	w.log.Info("worker stopping: the calls in flight finish, waiting items go back to the queue")
	w.mu.Lock()
	runners := make([]*runner, 0, len(w.runners))
	for _, r := range w.runners {
		runners = append(runners, r)
	}
	w.mu.Unlock()
	for _, r := range runners {
		r.stop("worker stopping")
	}
	// River stops fetching and waits for the executions under way, which
	// return as their items are recorded or handed back.
	stopped := make(chan error, 1)
	go func() { stopped <- rc.Stop(w.hard) }()
	select {
	case err := <-stopped:
		if err != nil && runErr == nil && !errors.Is(err, context.Canceled) {
			runErr = err
		}
	case <-w.hard.Done():
		_ = rc.StopAndCancel(context.Background())
	}
	for _, r := range runners {
		<-r.done
	}
	final, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// A job whose last item was recorded here just before the stop is
	// drained: its end is written now, not left to the runner's next
	// periodic look, which the stop cut short (it stayed running until
	// another worker took the job up).
	for _, r := range runners {
		w.settle(final, r)
	}
	if _, err := w.c.pool.Exec(final, `UPDATE tenax_workers SET stopped = now(), heartbeat = now(), in_flight = 0, finished = $2 WHERE id = $1`, w.id, w.finished.Load()); err != nil && runErr == nil {
		runErr = fmt.Errorf("worker: %w", err)
	}
	return runErr
}

// settle writes the end of r's job when its queue is drained.
func (w *Worker) settle(ctx context.Context, r *runner) {
	drained, err := w.c.drained(ctx, r.queue)
	if err != nil || !drained {
		return
	}
	if err := w.c.finalize(ctx, r.jobID); err != nil {
		w.log.Warn("recording the job's end failed", "job", r.jobID, "error", err)
	}
}

// heartbeat tells the database this worker is alive: its row, and the
// attempted_at of every River job it is running, so that River's rescuer
// (which rescues jobs attempted longer than RescueAfter ago) takes only a
// dead worker's items.
func (w *Worker) heartbeat(ctx context.Context) error {
	st := w.Status()
	if _, err := w.c.pool.Exec(ctx, `UPDATE tenax_workers SET heartbeat = now(), jobs = $2, in_flight = $3, finished = $4 WHERE id = $1`,
		w.id, st.Jobs, st.InFlight, st.Finished); err != nil {
		return err
	}
	// Only the executions under way here: a River job left running by
	// an execution that ended while the database was away (River's
	// completer gave up on its snooze) must age into a rescue, not be
	// kept fresh by a worker that no longer runs it (the job then
	// never ended).
	//
	// A direct write to River's table: River has no API that extends
	// a running job's lease (its rescuer reads attempted_at alone, and
	// JobUpdate sets only a job's output), so a worker whose item runs
	// longer than rescue-after would lose it to a rescue. The UPDATE
	// touches only attempted_at, of this worker's running executions.
	_, err := w.c.pool.Exec(ctx, `UPDATE river_job SET attempted_at = now()
		WHERE state = 'running' AND attempted_by[array_length(attempted_by, 1)] = $1 AND id = ANY($2)`, w.id, w.liveIDs())
	return err
}

// liveIDs returns the ids of the River jobs whose executions are under
// way on this worker.
func (w *Worker) liveIDs() []int64 {
	w.liveMu.Lock()
	defer w.liveMu.Unlock()
	ids := make([]int64, 0, len(w.live))
	for id := range w.live {
		ids = append(ids, id)
	}
	return ids
}

// addNewJobs starts working on the jobs enqueued since the last look.
func (w *Worker) addNewJobs(ctx context.Context) {
	rows, err := w.c.pool.Query(ctx, `SELECT q.job_id FROM tenax_queues q JOIN tenax_jobs j ON j.id = q.job_id
		WHERE j.manifest->>'state' = 'running' ORDER BY q.created`)
	if err != nil {
		w.log.Warn("looking for jobs failed", "error", err)
		return
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		w.log.Warn("looking for jobs failed", "error", err)
		return
	}
	for _, id := range ids {
		w.mu.Lock()
		known := w.queues[id] || w.skipped[id]
		w.mu.Unlock()
		if known {
			continue
		}
		r, err := w.runnerFor(ctx, id)
		if err != nil {
			w.log.Error("cannot run job; other workers may", "job", id, "error", err)
			w.mu.Lock()
			w.skipped[id] = true
			w.mu.Unlock()
			continue
		}
		if err := w.river.Queues().Add(r.queue, river.QueueConfig{MaxWorkers: r.riverSlots()}); err != nil {
			w.log.Error("cannot work the job's queue", "job", id, "queue", r.queue, "error", err)
			w.mu.Lock()
			w.skipped[id] = true
			w.mu.Unlock()
			continue
		}
		w.mu.Lock()
		w.queues[id] = true
		w.mu.Unlock()
		w.log.Info("working on job", "job", id, "queue", r.queue, "concurrency", r.concurrency)
	}
}

// fail stops Run with err.
func (w *Worker) fail(err error) {
	select {
	case w.failure <- err:
	default:
	}
}

// runnerFor returns the job's runner, building it (or a new one after the
// last stopped) as needed.
func (w *Worker) runnerFor(ctx context.Context, jobID string) (*runner, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.runners[jobID]; r != nil && !r.isStopped() {
		return r, nil
	}
	r, err := newRunner(ctx, w, jobID)
	if err != nil {
		return nil, err
	}
	w.runners[jobID] = r
	return r, nil
}

// itemWorker is the River worker of tenax items.
type itemWorker struct {
	river.WorkerDefaults[ItemArgs]
	w *Worker
}

// legacyItemWorker is the River worker of the items enqueued before
// ItemKind, which carry their input in their arguments.
type legacyItemWorker struct {
	river.WorkerDefaults[LegacyItemArgs]
	w *Worker
}

// itemWorkers registers the item workers; w is nil for a client that only
// inserts.
func itemWorkers(w *Worker) *river.Workers {
	ws := river.NewWorkers()
	river.AddWorker(ws, &itemsWorker{w: w})
	river.AddWorker(ws, &itemWorker{w: w})
	river.AddWorker(ws, &legacyItemWorker{w: w})
	return ws
}

// Timeout is River's deadline for one execution and, together with
// RescueStuckJobsAfter, the age of attempted_at past which the rescuer
// takes a job. The heartbeat keeps attempted_at fresh while the worker
// lives, so only a dead worker's jobs reach it; the execution itself
// ignores the deadline (see Work).
func (iw *itemWorker) Timeout(*river.Job[ItemArgs]) time.Duration { return iw.w.timeout() }

// Timeout is itemWorker.Timeout.
func (lw *legacyItemWorker) Timeout(*river.Job[LegacyItemArgs]) time.Duration {
	return lw.w.timeout()
}

func (w *Worker) timeout() time.Duration {
	if w == nil {
		return DefaultRescueAfter
	}
	return w.cfg.RescueAfter
}

// Work hands the item to its job's engine and returns once the engine has
// recorded it (the River job is then already completed, in the record's
// transaction) or handed it back (the worker or the job stopped: the job
// is snoozed, to run again on any worker). The item's idx is in the River
// job's tag, its input in tenax_inputs.
func (iw *itemWorker) Work(ctx context.Context, j *river.Job[ItemArgs]) error {
	if idx, ok := idxOfTags(j.Tags); ok {
		j.Args.Idx = idx
	}
	return iw.w.work(ctx, j, nil)
}

// Work runs the item of its arguments as itemWorker.Work does.
func (lw *legacyItemWorker) Work(ctx context.Context, j *river.Job[LegacyItemArgs]) error {
	a := j.Args
	in := &storedInput{idx: a.Idx, id: a.ID, input: a.Input, bad: a.Bad}
	return lw.w.work(ctx, &river.Job[ItemArgs]{JobRow: j.JobRow, Args: ItemArgs{Job: a.Job, Idx: a.Idx, Round: a.Round}}, in)
}

// work runs one River execution of an item; in is its input when the
// River job carried it, nil to read it from tenax_inputs.
func (w *Worker) work(ctx context.Context, j *river.Job[ItemArgs], in *storedInput) error {
	return w.execute(ctx, j.ID, j.Args.Job, func(r *runner) error { return r.work(ctx, j, in) })
}

// execute runs River job riverID of job jobID with run, on the job's
// runner, counting it among the executions under way here (heartbeat).
func (w *Worker) execute(ctx context.Context, riverID int64, jobID string, run func(*runner) error) error {
	if w == nil {
		return errors.New("worker: this client only inserts")
	}
	w.liveMu.Lock()
	w.live[riverID]++
	w.liveMu.Unlock()
	defer func() {
		w.liveMu.Lock()
		if w.live[riverID]--; w.live[riverID] <= 0 {
			delete(w.live, riverID)
		}
		w.liveMu.Unlock()
	}()
	r, err := w.runnerFor(ctx, jobID)
	if errors.Is(err, errJobStopped) {
		// The job was aborted (its queue is paused) or this worker is
		// stopping: the items wait in the queue.
		return river.JobSnooze(5 * time.Second)
	}
	if err != nil {
		w.log.Error("cannot run job", "job", jobID, "error", err)
		if len(w.cfg.Jobs) > 0 {
			w.fail(err)
		}
		return river.JobSnooze(time.Minute)
	}
	return run(r)
}

// retryPolicy is River's retry policy for item jobs. River runs an item's
// job again only after its execution died with its worker (rescued) or
// returned an error (the record's transaction failed: a lost database);
// tenax's own retries happen inside the execution. The rescuer asks for
// the retry time before it adds its own error to the job, so the policy
// cannot tell a rescue apart: it waits 1s after the first failed
// execution, doubling up to about 4 minutes, so that a dead worker's
// items are taken over at once and a failing database is not hammered.
type retryPolicy struct{}

// NextRetry implements river.ClientRetryPolicy.
func (retryPolicy) NextRetry(j *rivertype.JobRow) time.Time {
	return time.Now().Add(time.Second << min(len(j.Errors), 8))
}

// quietLogger is River's logger: warnings and errors only, from l (the
// default logger when nil).
func quietLogger(l *slog.Logger) *slog.Logger {
	if l == nil {
		l = slog.Default()
	}
	return slog.New(levelHandler{Handler: l.Handler(), min: slog.LevelWarn})
}

type levelHandler struct {
	slog.Handler
	min slog.Level
}

func (h levelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.min && h.Handler.Enabled(ctx, l)
}

// Handle lowers River's routine reconnects to info: a lost connection
// logged ERROR by River's notifier, elector and producers at every retry
// of the reconnect, though River rides it out and the worker logs an
// outage itself (once, at warn, and exits 4 past --db-outage-limit).
func (h levelHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelError && routineRiverError(r.Message) {
		r.Level = slog.LevelInfo
		if r.Level < h.min || !h.Handler.Enabled(ctx, r.Level) {
			return nil
		}
	}
	return h.Handler.Handle(ctx, r)
}

// riverReconnects are the ends of River's messages (each begins with its
// service's name) that it logs at ERROR while it reconnects to, or
// retries against, a database that went away: they are routine.
var riverReconnects = []string{
	": Error running listener (will attempt reconnect after backoff)",
	": Error connecting listener",
	": Error from notification wait",
	": Error on draining notification wait",
	": Error attempting to elect",
	": Error keeping leadership",
	": Error attempting reelection",
	": Error fetching jobs",
	": Error fetching queue settings",
	": Error fetching job cancellation requests",
	": Producer status update, error updating in database",
	": Queue status update, error updating in database",
}

// routineRiverError reports whether msg is one of River's routine
// reconnect errors.
func routineRiverError(msg string) bool {
	for _, s := range riverReconnects {
		if strings.HasSuffix(msg, s) {
			return true
		}
	}
	return false
}

func (h levelHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelHandler{Handler: h.Handler.WithAttrs(attrs), min: h.min}
}

func (h levelHandler) WithGroup(name string) slog.Handler {
	return levelHandler{Handler: h.Handler.WithGroup(name), min: h.min}
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "unknown"
	}
	return h
}

// riverSlots is how many River executions of a job a worker runs at once
// for a concurrency of c and River jobs of group items each: enough for
// itemsPerPlace items per place, and at least two River jobs; four per
// place for River jobs of one item, each an execution of its own. At
// most c items are in the engine (runner.enter): the others are items
// whose records wait for their group's commit and items fetched ahead,
// ready when a call ends, so that River's fetch cooldown and the group
// commits' wait do not idle a worker's places. An item's stay on a worker
// is at least a group commit's wait (groupWait), so a worker's items per
// second are at most what it holds over that wait: at 16 places, 256
// items held allow about 10,000 a second, 64 (the four of one-item River
// jobs) 3,000 (docs/benchmarks.md).
func riverSlots(c, group int) int {
	if group <= 1 {
		return riverSlotsPerCall * c
	}
	return max(2, (itemsPerPlace*c+group-1)/group)
}

// riverSlotsPerCall is riverSlots' multiple for River jobs of one item.
const riverSlotsPerCall = 4

// itemsPerPlace is how many items of River jobs of several a worker holds
// per place of concurrency.
const itemsPerPlace = 16

// riverSlots is the package's riverSlots for the job's concurrency, or
// the concurrency itself for a job with check-ins: a check-in stops the
// job after the items taken when it came due, and items fetched ahead
// would run past it.
func (r *runner) riverSlots() int {
	if r.plan.Spec.CheckinEvery > 0 {
		return r.concurrency
	}
	return riverSlots(r.concurrency, r.groupItems)
}
