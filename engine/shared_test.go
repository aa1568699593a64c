package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// fakeShared is the state other engines share, in memory: a breaker
// another engine may hold open, a limiter whose turns the test hands out,
// and the cooldowns this engine shared.
type fakeShared struct {
	mu      sync.Mutex
	held    bool
	changed chan struct{}
	cooled  []time.Time

	// turns, when set, is where each Wait blocks until the test sends.
	turns chan struct{}
	waits []int // the tokens of each Wait
}

func newFakeShared() *fakeShared { return &fakeShared{changed: make(chan struct{})} }

func (f *fakeShared) Hold() (bool, <-chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.held, f.changed
}

func (f *fakeShared) setHeld(held bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = held
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeShared) Cooldown(until time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cooled = append(f.cooled, until)
}

func (f *fakeShared) Wait(ctx context.Context, tokens int) error {
	f.mu.Lock()
	f.waits = append(f.waits, tokens)
	turns := f.turns
	f.mu.Unlock()
	if turns == nil {
		return nil
	}
	select {
	case <-turns:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// preparedTask counts the attempts it prepares and the calls made
// without preparing.
type preparedTask struct {
	mu        sync.Mutex
	prepared  int
	unprepped int
	tokens    int
	run       func(ctx context.Context, it task.Item) (task.Result, error)
}

func (p *preparedTask) Prepare(_ context.Context, it task.Item) (task.Prepared, error) {
	p.mu.Lock()
	p.prepared++
	p.mu.Unlock()
	return task.Prepared{Tokens: p.tokens, Run: func(ctx context.Context) (task.Result, error) { return p.run(ctx, it) }}, nil
}

func (p *preparedTask) Run(ctx context.Context, it task.Item) (task.Result, error) {
	p.mu.Lock()
	p.unprepped++
	p.mu.Unlock()
	return p.run(ctx, it)
}

// TestACallWaitingForTheSharedLimiterHoldsNoCallSlot: the shared rate
// limits are asked inside the gate, before the call slot. They were asked
// by a wrapper of the task, after the gate had handed out the slot, so a
// worker whose calls waited for the job's schedule held all its slots
// while doing nothing.
func TestACallWaitingForTheSharedLimiterHoldsNoCallSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := newFakeShared()
		sh.turns = make(chan struct{})
		tk := &preparedTask{tokens: 7, run: func(context.Context, task.Item) (task.Result, error) { return ok("x") }}
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1, SharedLimiter: sh, SharedBreaker: sh}, tk, job)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := e.Run(context.Background(), items(2)); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		if st := e.Stats(); st.InFlight != 0 {
			t.Fatalf("%d calls under way while every item waits for the shared limiter, want 0: the slot comes last", st.InFlight)
		}
		sh.turns <- struct{}{}
		sh.turns <- struct{}{}
		<-done
		if n := job.count(); n != 2 {
			t.Fatalf("%d records, want 2", n)
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if len(sh.waits) != 2 || sh.waits[0] != 7 || sh.waits[1] != 7 {
			t.Errorf("the shared limiter was asked for %v tokens, want [7 7]: one turn per call, with the prepared estimate", sh.waits)
		}
		if tk.prepared != 2 || tk.unprepped != 0 {
			t.Errorf("%d attempts prepared, %d calls made without preparing; want 2 and 0", tk.prepared, tk.unprepped)
		}
	})
}

// TestAnotherEnginesOpenBreakerHoldsCallsAtTheGate: while the shared
// breaker holds, no call is made and none takes a limiter turn; released,
// the items run.
func TestAnotherEnginesOpenBreakerHoldsCallsAtTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := newFakeShared()
		sh.setHeld(true)
		tk := &preparedTask{run: func(context.Context, task.Item) (task.Result, error) { return ok("x") }}
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 2, SharedLimiter: sh, SharedBreaker: sh}, tk, job)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if _, err := e.Run(context.Background(), items(3)); err != nil {
				t.Error(err)
			}
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		sh.mu.Lock()
		waits := len(sh.waits)
		sh.mu.Unlock()
		if n := job.count(); n != 0 || waits != 0 {
			t.Fatalf("while another engine's breaker held the job: %d records, %d limiter turns taken; want none", n, waits)
		}
		sh.setHeld(false)
		<-done
		if n := job.count(); n != 3 {
			t.Fatalf("%d records once the breaker closed, want 3", n)
		}
	})
}

// TestASharedCooldownIsCappedByMaxHint: a 429 whose hint is past
// retry.max_hint is shared as a cooldown of max_hint; the worker capped it
// at a hard-coded 2 minutes whatever the policy said.
func TestASharedCooldownIsCappedByMaxHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sh := newFakeShared()
		var once sync.Once
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			var err error
			once.Do(func() { err = classify.WithClass(hintErr{time.Hour}, classify.Retryable, "test") })
			if err != nil {
				return task.Result{}, err
			}
			return ok("x")
		})
		pol := fastRetry
		pol.MaxHint = 5 * time.Second
		start := time.Now()
		e := engine.New(engine.Config{Concurrency: 1, Retry: pol, SharedBreaker: sh}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		sh.mu.Lock()
		defer sh.mu.Unlock()
		if len(sh.cooled) != 1 || !sh.cooled[0].Equal(start.Add(5*time.Second)) {
			t.Fatalf("shared cooldowns %v, want one, until start+5s (max_hint)", sh.cooled)
		}
	})
}

// TestAQuotaOnAResultReachesTheGate: the rate-limit headers a call
// returns on its Result pause the run when they say the quota is spent,
// as ObserveQuota does; they reached the engine only through a sink the
// job patched with it after building it.
func TestAQuotaOnAResultReachesTheGate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cooled []time.Time
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			res, err := ok("x")
			if it.Idx == 0 {
				res.Quota = &task.Quota{RequestsLimit: 60, RequestsRemaining: 0, RequestsReset: time.Minute, TokensLimit: -1, TokensRemaining: -1}
			}
			return res, err
		})
		start := time.Now()
		cfg := engine.Config{Concurrency: 1, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.Cooldown {
				cooled = append(cooled, ev.Until)
			}
		}}
		if _, err := engine.New(cfg, tk, newMemJob()).Run(context.Background(), items(2)); err != nil {
			t.Fatal(err)
		}
		if len(cooled) != 1 || !cooled[0].Equal(start.Add(time.Second)) {
			t.Fatalf("cooldowns until %v, want one until start+1s (a minute's reset over 60 requests)", cooled)
		}
	})
}
