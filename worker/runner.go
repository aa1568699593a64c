package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/task"
	execTask "github.com/tenaxhq/tenax/task/exec"
	"github.com/tenaxhq/tenax/tracing"
)

// errPending is an execution's outcome when its item stopped without a
// record: its River job is snoozed, to run again on any worker.
var errPending = errors.New("worker: the item stopped without a record")

// errJobStopped is returned for a job whose shared breaker aborted it, or
// while the worker stops: its items wait in the queue.
var errJobStopped = errors.New("worker: the job is stopped")

// runner is one job on one worker: the engine built from the job's spec,
// whose Do each River execution calls.
type runner struct {
	w           *Worker
	jobID       string
	queue       string
	concurrency int
	// resumes is the job's count of resumes when this run of it was
	// built from its spec: a later resume stops it (resumed).
	resumes int
	// groupItems is how many items the job's River jobs hold (GroupItems
	// when they were enqueued).
	groupItems int
	plan       *job.Plan
	eng        *engine.Engine
	sj         *postgres.Job
	// groups records the process groups of the job's commands as the
	// items' notes (groups.go); nil for a task that starts none.
	groups *execTask.GroupFile
	shared *shared
	// trace follows the job's items for the worker's Tracer; nil when
	// it traces nothing.
	trace *tracing.Run

	stopped chan struct{} // closed once the engine stops taking items
	stopOne sync.Once
	done    chan struct{} // closed once the engine's Run returned

	// inputs reads the items' inputs for the River executions.
	inputs *inputLoader

	// running holds, by idx, a channel closed when the execution of
	// that item under way here ends: a second execution of the item (a
	// River job rescued while its first execution was alive after all,
	// or a later round) waits for it, then does not run it again.
	mu      sync.Mutex
	running map[int]chan struct{}

	// calls holds a token for each execution of this runner in the
	// engine: at most concurrency of them, while River runs up to
	// riverSlots, so that the executions whose records wait for their
	// group's commit (commit.go), and the next items River fetched, do
	// not keep items from being called.
	calls chan struct{}
	// commits writes the executions' records in groups (commit.go).
	commits *committer

	duplicates atomic.Int64

	// keptMu guards kept: the breaker counts per route of this run that
	// are in the job's manifest already (keepRouteBreakers adds the rest).
	keptMu sync.Mutex
	kept   map[string]store.RouteBreaker
}

// execution is an item's run in a River execution, carried in the
// context Do is given to the checkpoint's Append: its record is written
// in a transaction with others (commit.go), which completes its River job
// when the item is the River job's last.
type execution struct {
	idx, round int
	// riverID is the River job of one item (ItemKind) that the item's
	// record completes in its transaction; 0 for an item of a group.
	riverID int64
	// group is the River execution of the item's group (ItemsKind); nil
	// for a River job of one item.
	group *groupRun
	// leave gives back the execution's concurrency token (runner.enter)
	// once its record is made.
	leave func()
	err   error // why the record could not be written
	// rescued is set for an execution of a River job past its first
	// attempt: an earlier worker may have left process groups (groups.go).
	rescued bool
	// left says what became of them, for the item's record.
	left []string
}

// executionKey is the context key of the *execution.
type executionKey struct{}

// newRunner opens the job, builds its task from the stored spec source
// with this worker's environment, and starts its engine.
func newRunner(ctx context.Context, w *Worker, jobID string) (*runner, error) {
	if w.hard.Err() != nil {
		return nil, errJobStopped
	}
	var queue, specPath, source string
	var resumes, group int
	err := w.c.pool.QueryRow(ctx, `SELECT queue, spec_path, spec_source, resumes, group_items FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue, &specPath, &source, &resumes, &group)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	b, err := w.c.breaker(ctx, jobID)
	if err != nil {
		return nil, err
	}
	if b.aborted() {
		return nil, errJobStopped
	}
	plan, err := w.plan(jobID, specPath, source)
	if err != nil {
		return nil, err
	}
	sj, err := w.c.store.Open(ctx, jobID)
	if err != nil {
		_ = plan.Close()
		return nil, err
	}
	r := &runner{
		w: w, jobID: jobID, queue: queue, resumes: resumes, groupItems: max(1, group), plan: plan, sj: sj.(*postgres.Job),
		stopped: make(chan struct{}), done: make(chan struct{}),
		running: map[int]chan struct{}{},
		inputs:  &inputLoader{c: w.c, ctx: w.hard, jobID: jobID, resumes: resumes},
	}
	if err := r.start(ctx, b); err != nil {
		_ = plan.Close()
		return nil, err
	}
	return r, nil
}

// plan builds the job's plan from its stored spec source with this
// worker's environment and the job's store: its llm task's response cache
// is the one in the database, so an answer one worker paid for is a hit
// on every other. Plan.Close releases it.
func (w *Worker) plan(jobID, specPath, source string) (*job.Plan, error) {
	opts := w.cfg.Options
	opts.Logger = w.log.With("job", jobID)
	opts.Store = w.c.store
	plan, err := job.NewPlan(specPath, []byte(source), opts)
	if err != nil {
		return nil, fmt.Errorf("worker: building job %s from its spec: %w", jobID, err)
	}
	return plan, nil
}

// start makes the engine of r's plan, with the job's shared state (b, its
// breaker, among it), and starts it.
func (r *runner) start(ctx context.Context, b breakerRow) error {
	w, jobID, plan := r.w, r.jobID, r.plan
	cfg := plan.Config
	if w.cfg.Concurrency > 0 {
		cfg.Concurrency = w.cfg.Concurrency
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	r.setConcurrency(cfg.Concurrency)
	if err := r.share(ctx, &cfg); err != nil {
		return err
	}
	logEvents := r.traced(cfg.OnEvent)
	var observe func(engine.Event) // Config.OnJob's, set before the engine runs
	cfg.OnEvent = func(ev engine.Event) {
		r.event(ev)
		r.shared.failures.Observe(ev)
		if logEvents != nil {
			logEvents(ev)
		}
		if observe != nil {
			observe(ev)
		}
	}
	tk, err := r.task(ctx)
	if err != nil {
		return err
	}
	if w.cfg.validator != nil {
		cfg.Validator = w.cfg.validator
	}
	cfg.Routes = plan.Routes(tk, cfg.Routes)
	if w.cfg.wrapRoutes != nil {
		cfg.Routes = w.cfg.wrapRoutes(cfg.Routes)
	}
	r.eng = engine.New(cfg, tk, plan.Checkpoint(&txJob{r: r}))
	r.shared.followPause(b) // a job paused already: held from the first call
	if w.cfg.OnJob != nil {
		observe = w.cfg.OnJob(JobRun{ID: jobID, Spec: plan.Spec, Stats: r.eng.Stats})
	}
	go r.run()
	go r.shared.poll()
	return nil
}

// task is the plan's task as this worker runs it. An agent's steps are
// the job's notes in PostgreSQL: whichever worker runs an item next goes
// on at its last recorded step.
func (r *runner) task(ctx context.Context) (task.Task, error) {
	tk := r.plan.Task
	if r.w.cfg.wrapTask != nil {
		tk = r.w.cfg.wrapTask(tk)
	}
	var err error
	tk, r.groups, err = r.recordGroups(tk)
	if err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", r.jobID, err)
	}
	tk, err = r.plan.Durable(ctx, tk, r.sj)
	if err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", r.jobID, err)
	}
	return tk, nil
}

// share makes the job's state that all its workers hold together (the
// operator, the budget, rate limits, the run's breaker, each route's
// breaker, cooldowns and told limits) the engine's, in place of the
// engine's own.
func (r *runner) share(ctx context.Context, cfg *engine.Config) error {
	var err error
	if r.shared, err = newShared(ctx, r, *cfg); err != nil {
		return err
	}
	// Rate limits are the shared ones, not each engine's.
	cfg.RequestsPerMinute, cfg.TokensPerMinute = 0, 0
	cfg.Operator = r.shared
	cfg.Ledger = r.shared.ledger()
	cfg.SharedLimiter = r.shared
	cfg.SharedBreaker = r.shared
	cfg.QuotaShare = r.shared.quotaShare
	// Asked once per named route (none for a run's implicit route, whose
	// breaker and cooldown are the run's, shared above).
	cfg.SharedRoute = r.shared.sharedRoute
	return nil
}

// run runs the engine (its trips and check-ins) until it stops and the
// executions under way have ended, then records why a stopped job
// stopped.
func (r *runner) run() {
	defer close(r.done)
	sum, err := r.eng.Run(r.w.hard, nil)
	if r.trace != nil {
		r.trace.End(nil, nil)
	}
	r.stop("engine ended")
	ctx := context.WithoutCancel(r.w.hard)
	if err != nil {
		r.w.log.Error("job's engine failed", "job", r.jobID, "error", err)
		r.w.fail(fmt.Errorf("worker: job %s: %w", r.jobID, err))
	}
	switch sum.Stop {
	case engine.StopBreaker, engine.StopOperator, engine.StopBudget:
		if uerr := r.recordStop(ctx, sum.StopDetail); uerr != nil {
			r.w.log.Warn("recording the job's stop failed", "job", r.jobID, "error", uerr)
		}
	}
	if err := r.keepRouteBreakers(ctx, sum.Routes); err != nil {
		r.w.log.Warn("keeping the routes' breaker counts failed", "job", r.jobID, "error", err)
	}
	r.shared.close()
	if err := r.plan.Close(); err != nil {
		r.w.log.Warn("closing the job's response cache failed", "job", r.jobID, "error", err)
	}
}

// keepRouteBreakers adds this run's breaker counts per route to the job's
// manifest, where each worker's add up for status: what routes counts
// beyond what an earlier call kept, so that the counts can be kept as the
// job drains (a worker outlives the jobs it finished) and again as the
// run ends, each counted once.
func (r *runner) keepRouteBreakers(ctx context.Context, routes []engine.RouteStats) error {
	r.keptMu.Lock()
	defer r.keptMu.Unlock()
	more := map[string]store.RouteBreaker{}
	for _, rt := range routes {
		k := r.kept[rt.Name]
		if rt.Name != "" && (rt.Faults > k.Faults || rt.Refused > k.Refused) {
			more[rt.Name] = store.RouteBreaker{Faults: rt.Faults - k.Faults, Refused: rt.Refused - k.Refused}
		}
	}
	if len(more) == 0 {
		return nil
	}
	// Bounded: a worker ending because the database is gone must not
	// hang on it.
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := r.sj.UpdateManifest(ctx, func(m *store.Manifest) {
		for name, rb := range more {
			m.AddRouteBreaker(name, rb.Faults, rb.Refused)
		}
	})
	if err != nil {
		return err
	}
	if r.kept == nil {
		r.kept = map[string]store.RouteBreaker{}
	}
	for name, rb := range more {
		k := r.kept[name]
		r.kept[name] = store.RouteBreaker{Faults: k.Faults + rb.Faults, Refused: k.Refused + rb.Refused}
	}
	return nil
}

// errResumed is the answer to an execution that reached a run of its job
// built before the job's latest resume.
var errResumed = errors.New("worker: the job was resumed since this run of it started")

// stopResumed is why a run of a job stops when the job was resumed: the
// next execution builds a new run from the spec as the resume stored it.
const stopResumed = "the job was resumed: its items run from its spec as resumed"

// resumed reports whether the job was resumed since this run of it was
// built. A run that missed a resume must not go on: it would run the spec
// as it was (a budget since raised, a prompt since fixed), and what made
// it stop (its budget reached, its breaker open) is what the resume
// cleared.
func (r *runner) resumed(ctx context.Context) (bool, error) {
	var n int
	if err := r.w.c.pool.QueryRow(ctx, `SELECT resumes FROM tenax_queues WHERE job_id = $1`, r.jobID).Scan(&n); err != nil {
		return false, fmt.Errorf("worker: job %s: %w", r.jobID, err)
	}
	return n != r.resumes, nil
}

// recordStop marks the job aborted with detail, unless it was resumed
// since this run of it was built. The job's queue row is locked (FOR
// SHARE) until the manifest is written: a resume that begins meanwhile
// waits to count itself, then sets the job running; one that counted
// itself first is not overwritten.
func (r *runner) recordStop(ctx context.Context, detail string) error {
	return pgx.BeginFunc(ctx, r.w.c.pool, func(tx pgx.Tx) error {
		var n int
		if err := tx.QueryRow(ctx, `SELECT resumes FROM tenax_queues WHERE job_id = $1 FOR SHARE`, r.jobID).Scan(&n); err != nil {
			return err
		}
		if n != r.resumes {
			return nil
		}
		return r.sj.UpdateManifest(ctx, func(m *store.Manifest) {
			m.State, m.StopReason = store.StateAborted, detail
		})
	})
}

// stop makes the engine stop dispatching: calls in flight finish and are
// recorded, items waiting go back to River.
func (r *runner) stop(reason string) {
	r.closeStopped()
	// The engine emits Stopping, which closes stopped too: outside the
	// Once, or it would wait on itself.
	r.eng.Stop(engine.StopSignal, reason)
}

// closeStopped makes new executions hand their items back to River.
func (r *runner) closeStopped() { r.stopOne.Do(func() { close(r.stopped) }) }

func (r *runner) isStopped() bool {
	select {
	case <-r.stopped:
		return true
	default:
		return false
	}
}

// inFlight counts the executions under way here.
func (r *runner) inFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.running)
}

// setConcurrency sets how many of the runner's executions are in the
// engine at once, and the committer that groups their records.
func (r *runner) setConcurrency(n int) {
	r.concurrency = n
	r.calls = make(chan struct{}, n)
	r.commits = &committer{max: groupMax, wait: groupWait, calling: r.calling, stop: r.stopped, write: r.writeGroup}
}

// calling counts the executions in the engine, whose records are still
// to come.
func (r *runner) calling() int { return len(r.calls) }

// enter waits for one of the runner's concurrency tokens for an
// execution about to run its item in the engine; leave, called once the
// item's record is made or Do returned, gives it back. It fails once the
// job stops here or ctx ends.
func (r *runner) enter(ctx context.Context) (leave func(), err error) {
	select {
	case r.calls <- struct{}{}:
	case <-r.stopped:
		return nil, errPending
	case <-ctx.Done():
		return nil, errPending
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			<-r.calls
			// One execution fewer that could join the open group.
			r.commits.recheck()
		})
	}, nil
}

// work is the River execution of one item (ItemKind): it runs the item
// through the engine's Do under River's context, its record written in
// the transaction that completes the River job. An item stopped without
// a record is snoozed, to run again on any worker.
func (r *runner) work(ctx context.Context, j *river.Job[ItemArgs], in *storedInput) error {
	idx := j.Args.Idx
	end, waited, err := r.begin(ctx, idx)
	if err != nil {
		return river.JobSnooze(0)
	}
	defer end()
	if waited {
		// Another execution of the item ran here meanwhile: when it
		// recorded this round, only the River job is left to complete.
		recorded, err := r.completeRecorded(ctx, j)
		if err != nil {
			return err
		}
		if recorded {
			return nil
		}
	}
	item, bad, err := r.itemOf(idx, in)
	if errors.Is(err, errPending) {
		return river.JobSnooze(0)
	}
	if err != nil {
		return err
	}
	x := &execution{idx: idx, round: j.Args.Round, riverID: j.ID, rescued: j.Attempt > 1}
	err = r.call(ctx, x, item, bad, j.Metadata)
	if errors.Is(err, errPending) {
		return river.JobSnooze(0)
	}
	return err
}

// call runs one item through the engine's Do, as one of at most
// concurrency in the engine, under ctx, River's execution context. It
// returns nil once the item's record is committed, errPending when the
// item stopped without a record (the job or the worker stopping), and
// the error of a record that could not be written.
func (r *runner) call(ctx context.Context, x *execution, item task.Item, bad error, meta []byte) error {
	leave, err := r.enter(ctx)
	if err != nil {
		return errPending
	}
	defer leave()
	x.leave = leave
	if x.rescued && r.groups != nil {
		if x.left, err = r.endLeftGroups(ctx, x.idx); err != nil {
			return err
		}
	}
	cctx, cancel := r.callContext(ctx)
	defer cancel()
	cctx = context.WithValue(cctx, executionKey{}, x)
	if r.trace != nil {
		r.trace.ItemParent(x.idx, meta)
	}
	if bad != nil {
		_, err = r.eng.DoBad(cctx, &engine.BadItem{Item: item, Err: bad})
	} else {
		_, err = r.eng.Do(cctx, item)
	}
	switch {
	case x.err != nil:
		return x.err
	case err == nil:
		return nil
	case errors.Is(err, engine.ErrPending):
		return errPending
	default:
		return err
	}
}

// begin marks the item's execution under way here, first waiting for one
// already under way; waited says it had to. It fails once the job stops
// here or ctx ends.
func (r *runner) begin(ctx context.Context, idx int) (end func(), waited bool, err error) {
	for {
		r.mu.Lock()
		if r.isStopped() {
			r.mu.Unlock()
			return nil, waited, errPending
		}
		busy := r.running[idx]
		if busy == nil {
			ch := make(chan struct{})
			r.running[idx] = ch
			r.mu.Unlock()
			return func() {
				r.mu.Lock()
				delete(r.running, idx)
				idle := len(r.running) == 0
				r.mu.Unlock()
				close(ch)
				if idle && r.shared != nil {
					r.shared.idle.Store(true)
				}
			}, waited, nil
		}
		r.mu.Unlock()
		waited = true
		select {
		case <-busy:
		case <-r.stopped:
			return nil, waited, errPending
		case <-ctx.Done():
			return nil, waited, errPending
		}
	}
}

// completeRecorded completes j if its item's round is recorded already
// (tenax_finals), and reports whether it was.
func (r *runner) completeRecorded(ctx context.Context, j *river.Job[ItemArgs]) (bool, error) {
	recorded := false
	err := pgx.BeginFunc(ctx, r.w.c.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenax_finals WHERE job_id = $1 AND idx = $2 AND round = $3)`,
			r.jobID, j.Args.Idx, j.Args.Round).Scan(&recorded); err != nil || !recorded {
			return err
		}
		r.duplicates.Add(1)
		if _, err := river.JobCompleteTx[*riverpgxv5.Driver](ctx, tx, j); err != nil && !errors.Is(err, rivertype.ErrNotFound) {
			return fmt.Errorf("completing River job %d: %w", j.ID, err)
		}
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("worker: item %d of job %s: %w", j.Args.Idx, r.jobID, err)
	}
	return recorded, nil
}

// callContext is River's execution context for the item's calls, without
// River's deadline: the item's retries and heal loop may take longer, and
// the heartbeat keeps a live execution from being rescued. River's
// cancellation (StopAndCancel) and the worker's hard stop end it.
func (r *runner) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	unwatchRiver := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel(context.Cause(ctx))
		}
	})
	unwatchHard := context.AfterFunc(r.w.hard, func() { cancel(context.Cause(r.w.hard)) })
	return cctx, func() {
		unwatchRiver()
		unwatchHard()
		cancel(nil)
	}
}

// traced returns next preceded by the trace of the job's items, when the
// worker's Tracer is on; next alone otherwise.
func (r *runner) traced(next func(engine.Event)) func(engine.Event) {
	if !r.w.cfg.Tracer.Enabled() {
		return next
	}
	r.trace = r.w.cfg.Tracer.Follow(tracing.JobOf(r.jobID, r.plan.Spec))
	return chainEvents(r.trace.Observe, next)
}

// chainEvents returns a hook that calls first, then next when set.
func chainEvents(first, next func(engine.Event)) func(engine.Event) {
	if next == nil {
		return first
	}
	return func(ev engine.Event) { first(ev); next(ev) }
}

// event follows the engine: finished items are counted, the breaker is
// shared.
func (r *runner) event(ev engine.Event) {
	switch ev.Kind {
	case engine.ItemFinished:
		r.w.finished.Add(1)
	case engine.BreakerChanged:
		r.shared.breakerChanged(ev.State)
	case engine.Stopping:
		r.closeStopped()
	}
}

// itemOf returns the item a River job runs: in, its input when the River
// job carried it (LegacyItemArgs), else its input read from
// tenax_inputs. bad is why an input cannot run. A missing input cancels
// the River job, with the error saying so: the item stays pending until a
// resume, which stores the input again.
func (r *runner) itemOf(idx int, in *storedInput) (item task.Item, bad, err error) {
	if in != nil {
		item, bad = itemFrom(*in)
		return item, bad, nil
	}
	got, err := r.inputs.load(idx)
	switch {
	case errors.Is(err, errResumed):
		r.stop(stopResumed)
		return item, nil, errPending
	case errors.Is(err, errNoInput):
		return item, nil, river.JobCancel(fmt.Errorf("%w; `tenax resume %s --workers 0` enqueues it again", err, r.jobID))
	case err != nil && r.w.hard.Err() != nil:
		return item, nil, errPending
	case err != nil:
		return item, nil, err
	}
	item, bad = itemFrom(got)
	return item, bad, nil
}

// itemFrom rebuilds the task item from its stored input. An input that is
// not valid JSON (which the reader never gives) is an item failure: bad.
func itemFrom(in storedInput) (it task.Item, bad error) {
	it = task.Item{Idx: in.idx, ID: in.id, Raw: in.input}
	if in.bad != "" {
		return it, errors.New(in.bad)
	}
	dec := json.NewDecoder(bytes.NewReader(in.input))
	dec.UseNumber()
	if err := dec.Decode(&it.Fields); err != nil {
		return it, fmt.Errorf("item %d: %w", in.idx, err)
	}
	return it, nil
}

// txJob is the checkpoint the engine writes to: each record is appended,
// its (job, idx, round) claimed in tenax_finals, and its River job
// completed, in one transaction, which holds the records of the other
// executions grouped with it (commit.go). The River job is the execution
// in the context Do was given (work). A record whose (job, idx, round) is
// taken already (a duplicate execution) is not added; its River job is
// still completed.
type txJob struct{ r *runner }

// Append records recs with their River job, returning once the group
// that holds them committed.
func (t *txJob) Append(ctx context.Context, recs ...store.Record) error {
	r := t.r
	x, _ := ctx.Value(executionKey{}).(*execution)
	for i := range recs {
		rec := &recs[i]
		if x == nil || x.idx != rec.Idx {
			return fmt.Errorf("worker: a record for item %d, which no River job is running", rec.Idx)
		}
		x.leave()
		if len(x.left) > 0 && rec.Agent != nil {
			st := *rec.Agent
			st.LeftProcesses = x.left
			rec.Agent = &st
		}
		enc, err := postgres.Encode(*rec)
		if err == nil {
			p := &pending{x: x, rec: enc}
			if err = r.commits.add(ctx, p); err == nil {
				if p.added {
					r.shared.countCheckin(ctx)
				} else {
					r.duplicates.Add(1)
				}
				continue
			}
		}
		x.err = fmt.Errorf("worker: recording item %d of job %s: %w", rec.Idx, r.jobID, err)
		return x.err
	}
	return nil
}

// Flush returns at once: every record is committed by Append.
func (t *txJob) Flush(context.Context) error { return nil }

// drained reports whether the job's queue holds no River job that could
// still run.
func (c *Client) drained(ctx context.Context, queue string) (bool, error) {
	var live bool
	err := c.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM river_job WHERE queue = $1
		AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending'))`, queue).Scan(&live)
	return !live, err
}

// finalize sets a drained job's state from its outcomes.
func (c *Client) finalize(ctx context.Context, jobID string) error {
	j, err := c.store.Open(ctx, jobID)
	if err != nil {
		return err
	}
	defer j.Close()
	m := j.Manifest()
	if m.State != store.StateRunning {
		return nil
	}
	o, err := j.Outcomes(ctx)
	if err != nil {
		return err
	}
	_, failed, pending := o.Count(m.Items)
	state := store.StateCompleted
	switch {
	case failed > 0:
		state = store.StateFailed
	case pending > 0:
		state = store.StateIncomplete
	}
	return j.UpdateManifest(ctx, func(m *store.Manifest) {
		if m.State == store.StateRunning {
			m.State = state
		}
	})
}

// finalizeEvery is how often a runner checks whether its job is done.
const finalizeEvery = 2 * time.Second
