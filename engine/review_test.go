package engine_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Regression tests for what a review of the engine found; each is named
// after what broke.

// slowPrompter answers after a delay: Continue to trips, yes to check-ins,
// unless its context ends first (then, as the console does, it aborts).
type slowPrompter struct {
	delay time.Duration
	asked atomic.Int64
}

func (p *slowPrompter) Trip(ctx context.Context, _ engine.TripReport) engine.TripDecision {
	p.asked.Add(1)
	select {
	case <-time.After(p.delay):
		return engine.TripContinue
	case <-ctx.Done():
		return engine.TripAbortRun
	}
}

func (p *slowPrompter) CheckIn(ctx context.Context, _ engine.CheckIn) bool {
	p.asked.Add(1)
	select {
	case <-time.After(p.delay):
		return true
	case <-ctx.Done():
		return false
	}
}

func TestCheckinThatOutlivesTheRunIsNotAnAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &slowPrompter{delay: 2 * time.Second}
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			time.Sleep(10 * time.Millisecond)
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 8, CheckinEvery: 5, Operator: p, Total: 10}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopNone || s.Succeeded != 10 {
			t.Fatalf("stop=%s (%s) succeeded=%d: a run whose items all succeeded must not end aborted", s.Stop, s.StopDetail, s.Succeeded)
		}
	})
}

type hinted429 struct{ after time.Duration }

func (h hinted429) Error() string             { return "429 rate limited" }
func (h hinted429) HTTPStatus() int           { return 429 }
func (h hinted429) RetryAfter() time.Duration { return h.after }

// callLog records when calls start, relative to the bubble's start.
type callLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
}

func (c *callLog) add() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	d := time.Since(c.start)
	c.at = append(c.at, d)
	return d
}

func TestCooldownHoldsItemsWaitingOnTheRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		var once atomic.Bool
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			at := log.add()
			if at >= time.Second && once.CompareAndSwap(false, true) {
				return task.Result{}, classify.WithClass(hinted429{30 * time.Second}, classify.Retryable, "test")
			}
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 4, RequestsPerMinute: 60, Retry: fastRetry}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(8)); err != nil {
			t.Fatal(err)
		}
		var hintAt time.Duration = -1
		for _, at := range log.at {
			if hintAt < 0 && at >= time.Second {
				hintAt = at
				continue
			}
			if hintAt >= 0 && at > hintAt && at < hintAt+30*time.Second {
				t.Fatalf("a call at %v inside the 30s cooldown from %v (calls %v)", at, hintAt, log.at)
			}
		}
	})
}

func TestContinueAfterALongPauseKeepsTheRateLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		var failing atomic.Bool
		failing.Store(true)
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			log.add()
			if failing.Load() {
				return task.Result{}, errFatal
			}
			return ok("x")
		})
		p := &slowPrompter{delay: time.Minute}
		go func() {
			time.Sleep(10 * time.Second)
			failing.Store(false)
		}()
		e := engine.New(engine.Config{
			Concurrency: 8, RequestsPerMinute: 60, Breaker: breaker.Settings{Threshold: 3},
			OnTrip: engine.TripPrompt, Operator: p,
		}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(20)); err != nil {
			t.Fatal(err)
		}
		// After Continue, calls stay at most one per second (the burst of
		// the limiter is 1).
		log.mu.Lock()
		defer log.mu.Unlock()
		for i := 2; i < len(log.at); i++ {
			if log.at[i]-log.at[i-2] < time.Second {
				t.Fatalf("three calls within a second at %v: the pause released a burst (calls %v)", log.at[i-2:i+1], log.at)
			}
		}
	})
}

func TestRateLimitHintPausesOthersEvenWhenTheItemGivesUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		tk := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
			log.add()
			if it.Idx == 0 {
				return task.Result{}, classify.WithClass(hinted429{30 * time.Second}, classify.Retryable, "test")
			}
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 1, Retry: retry.Policy{MaxAttempts: 1}}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(2)); err != nil {
			t.Fatal(err)
		}
		if len(log.at) != 2 || log.at[1] < 30*time.Second {
			t.Fatalf("calls at %v: the second item must wait out the 429's 30s hint", log.at)
		}
	})
}

type estimatingTask struct{ calls atomic.Int64 }

func (t *estimatingTask) Run(context.Context, task.Item) (task.Result, error) {
	t.calls.Add(1)
	time.Sleep(100 * time.Millisecond)
	r, _ := ok("x")
	r.Usage = task.Usage{InputTokens: 50, OutputTokens: 50}
	return r, nil
}

func (t *estimatingTask) EstimateTokens(task.Item) int { return 100 }

func TestTokenBudgetCountsCallsUnderWay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &estimatingTask{}
		e := engine.New(engine.Config{Concurrency: 8, Budget: engine.Budget{MaxTokens: 450}, Total: 20}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(20))
		if err != nil {
			t.Fatal(err)
		}
		if used := s.Usage.Total(); used > 450 || s.Stop != engine.StopBudget {
			t.Fatalf("used %d tokens of a 450 budget (stop %s): the calls in flight were not counted", used, s.Stop)
		}
	})
}

func TestCanceledNotByTheRunIsAFailureNotPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
			if it.Idx == 1 {
				return task.Result{}, context.Canceled // the task's own context
			}
			return ok("x")
		})
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1, Total: 3}, tk, job)
		s, err := e.Run(context.Background(), items(3))
		if err != nil {
			t.Fatal(err)
		}
		rec, found := job.byIdx()[1]
		if !found || rec.Class != classify.Item || s.Pending != 0 {
			t.Fatalf("item 1 record %+v (found %v), pending %d: want a recorded item failure", rec, found, s.Pending)
		}
	})
}

// cachedTask serves every item from its cache except those in miss.
type cachedTask struct{ miss map[int]bool }

func (c cachedTask) Cached(it task.Item) bool { return !c.miss[it.Idx] }
func (c cachedTask) Run(_ context.Context, it task.Item) (task.Result, error) {
	r, _ := ok("x")
	r.CacheHit = !c.miss[it.Idx]
	return r, nil
}

// TestCacheHitsAreNotRateLimited: a re-run served from the cache makes no
// calls, so the rate limiter must not pace it.
func TestCacheHitsAreNotRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := engine.New(engine.Config{Concurrency: 4, RequestsPerMinute: 60}, cachedTask{miss: map[int]bool{5: true, 6: true}}, newMemJob())
		s, err := e.Run(context.Background(), items(100))
		if err != nil || s.Succeeded != 100 {
			t.Fatalf("succeeded %d: %v", s.Succeeded, err)
		}
		// Two real calls at 60 rpm: the second waits a second; 98 cache
		// hits wait for nothing.
		if took := time.Since(start); took > 2*time.Second {
			t.Errorf("took %v: cache hits were paced like calls", took)
		}
	})
}

// cheapTask is estimated at 100 tokens a call (its max_tokens) and spends
// 10.
type cheapTask struct{}

func (cheapTask) Run(context.Context, task.Item) (task.Result, error) {
	time.Sleep(100 * time.Millisecond)
	r, _ := ok("x")
	r.Usage = task.Usage{InputTokens: 5, OutputTokens: 5}
	return r, nil
}

func (cheapTask) EstimateTokens(task.Item) int { return 100 }

// TestTokenBudgetWaitsForCallsUnderWayInsteadOfStopping: with
// budget.max_tokens 500, max_tokens 20 and 32 in flight, a mock LLM job
// stopped (exit 3) after 23 calls had spent 46 tokens: the calls under way
// held their estimates, and the next call was refused instead of waiting
// for them to settle at what they really spent.
func TestTokenBudgetWaitsForCallsUnderWayInsteadOfStopping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := engine.New(engine.Config{Concurrency: 8, Budget: engine.Budget{MaxTokens: 450}, Total: 20}, cheapTask{}, newMemJob())
		s, err := e.Run(context.Background(), items(20))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopNone || s.Done != 20 || s.Usage.Total() != 200 {
			t.Fatalf("stop %s (%s), %d done, %d tokens: want all 20 done for 200 tokens of 450", s.Stop, s.StopDetail, s.Done, s.Usage.Total())
		}
	})
}
