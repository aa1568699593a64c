package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Engine runs one task over a stream of items. Build one with New, call Run
// once: with a Source it pulls the items; with none, the items are pushed
// through Do (a queue's workers), which brings each to its outcome by the
// same path. Stop, Cooldown, ObserveQuota and Stats may be called from any
// goroutine while it runs.
//
// A run has two contexts, as River's client has: the context given to Run,
// under which calls are made (canceling it cancels calls in flight), and a
// dispatch context derived from it, under which everything waits (the
// gate, a retry's backoff, pacing). Stop cancels the dispatch context with
// a *StopError as its cause: nothing new starts, calls in flight finish and
// are recorded.
type Engine struct {
	cfg  Config
	job  Checkpoint
	br   *breaker.Breaker
	gate *gate

	routing routing
	// halt is canceled, with the stop's cause, by the first Stop: Do's
	// waits end on it as the dispatcher's end on its dispatch context.
	halt halt

	mu        sync.Mutex
	stopCause *StopError              // the first stop
	do        doCalls                 // Do calls under way, under mu
	cancelRun context.CancelCauseFunc // cancels the dispatch context, once Run made it
	runErr    error                   // the first failure of the run itself
	seen      seen                    // what the operator's questions report, under mu
	want      controlWants            // the control loop's requests, under mu
	idle      chan struct{}           // closed when active drops to 0
	active    atomic.Int64            // calls between the gate and their outcome

	limits limitReports // ConcurrencyChanged events, in the limit's order

	counted  [classify.Canceled + 1]bool // classes that count toward the breaker
	startedN atomic.Int64                // Run's start, unix nanoseconds

	n         counters
	exhausted atomic.Bool // the dispatcher read the end of the input
	// heldOpen: the breaker tripped and the run waits for the operator's
	// answer (or stops): it reads open, never half-open (breakerState).
	heldOpen atomic.Bool

	rest resting

	// hold is the operator's pause in force, nil for none.
	hold atomic.Pointer[Hold]
}

// routing is the run's deployments — Config.Routes, or the one implicit
// route of a run without them — and what the engine's gates add to them.
type routing struct {
	Routes
	// changed is closed and replaced when a route changes, for items
	// waiting for a route's probe.
	changed atomic.Pointer[chan struct{}]
	// noRouteReason says why the run's breaker tripped with no route,
	// under Engine.mu.
	noRouteReason string
}

// seen is what the run saw that the operator's questions report: the
// last failure, why the breaker last tripped, the last few records (for
// check-ins). Under Engine.mu.
type seen struct {
	lastFail   *Failure
	tripReason string
	latest     []store.Record
}

// halt is a context canceled with a cause, and its cancel.
type halt struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// counters are the run's totals and its items under way, read by Stats
// from any goroutine.
type counters struct {
	Tally
	inFlight atomic.Int64
}

// controlWants are the control loop's requests: set under Engine.mu, with
// a kick that never blocks the goroutine asking (a breaker listener inside
// a call).
type controlWants struct {
	trip, checkin bool
	kick          chan struct{}
}

// doCalls counts the Do calls under way; idle is closed when n drops to
// 0, if someone waits for it. Both under Engine.mu.
type doCalls struct {
	n    int
	idle chan struct{}
}

// limitReports orders ConcurrencyChanged events: limits move from many
// goroutines at once, and reading the limit and emitting under one lock
// keeps the events in the order the limit took.
type limitReports struct {
	mu   sync.Mutex
	last int // the limit last reported
}

// resting counts items waiting out a backoff or a server's hint: they make
// no call, so the dispatcher starts others in their place; kick is kicked
// when an item rests or ends.
type resting struct {
	n    atomic.Int64
	kick chan struct{}
}

// latestKept is how many recent records a check-in shows.
const latestKept = 5

// New returns an Engine that runs t over items and records outcomes in job
// (a store.Job is one).
func New(cfg Config, t task.Task, job Checkpoint) *Engine {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	e := &Engine{cfg: cfg, job: job, want: controlWants{kick: make(chan struct{}, 1)}, rest: resting{kick: make(chan struct{}, 1)}}
	e.halt.ctx, e.halt.cancel = context.WithCancelCause(context.Background())
	if cfg.BreakerCount == nil {
		for c := range e.counted {
			e.counted[c] = true
		}
	}
	for _, c := range cfg.BreakerCount {
		if int(c) < len(e.counted) {
			e.counted[c] = true
		}
	}
	bs := cfg.Breaker
	userHook := bs.OnStateChange
	bs.OnStateChange = func(from, to breaker.State, c breaker.Counts) {
		e.breakerChanged(from, to, c)
		if userHook != nil {
			userHook(from, to, c)
		}
	}
	e.br = breaker.New(bs)
	routes := routesOf(cfg, t)
	runCfg := cfg
	// Concurrency is learned at the gate nearest the call: a named
	// route's own, or the run's for the implicit route, whose gate it is.
	// The run's gate keeps the spec's told limits and the overall ceiling.
	runCfg.Adaptive = cfg.Adaptive && !hasOwnGate(routes[0])
	e.gate = newGate(runCfg, e.br, e.spentNow)
	e.newRoutes(cfg, routes)
	return e
}

// spentNow is what the run has spent, for the budget.
func (e *Engine) spentNow() (int64, float64) {
	return e.n.Spending()
}

// breakerState is the breaker's state as reported: open while the run
// holds it open for the operator's answer (or its end), though its reset
// timeout has passed. Reading the breaker would turn it half-open, which
// it is not: nothing is let through until Continue.
func (e *Engine) breakerState() breaker.State {
	if e.heldOpen.Load() {
		return breaker.Open
	}
	return e.br.State()
}

// Breaker returns the engine's circuit breaker, for reports.
func (e *Engine) Breaker() *breaker.Breaker { return e.br }

// Stop makes the run stop dispatching: calls in flight finish and are
// recorded, everything else stays pending. It may be called any number of
// times from any goroutine, before or during Run; the first reason wins.
func (e *Engine) Stop(reason StopReason, detail string) {
	e.stop(&StopError{Reason: reason, Detail: detail})
}

func (e *Engine) stop(cause *StopError) {
	if cause.Reason == StopNone {
		cause.Reason = StopOperator
	}
	e.mu.Lock()
	if e.stopCause != nil {
		e.mu.Unlock()
		return
	}
	e.stopCause = cause
	cancel := e.cancelRun
	e.mu.Unlock()
	e.halt.cancel(cause)
	if cancel != nil {
		cancel(cause)
	}
	e.emit(Event{Kind: Stopping, Reason: cause.Detail})
}

// failed records a failure of the run itself (its checkpoint, its input)
// and stops dispatch with it: exit 4 (docs/records.md). Only the first is kept.
func (e *Engine) failRun(err error) {
	e.mu.Lock()
	if e.runErr == nil {
		e.runErr = err
	}
	e.mu.Unlock()
	e.stop(&StopError{Reason: StopStorage, Detail: err.Error(), Err: err})
}

// Cooldown pauses every call until the given instant (a later cooldown
// extends an earlier one); when it ends, one call goes first and the rest
// follow once it meets no new cooldown.
func (e *Engine) Cooldown(until time.Time, reason string) {
	if e.gate.cooldown(until) {
		e.emit(Event{Kind: Cooldown, Until: until, Reason: reason})
	}
}

// ObserveQuota takes a provider's rate-limit headers, seen on a response.
// Limits the spec did not set pace calls from then on; an exhausted quota
// is a cooldown until its reset, or until the response's retry hint, which
// wins; and a 429 met while the quota showed room is sporadic: it delays
// only its own item.
func (e *Engine) ObserveQuota(q Quota) {
	q, _ = e.heard(q, callStart{})
	if until, reason := e.gate.learn(q, int(e.gate.conc.executing.Load())); !until.IsZero() {
		e.Cooldown(until, reason)
	}
}

// heard is a provider's headers q, seen on the answer to call c, as the
// gates learn from them: this engine's share of a quota other engines
// spend from, undated (their calls since are not counted here), and the
// retry hint as the retry policy takes it.
func (e *Engine) heard(q Quota, c callStart) (Quota, callStart) {
	if e.cfg.QuotaShare != nil {
		q = q.share(e.cfg.QuotaShare())
		c = callStart{}
	}
	if e.cfg.Retry.MaxHint < 0 {
		q.RetryAfter = 0 // hints are off
	}
	q.RetryAfter = min(q.RetryAfter, e.maxHint())
	return q, c
}

// Stats returns the run's counters now.
func (e *Engine) Stats() Stats {
	var started time.Time
	if n := e.startedN.Load(); n != 0 {
		started = time.Unix(0, n)
	}
	paused, pausedSince, resumed := e.gate.pauses.read(time.Now())
	s := Stats{
		Paused:      paused,
		PausedSince: pausedSince,
		Resumed:     resumed,
		Started:     started,
		Total:       e.cfg.Total,
		Skipped:     e.cfg.Skipped,
		Planned:     e.planned(),
		InFlight:    int(e.gate.conc.executing.Load()),
		Limit:       e.gate.conc.Limit(),
		Breaker:     e.breakerState(),
		Routes:      e.routing.Stats(),
		Hold:        e.holdNow(),
	}
	e.n.Fill(&s)
	return s
}

// Run dispatches every item of src and returns when each dispatched item
// has its outcome. Canceling ctx cancels the calls in flight (their items
// stay pending); Stop ends the run gracefully. The returned error is a
// failure of the run itself — the source could not be read, the
// checkpoint could not be written — never an item's failure, which the
// Summary counts; the Summary's Stop is then StopStorage.
//
// With a nil src the items come through Do (a queue's workers push them):
// Run handles trips and check-ins until the run stops or ctx ends, then
// waits for the Do calls under way.
func (e *Engine) Run(ctx context.Context, src Source) (Summary, error) {
	start := time.Now()
	e.startedN.Store(start.UnixNano())
	dctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	e.mu.Lock()
	e.cancelRun = cancel
	early := e.stopCause
	e.mu.Unlock()
	if early != nil {
		cancel(early)
	}

	controlCtx, stopControl := context.WithCancel(ctx)
	controlDone := make(chan struct{})
	go func() {
		defer close(controlDone)
		e.controlLoop(controlCtx)
	}()
	followed := e.followRoutes(controlCtx)

	if src == nil {
		<-dctx.Done()
		if ctx.Err() != nil {
			// Refuse new items before waiting for those under way.
			e.Stop(StopSignal, "interrupted")
		}
		e.waitDo()
	} else {
		d := dispatcher{e: e, src: src, ctx: ctx, dctx: dctx}
		d.run()
	}

	stopControl()
	<-controlDone
	followed()
	if err := e.job.Flush(context.WithoutCancel(ctx)); err != nil {
		e.failRun(fmt.Errorf("engine: flushing the checkpoint: %w", err))
	}
	if ctx.Err() != nil {
		// A canceled context without a Stop is an interruption.
		e.Stop(StopSignal, "interrupted")
	}
	s := Summary{Stats: e.Stats(), Elapsed: time.Since(start)}
	e.mu.Lock()
	if e.stopCause != nil {
		s.Stop, s.StopDetail = e.stopCause.Reason, e.stopCause.Detail
	}
	s.LastFailure = e.seen.lastFail
	err := e.runErr
	e.mu.Unlock()
	if e.cfg.Total > 0 {
		s.Pending = max(0, e.cfg.Total-e.cfg.Skipped-s.Done)
	}
	return s, err
}

// ErrPending is Do's answer for an item that stopped without a record:
// the run stopped, or ctx ended, first. The item stays pending.
var ErrPending = errors.New("engine: the item stopped without a record")

// Do brings one item to its outcome, as Run does for each item of its
// source: gate, prepare, call, classify and retry, validate and heal,
// record. It returns the record once it is written (the checkpoint's
// Append is given ctx, values and all, without its cancellation), or
// ErrPending. Calls are made under ctx; waits end on ctx or on the run's
// Stop. Do may be called from any number of goroutines, with Run(ctx,
// nil) handling the run's trips and check-ins beside them.
func (e *Engine) Do(ctx context.Context, item task.Item) (store.Record, error) {
	dctx, done, ok := e.beginDo(ctx)
	if !ok {
		e.pending(item)
		return store.Record{}, ErrPending
	}
	defer done()
	r := &itemRun{item: item}
	if !e.runItem(ctx, dctx, r) {
		return store.Record{}, ErrPending
	}
	return r.out[0], nil
}

// DoBad records an item that cannot run (an input that is not an
// object), as Run does for a *BadItem from its source.
func (e *Engine) DoBad(ctx context.Context, bad *BadItem) (store.Record, error) {
	_, done, ok := e.beginDo(ctx)
	if !ok {
		e.pending(bad.Item)
		return store.Record{}, ErrPending
	}
	defer done()
	rec, recorded := e.recordBad(ctx, bad)
	if !recorded {
		return store.Record{}, ErrPending
	}
	return rec, nil
}

// beginDo counts a Do call under way, unless the run has stopped, and
// returns its dispatch context: ctx, canceled also by Stop.
func (e *Engine) beginDo(ctx context.Context) (dctx context.Context, done func(), ok bool) {
	e.mu.Lock()
	if e.stopCause != nil {
		e.mu.Unlock()
		return nil, nil, false
	}
	e.do.n++
	e.mu.Unlock()
	if e.startedN.Load() == 0 {
		e.startedN.CompareAndSwap(0, time.Now().UnixNano())
	}
	dctx, cancel := context.WithCancelCause(ctx)
	unwatch := context.AfterFunc(e.halt.ctx, func() { cancel(context.Cause(e.halt.ctx)) })
	return dctx, func() {
		unwatch()
		cancel(nil)
		e.mu.Lock()
		e.do.n--
		if e.do.n == 0 && e.do.idle != nil {
			close(e.do.idle)
			e.do.idle = nil
		}
		e.mu.Unlock()
	}, true
}

// waitDo waits until no Do call is under way. Called once the run has
// stopped, so no new one begins.
func (e *Engine) waitDo() {
	e.mu.Lock()
	for e.do.n > 0 {
		if e.do.idle == nil {
			e.do.idle = make(chan struct{})
		}
		ch := e.do.idle
		e.mu.Unlock()
		<-ch
		e.mu.Lock()
	}
	e.mu.Unlock()
}

// dispatcher reads items and hands them to workers: long-lived goroutines,
// started as items need them up to the most that can run, since a
// goroutine per item would grow a fresh stack for every item whose call
// goes deep. The gate, not the number of workers, decides how many calls
// go at once.
type dispatcher struct {
	e         *Engine
	src       Source
	ctx, dctx context.Context

	work    chan task.Item
	workers int
	wg      sync.WaitGroup // items handed to workers and not yet ended
	pool    sync.WaitGroup // the workers

	inBatch    int
	sentOnce   bool
	prefetched *task.Item // read ahead at a batch boundary
	pendingErr error      // the error read ahead instead
}

// maxWorkers bounds the items under way at twice Config.Concurrency, and
// never more than the items that can run: a spec's concurrency.max of a
// million over ten items starts ten. Config.Concurrency bounds calls (the
// gate's limit, which adaptive concurrency moves below it); the items
// beyond it are those that took the place of items waiting out a backoff
// (see waitRoom), so a retry's wait does not cost the run a call slot, and a
// run whose every call fails still spreads its retries over no more than
// twice the limit of items. A job with concurrency.max 1 asked for its
// items one at a time, in input order: there a resting item keeps its
// place.
func (d *dispatcher) maxWorkers() int {
	n := d.e.cfg.Concurrency
	if n > 1 {
		n *= 2
	}
	if d.e.cfg.Total > 0 {
		n = min(n, max(d.e.planned(), 1))
	}
	return n
}

// waitRoom blocks while Config.Concurrency items are awake (under way and
// not resting before a retry), and returns the dispatch context's cause
// if the run stops first. An item that rests or ends kicks e.rest.kick; the
// kick is buffered, so one that lands between the count and the wait is
// not lost.
func (d *dispatcher) waitRoom() error {
	e := d.e
	for e.awake() >= int64(e.cfg.Concurrency) {
		select {
		case <-e.rest.kick:
		case <-d.dctx.Done():
			return context.Cause(d.dctx)
		}
	}
	return nil
}

// awake counts the items under way that are not resting before a retry;
// with concurrency.max 1 a resting item counts too (see maxWorkers).
func (e *Engine) awake() int64 {
	n := e.n.inFlight.Load()
	if e.cfg.Concurrency > 1 {
		n -= e.rest.n.Load()
	}
	return n
}

// kickRoom tells a dispatcher waiting in waitRoom to count again.
func (e *Engine) kickRoom() {
	select {
	case e.rest.kick <- struct{}{}:
	default:
	}
}

// Long: the dispatch loop's one select over pulls, settles and stops, so its wake-ups read together.
func (d *dispatcher) run() {
	e := d.e
	d.work = make(chan task.Item)
	limit := d.maxWorkers()
	defer func() {
		d.wg.Wait()
		close(d.work)
		d.pool.Wait()
	}()
	for {
		if e.waitDispatchable(d.dctx) != nil {
			return
		}
		item, err := d.next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				e.exhausted.Store(true)
				return
			}
			var bad *BadItem
			if errors.As(err, &bad) {
				if _, ok := e.recordBad(d.ctx, bad); !ok {
					return
				}
				continue
			}
			e.failRun(fmt.Errorf("engine: reading items: %w", err))
			return
		}
		if d.sentOnce && e.cfg.Pacing.ItemDelay > 0 && sleep(d.dctx, e.cfg.Pacing.ItemDelay) != nil {
			e.pending(item)
			return
		}
		if d.waitRoom() != nil {
			e.pending(item)
			return
		}
		d.sentOnce = true
		e.n.inFlight.Add(1)
		d.wg.Add(1)
		select {
		case d.work <- item:
		default:
			if d.workers < limit {
				d.workers++
				d.pool.Go(d.worker)
			}
			select {
			case d.work <- item:
			case <-d.dctx.Done():
				e.n.inFlight.Add(-1)
				d.wg.Done()
				e.pending(item)
				return
			}
		}
		if n := e.cfg.Pacing.BatchSize; n > 0 {
			d.inBatch++
			if d.inBatch == n {
				d.inBatch = 0
				d.wg.Wait()
				it, err := d.src.Next()
				if errors.Is(err, io.EOF) {
					e.exhausted.Store(true)
					return
				}
				if err != nil {
					// Let the loop's own handling see it.
					d.prefetchErr(err)
				} else {
					d.prefetched = &it
				}
				if e.cfg.Pacing.BatchDelay > 0 && sleep(d.dctx, e.cfg.Pacing.BatchDelay) != nil {
					if d.prefetched != nil {
						e.pending(*d.prefetched)
					}
					return
				}
			}
		}
	}
}

func (d *dispatcher) worker() {
	// One itemRun for all the worker's items: an item allocates nothing
	// of its own.
	r := new(itemRun)
	for item := range d.work {
		r.reset(item)
		d.e.runItem(d.ctx, d.dctx, r)
		d.e.n.inFlight.Add(-1)
		d.e.kickRoom()
		d.wg.Done()
	}
}

// next returns the item read ahead, if any, else the source's next.
func (d *dispatcher) next() (task.Item, error) {
	if d.prefetched != nil {
		it := *d.prefetched
		d.prefetched = nil
		return it, nil
	}
	if d.pendingErr != nil {
		err := d.pendingErr
		d.pendingErr = nil
		return task.Item{}, err
	}
	return d.src.Next()
}

func (d *dispatcher) prefetchErr(err error) { d.pendingErr = err }

// waitDispatchable blocks while the run is paused or its breaker open, so
// that no item is read only to wait; it returns the stop's cause once the
// run stops. It only looks at the gate: a permit taken here and given back
// would count as a request in the breaker's counts.
func (e *Engine) waitDispatchable(ctx context.Context) error {
	for {
		changed := *e.gate.changed.Load()
		var t *time.Timer
		var timer <-chan time.Time
		if !e.gate.closed() {
			if e.br.State() != breaker.Open {
				return nil
			}
			d := time.Until(e.br.ReadyAt())
			if d <= 0 {
				return nil
			}
			t = time.NewTimer(d)
			timer = t.C
		}
		select {
		case <-ctx.Done():
			if t != nil {
				t.Stop()
			}
			return context.Cause(ctx)
		case <-changed:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
	}
}

// sleep waits d, or returns ctx's cause if it ends first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (e *Engine) emit(ev Event) {
	if e.cfg.OnEvent == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	e.cfg.OnEvent(ev)
}

// recordBad records an item that failed before any call and returns its
// record. It reports false when the record could not be written (the run
// then stops).
func (e *Engine) recordBad(ctx context.Context, bad *BadItem) (store.Record, bool) {
	rec := bad.Record()
	return rec, e.finish(context.WithoutCancel(ctx), bad.Item, rec, new([1]store.Record), &Failure{Item: bad.Item, Err: bad.Err, Decision: classify.Decision{Class: classify.Item, Reason: "bad input line"}})
}

// finish appends the record, updates counters and schedules a check-in. A
// record that cannot be written stops the run (exit 4): the item stays
// pending, since nothing says it finished, and it reports false. ctx is
// the Append's, already without its cancellation; buf holds Append's
// argument (which an Append may redact in place: the events and Do see
// rec as built).
func (e *Engine) finish(ctx context.Context, item task.Item, rec store.Record, buf *[1]store.Record, f *Failure) bool {
	buf[0] = rec
	if err := e.job.Append(ctx, buf[:]...); err != nil {
		e.failRun(fmt.Errorf("engine: writing the checkpoint for item %d: %w", rec.Idx, err))
		e.pending(item)
		return false
	}
	done := e.n.Recorded(f != nil)
	checkin := false
	if f != nil || (e.cfg.CheckinEvery > 0 && e.cfg.Operator != nil) {
		e.mu.Lock()
		if f != nil {
			e.seen.lastFail = f
		}
		if e.cfg.CheckinEvery > 0 && e.cfg.Operator != nil {
			if len(e.seen.latest) == latestKept {
				copy(e.seen.latest, e.seen.latest[1:])
				e.seen.latest = e.seen.latest[:latestKept-1]
			}
			e.seen.latest = append(e.seen.latest, rec)
			last := e.cfg.Total > 0 && done >= int64(e.planned())
			if done%int64(e.cfg.CheckinEvery) == 0 && !e.gate.paused.Load() && !last {
				e.gate.pause()
				checkin = true
			}
		}
		e.mu.Unlock()
	}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemFinished, Item: item, Record: rec, Err: errOf(f), Decision: decisionOf(f)})
	}
	if checkin {
		e.requestControl(func() { e.want.checkin = true })
	}
	return true
}

func errOf(f *Failure) error {
	if f == nil {
		return nil
	}
	return f.Err
}

func decisionOf(f *Failure) classify.Decision {
	if f == nil {
		return classify.Decision{}
	}
	return f.Decision
}

// maxHint is the retry policy's cap on server hints.
func (e *Engine) maxHint() time.Duration {
	if h := e.cfg.Retry.MaxHint; h > 0 {
		return h
	}
	return 2 * time.Minute
}

// planned is how many items the run means to finish.
func (e *Engine) planned() int {
	all := max(e.cfg.Total-e.cfg.Skipped, 0)
	if e.cfg.Planned > 0 && e.cfg.Planned < all {
		return e.cfg.Planned
	}
	return all
}

// account adds a call's usage and cost to the item and the run, and
// corrects the token limiter from the real usage: spending more than the
// estimate takes the difference as debt.
func (e *Engine) account(r *itemRun, res task.Result, estimate int) {
	r.Account(res)
	e.n.Spent(res)
	if res.Usage.Total() == 0 && res.CostUSD == 0 {
		return
	}
	if tok := e.gate.tok.Load(); tok != nil && estimate > 0 {
		if extra := int(res.Usage.Total()) - estimate; extra > 0 {
			tok.ReserveN(time.Now(), min(extra, tok.Burst()))
		}
	}
}
