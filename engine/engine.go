package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Engine runs one task over a stream of items. Build one with New, call Run
// once. Stop, Cooldown and Stats may be called from any goroutine while it
// runs.
type Engine struct {
	cfg    Config
	task   task.Task
	job    store.Job
	br     *breaker.Breaker
	est    Estimator
	cacher Cacher

	reqLimit *rate.Limiter
	tokLimit *rate.Limiter
	slots    slots
	adapt    adaptive

	mu         sync.Mutex
	stopReason StopReason
	stopDetail string
	stopping   chan struct{} // closed by the first stop
	changed    chan struct{} // closed and replaced when the gate may open
	paused     bool          // a trip or check-in awaits the operator
	cooldown   time.Time     // no call before this instant
	// After a cooldown, calls go one at a time until one ends without
	// setting a new cooldown, so the waiting items do not all call at the
	// instant it expires and meet a 429 together.
	cooling     bool
	probing     bool   // the one post-cooldown call is under way
	cooldownSeq uint64 // counts cooldowns set or extended
	lastFailure *Failure
	tripReason  string
	latest      []store.Record // the last few records, for check-ins
	activeCalls int
	idle        chan struct{} // closed when activeCalls drops to 0
	// The control loop's requests: flags set under mu, and a kick that
	// never blocks the goroutine asking (a breaker listener inside a call).
	tripWanted    bool
	checkinWanted bool
	control       chan struct{}

	started   time.Time
	done      atomic.Int64
	succeeded atomic.Int64
	failed    atomic.Int64
	inFlight  atomic.Int64
	retries   atomic.Int64
	heals     atomic.Int64
	calls     atomic.Int64
	inTokens  atomic.Int64
	outTokens atomic.Int64
	costMicro atomic.Int64 // cost in millionths of a dollar
	reserved  atomic.Int64 // estimated tokens of the calls under way
	exhausted atomic.Bool  // the dispatcher has read the end of the input
	trips     atomic.Int64
}

// latestKept is how many recent records a check-in shows.
const latestKept = 5

// New returns an Engine that runs t over items and records outcomes in job.
func New(cfg Config, t task.Task, job store.Job) *Engine {
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 8
	}
	e := &Engine{
		cfg:      cfg,
		task:     t,
		job:      job,
		stopping: make(chan struct{}),
		changed:  make(chan struct{}),
		control:  make(chan struct{}, 1),
	}
	if est, ok := t.(Estimator); ok {
		e.est = est
	}
	if c, ok := t.(Cacher); ok {
		e.cacher = c
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
	if cfg.RequestsPerMinute > 0 {
		perSec := float64(cfg.RequestsPerMinute) / 60
		e.reqLimit = rate.NewLimiter(rate.Limit(perSec), max(1, int(math.Ceil(perSec))))
	}
	if cfg.TokensPerMinute > 0 {
		perSec := float64(cfg.TokensPerMinute) / 60
		// The burst must hold the largest single call, or WaitN refuses it.
		e.tokLimit = rate.NewLimiter(rate.Limit(perSec), max(cfg.TokensPerMinute/6, 1))
	}
	limit := cfg.Concurrency
	if cfg.Adaptive {
		limit = cfg.InitialConcurrency
		if limit <= 0 {
			limit = min(4, cfg.Concurrency)
		}
		limit = min(limit, cfg.Concurrency)
	}
	e.slots.limit = limit
	e.adapt.max = cfg.Concurrency
	return e
}

// Breaker returns the engine's circuit breaker, for reports.
func (e *Engine) Breaker() *breaker.Breaker { return e.br }

// Stop makes the run stop dispatching: calls in flight finish and are
// recorded, everything else stays pending. The first reason wins.
func (e *Engine) Stop(reason StopReason, detail string) {
	e.mu.Lock()
	if e.stopReason != StopNone {
		e.mu.Unlock()
		return
	}
	e.stopReason, e.stopDetail = reason, detail
	close(e.stopping)
	e.mu.Unlock()
	e.emit(Event{Kind: Stopping, Reason: detail})
}

// Cooldown pauses every call until the given instant (a later cooldown
// extends an earlier one). The LLM task's rate-limit headers call it when a
// provider's remaining quota is exhausted, and the engine itself when a 429
// carries a retry hint.
func (e *Engine) Cooldown(until time.Time, reason string) {
	e.mu.Lock()
	extended := until.After(e.cooldown)
	if extended {
		e.cooldown = until
		e.cooling = true
		e.cooldownSeq++
	}
	e.mu.Unlock()
	if extended {
		e.emit(Event{Kind: Cooldown, Until: until, Reason: reason})
	}
}

// Stats returns the run's counters now.
func (e *Engine) Stats() Stats {
	return Stats{
		Started:      e.started,
		Total:        e.cfg.Total,
		Skipped:      e.cfg.Skipped,
		Planned:      e.planned(),
		Done:         int(e.done.Load()),
		Succeeded:    int(e.succeeded.Load()),
		Failed:       int(e.failed.Load()),
		InFlight:     int(e.inFlight.Load()),
		Retries:      int(e.retries.Load()),
		HealAttempts: int(e.heals.Load()),
		Calls:        int(e.calls.Load()),
		Limit:        e.slots.Limit(),
		Breaker:      e.br.State(),
		Trips:        int(e.trips.Load()),
		Usage:        task.Usage{InputTokens: e.inTokens.Load(), OutputTokens: e.outTokens.Load()},
		CostUSD:      float64(e.costMicro.Load()) / 1e6,
	}
}

// Run dispatches every item of src and returns when each dispatched item
// has its outcome. Canceling ctx cancels the calls in flight (their items
// stay pending); Stop ends the run gracefully. The returned error is for
// failures of the run itself (the source, the checkpoint), never for item
// failures, which the Summary counts.
func (e *Engine) Run(ctx context.Context, src Source) (Summary, error) {
	e.started = time.Now()
	controlDone := make(chan struct{})
	controlCtx, stopControl := context.WithCancel(ctx)
	go func() {
		defer close(controlDone)
		e.controlLoop(controlCtx)
	}()

	var (
		wg       sync.WaitGroup
		runErr   error
		inBatch  int
		sentOnce bool
		// prefetched holds an item read ahead at a batch boundary, so that
		// the last batch does not sleep its delay before seeing the end.
		prefetched  *task.Item
		prefetchErr error
	)
	next := func() (task.Item, error) {
		if prefetched != nil || prefetchErr != nil {
			it, err := prefetched, prefetchErr
			prefetched, prefetchErr = nil, nil
			if err != nil {
				return task.Item{}, err
			}
			return *it, nil
		}
		return src.Next()
	}
	// Long-lived workers, as many as the most slots there can be, run the
	// items: a goroutine per item would grow a fresh stack for every item
	// whose call goes deep (an SDK, the checkpoint's JSON checks), which
	// cost a third of the engine's time. The slots still decide how many
	// items run at once.
	work := make(chan task.Item)
	var workers sync.WaitGroup
	for range e.cfg.Concurrency {
		workers.Go(func() {
			for item := range work {
				e.runItem(ctx, item)
				e.inFlight.Add(-1)
				e.slots.release()
				wg.Done()
			}
		})
	}
dispatch:
	for {
		if !e.waitDispatchable(ctx) {
			break
		}
		if !e.slots.acquire(ctx, e.stopping) {
			break
		}
		item, err := next()
		if err != nil {
			e.slots.release()
			if errors.Is(err, io.EOF) {
				e.exhausted.Store(true)
				break
			}
			var bad *BadItem
			if errors.As(err, &bad) {
				if rerr := e.recordBad(ctx, bad); rerr != nil {
					runErr = rerr
					e.Stop(StopOperator, rerr.Error())
					break dispatch
				}
				continue
			}
			runErr = fmt.Errorf("engine: reading items: %w", err)
			e.Stop(StopOperator, runErr.Error())
			break
		}
		if sentOnce && e.cfg.Pacing.ItemDelay > 0 {
			if !e.sleep(ctx, e.cfg.Pacing.ItemDelay) {
				e.slots.release()
				break
			}
		}
		sentOnce = true
		e.inFlight.Add(1)
		wg.Add(1)
		work <- item
		if n := e.cfg.Pacing.BatchSize; n > 0 {
			inBatch++
			if inBatch == n {
				inBatch = 0
				wg.Wait()
				it, err := src.Next()
				if errors.Is(err, io.EOF) {
					e.exhausted.Store(true)
					break
				}
				prefetched, prefetchErr = &it, err
				if e.cfg.Pacing.BatchDelay > 0 && !e.sleep(ctx, e.cfg.Pacing.BatchDelay) {
					break
				}
			}
		}
	}
	wg.Wait()
	close(work)
	workers.Wait()
	stopControl()
	<-controlDone

	flushCtx := context.WithoutCancel(ctx)
	if err := e.job.Flush(flushCtx); err != nil && runErr == nil {
		runErr = fmt.Errorf("engine: flushing the checkpoint: %w", err)
	}
	e.mu.Lock()
	unstopped := e.stopReason == StopNone
	e.mu.Unlock()
	if unstopped && ctx.Err() != nil {
		// A canceled context without a Stop is an interruption.
		e.Stop(StopSignal, "interrupted")
	}
	s := Summary{Stats: e.Stats(), Elapsed: time.Since(e.started)}
	e.mu.Lock()
	s.Stop, s.StopDetail, s.LastFailure = e.stopReason, e.stopDetail, e.lastFailure
	e.mu.Unlock()
	if e.cfg.Total > 0 {
		s.Pending = max(0, e.cfg.Total-e.cfg.Skipped-s.Done)
	}
	return s, runErr
}

// waitDispatchable blocks while the run is paused or the breaker is open,
// and reports false once the run stops.
func (e *Engine) waitDispatchable(ctx context.Context) bool {
	for {
		if ctx.Err() != nil || e.isStopping() {
			return false
		}
		e.mu.Lock()
		paused, changed := e.paused, e.changed
		e.mu.Unlock()
		if !paused && e.br.State() != breaker.Open {
			return true
		}
		var timer <-chan time.Time
		if !paused {
			if d := time.Until(e.br.ReadyAt()); d > 0 {
				t := time.NewTimer(d)
				defer t.Stop()
				timer = t.C
			} else {
				return true
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-e.stopping:
			return false
		case <-changed:
		case <-timer:
		}
	}
}

func (e *Engine) isStopping() bool {
	select {
	case <-e.stopping:
		return true
	default:
		return false
	}
}

// sleep waits d, and reports false if the run stopped meanwhile.
func (e *Engine) sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-e.stopping:
		return false
	}
}

// broadcast wakes everything waiting at the gate.
func (e *Engine) broadcastLocked() {
	close(e.changed)
	e.changed = make(chan struct{})
}

func (e *Engine) breakerChanged(from, to breaker.State, c breaker.Counts) {
	if from == breaker.Closed && to == breaker.Open {
		e.trips.Add(1)
	}
	e.mu.Lock()
	trip := to == breaker.Open && (e.cfg.OnTrip != TripWait || from == breaker.Closed)
	if trip && e.cfg.OnTrip != TripWait {
		e.paused = true
		e.tripReason = fmt.Sprintf("%d consecutive failures", c.ConsecutiveFailures)
		if c.ConsecutiveFailures < max(e.cfg.Breaker.Threshold, 1) && c.WindowSize > 0 {
			e.tripReason = fmt.Sprintf("%d failures in the last %d outcomes", c.WindowFailures, c.WindowSize)
		}
	}
	e.broadcastLocked()
	e.mu.Unlock()
	e.emit(Event{Kind: BreakerChanged, State: to})
	if trip && e.cfg.OnTrip != TripWait {
		e.requestControl(func() { e.tripWanted = true })
	}
}

// controlLoop handles what needs the operator: trips and check-ins. It runs
// beside the dispatcher so that a trip is handled even while the dispatcher
// waits for a slot.
func (e *Engine) controlLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.control:
		}
		// Drain: in-flight calls finish and are recorded before anyone is
		// asked anything.
		if !e.waitIdle(ctx) {
			return
		}
		e.mu.Lock()
		trip, checkin := e.tripWanted, e.checkinWanted
		e.tripWanted, e.checkinWanted = false, false
		e.mu.Unlock()
		if e.exhausted.Load() && e.inFlight.Load() == 0 {
			// Every item has its outcome: there is nothing left to decide,
			// and a stop now would call a finished run aborted.
			e.unpause()
			continue
		}
		if trip {
			e.handleTrip(ctx)
		}
		if checkin && !e.isStopping() {
			e.handleCheckin(ctx)
		}
	}
}

// requestControl records a request for the control loop and wakes it,
// without ever blocking: requests made while it is busy coalesce.
func (e *Engine) requestControl(set func()) {
	e.mu.Lock()
	set()
	e.mu.Unlock()
	select {
	case e.control <- struct{}{}:
	default:
	}
}

// unpause lets the gate open again.
func (e *Engine) unpause() {
	e.mu.Lock()
	e.paused = false
	e.broadcastLocked()
	e.mu.Unlock()
}

func (e *Engine) handleTrip(ctx context.Context) {
	e.mu.Lock()
	// A check-in answered meanwhile may have unpaused: a trip pauses until
	// its own answer.
	e.paused = true
	report := TripReport{Reason: e.tripReason, Last: e.lastFailure}
	e.mu.Unlock()
	report.Stats = e.Stats()
	if e.cfg.OnTrip == TripPrompt && e.cfg.Prompter != nil {
		if err := e.job.Flush(ctx); err != nil {
			e.Stop(StopBreaker, "circuit breaker open: "+report.Reason+"; flushing failed: "+err.Error())
			return
		}
		decision := e.cfg.Prompter.Trip(ctx, report)
		if ctx.Err() != nil {
			// The run ended while the operator was asked: nobody answered.
			return
		}
		if decision == TripContinue {
			e.mu.Lock()
			e.paused = false
			e.mu.Unlock()
			e.br.Reset()
			e.mu.Lock()
			e.broadcastLocked()
			e.mu.Unlock()
			return
		}
		e.Stop(StopOperator, "aborted by the operator after the circuit breaker opened: "+report.Reason)
		return
	}
	e.Stop(StopBreaker, "circuit breaker open: "+report.Reason)
}

func (e *Engine) handleCheckin(ctx context.Context) {
	e.mu.Lock()
	latest := append([]store.Record(nil), e.latest...)
	e.mu.Unlock()
	goOn := e.cfg.Prompter.Checkin(ctx, latest, e.Stats())
	if ctx.Err() != nil {
		return
	}
	if !goOn {
		e.Stop(StopOperator, "aborted by the operator at a check-in")
		return
	}
	e.mu.Lock()
	e.paused = false
	e.broadcastLocked()
	e.mu.Unlock()
}

// waitIdle waits until no call is in progress.
func (e *Engine) waitIdle(ctx context.Context) bool {
	for {
		e.mu.Lock()
		if e.activeCalls == 0 {
			e.mu.Unlock()
			return true
		}
		if e.idle == nil {
			e.idle = make(chan struct{})
		}
		idle := e.idle
		e.mu.Unlock()
		select {
		case <-ctx.Done():
			return false
		case <-idle:
		}
	}
}

func (e *Engine) callStarted() {
	e.mu.Lock()
	e.activeCalls++
	e.mu.Unlock()
}

func (e *Engine) callEnded() {
	e.mu.Lock()
	e.activeCalls--
	if e.activeCalls == 0 && e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
	e.mu.Unlock()
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

// recordBad records an item that failed before any call.
func (e *Engine) recordBad(ctx context.Context, bad *BadItem) error {
	rec := store.Record{
		Idx:        bad.Item.Idx,
		ID:         bad.Item.ID,
		Input:      bad.Item.Raw,
		Output:     json.RawMessage("null"),
		Error:      bad.Err.Error(),
		Class:      classify.Item,
		FinishedAt: time.Now().UTC(),
	}
	rec.Fingerprint = heal.Fingerprint(classify.Item.String(), rec.Error)
	item := bad.Item
	return e.finish(ctx, &item, &rec, &Failure{Item: item, Err: bad.Err, Decision: classify.Decision{Class: classify.Item, Reason: "bad input line"}})
}

// finish appends the record, updates counters and schedules a check-in.
func (e *Engine) finish(ctx context.Context, item *task.Item, rec *store.Record, f *Failure) error {
	if err := e.job.Append(context.WithoutCancel(ctx), *rec); err != nil {
		e.Stop(StopOperator, "writing the checkpoint failed: "+err.Error())
		return fmt.Errorf("engine: recording item %d: %w", rec.Idx, err)
	}
	if f != nil {
		e.failed.Add(1)
	} else {
		e.succeeded.Add(1)
	}
	done := e.done.Add(1)
	checkin := false
	e.mu.Lock()
	if f != nil {
		e.lastFailure = f
	}
	if e.cfg.CheckinEvery > 0 && e.cfg.Prompter != nil {
		if len(e.latest) == latestKept {
			copy(e.latest, e.latest[1:])
			e.latest = e.latest[:latestKept-1]
		}
		e.latest = append(e.latest, *rec)
		last := e.cfg.Total > 0 && done >= int64(e.planned())
		if done%int64(e.cfg.CheckinEvery) == 0 && !e.paused && !last {
			e.paused = true
			checkin = true
		}
	}
	e.mu.Unlock()
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemFinished, Item: item, Record: rec, Err: errOf(f), Decision: decisionOf(f)})
	}
	if checkin {
		e.requestControl(func() { e.checkinWanted = true })
	}
	return nil
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

// slots is a counting semaphore whose limit can change while it is held,
// for adaptive concurrency. Only the dispatcher acquires.
type slots struct {
	mu    sync.Mutex
	limit int
	used  int
	wake  chan struct{}
}

func (s *slots) acquire(ctx context.Context, stop <-chan struct{}) bool {
	for {
		s.mu.Lock()
		if s.used < s.limit {
			s.used++
			s.mu.Unlock()
			return true
		}
		if s.wake == nil {
			s.wake = make(chan struct{})
		}
		wake := s.wake
		s.mu.Unlock()
		select {
		case <-wake:
		case <-ctx.Done():
			return false
		case <-stop:
			return false
		}
	}
}

func (s *slots) release() {
	s.mu.Lock()
	s.used--
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
	s.mu.Unlock()
}

// Limit returns the current limit.
func (s *slots) Limit() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.limit
}

func (s *slots) setLimit(n int) {
	s.mu.Lock()
	s.limit = n
	if s.wake != nil {
		close(s.wake)
		s.wake = nil
	}
	s.mu.Unlock()
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
