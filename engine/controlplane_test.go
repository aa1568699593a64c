package engine_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Regression tests for the control plane's review (issue 9), each named
// after what broke.

// fullDiskJob accepts a few records, then fails every write as a full disk
// does.
type fullDiskJob struct {
	*memJob
	room    int
	refused atomic.Int64
}

func (j *fullDiskJob) Append(ctx context.Context, recs ...store.Record) error {
	if j.count()+len(recs) > j.room {
		j.refused.Add(1)
		return fmt.Errorf("write /jobs/x/results.jsonl: %w", syscall.ENOSPC)
	}
	return j.memJob.Append(ctx, recs...)
}

func TestFailedCheckpointWriteIsNotAnOperatorAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			calls.Add(1)
			time.Sleep(10 * time.Millisecond)
			return ok("x")
		})
		job := &fullDiskJob{memJob: newMemJob(), room: 20}
		e := engine.New(engine.Config{Concurrency: 4, Total: 3000}, tk, job)
		s, err := e.Run(context.Background(), items(3000))
		if !errors.Is(err, syscall.ENOSPC) {
			t.Fatalf("Run returned %v, want the checkpoint's ENOSPC", err)
		}
		if s.Stop != engine.StopStorage || !strings.Contains(s.StopDetail, "no space left on device") || !strings.Contains(s.StopDetail, "results.jsonl") {
			t.Errorf("stop %s %q, want storage with the OS error and the path", s.Stop, s.StopDetail)
		}
		// Dispatch stops at the first failed write: the calls in flight
		// then, and nothing more, are paid for and lost.
		// A call's slot is handed on as it ends, just before its record is
		// written, so the bound is the records plus two rounds of slots.
		if n := calls.Load(); n > int64(job.room)+2*4 {
			t.Errorf("%d calls for %d writable records: dispatch went on after the disk was full", n, job.room)
		}
		if s.Succeeded != job.room || s.Pending != 3000-job.room {
			t.Errorf("succeeded %d pending %d, want %d and %d: an unwritten item is pending, not done", s.Succeeded, s.Pending, job.room, 3000-job.room)
		}
	})
}

func TestInputReadErrorIsNotAnOperatorAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		readErr := errors.New("read units.jsonl: input/output error")
		inner := items(100)
		n := 0
		src := engine.SourceFunc(func() (task.Item, error) {
			if n++; n > 5 {
				return task.Item{}, readErr
			}
			return inner.Next()
		})
		e := engine.New(engine.Config{Concurrency: 2}, task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("x") }), newMemJob())
		s, err := e.Run(context.Background(), src)
		if !errors.Is(err, readErr) || s.Stop != engine.StopStorage {
			t.Fatalf("err %v, stop %s: want the input's error and a storage stop", err, s.Stop)
		}
		if s.Succeeded > 5 || s.Pending != 0 || s.Done != s.Succeeded {
			t.Errorf("succeeded %d done %d: only items read before the error may finish", s.Succeeded, s.Done)
		}
	})
}

func TestStatsWhileRunStartsIsRaceFree(t *testing.T) {
	e := engine.New(engine.Config{Concurrency: 2}, task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("x") }), newMemJob())
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
				_ = e.Stats().Started
			}
		}
	})
	if _, err := e.Run(context.Background(), items(50)); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	if e.Stats().Started.IsZero() {
		t.Error("Stats().Started is zero after Run")
	}
}

func TestStopTwiceWithStopNoneDoesNotPanic(t *testing.T) {
	e := engine.New(engine.Config{}, task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("x") }), newMemJob())
	e.Stop(engine.StopNone, "first")
	e.Stop(engine.StopNone, "second")
	s, err := e.Run(context.Background(), items(10))
	if err != nil {
		t.Fatal(err)
	}
	e.Stop(engine.StopBreaker, "after the run")
	if s.Done != 0 || s.Stop != engine.StopOperator || s.StopDetail != "first" {
		t.Fatalf("done %d stop %s %q: a stop before Run must keep every item pending, first reason kept", s.Done, s.Stop, s.StopDetail)
	}
}

func TestQueuedEventsDoNotChangeWhenTheItemIsReasked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return ok("wrong") },
			func() (task.Result, error) { return ok("wrong again") },
			func() (task.Result, error) { return ok("valid") },
		}}
		var mu sync.Mutex
		var queued []engine.Event
		e := engine.New(engine.Config{Concurrency: 1, Validator: onlyValid, OnEvent: func(ev engine.Event) {
			mu.Lock()
			queued = append(queued, ev)
			mu.Unlock()
		}}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		var heals []int
		for _, ev := range queued {
			switch ev.Kind {
			case engine.ItemStarted:
				if ev.Item.Feedback != nil {
					t.Errorf("the queued start event's item has feedback %q: it changed after it was sent", ev.Item.Feedback.Message)
				}
			case engine.ItemHeal:
				heals = append(heals, ev.Item.Feedback.Attempt)
			}
		}
		if fmt.Sprint(heals) != "[1 2]" {
			t.Errorf("heal events carry feedback attempts %v, want [1 2]", heals)
		}
	})
}

// TestCarriedReasksNumberEventsAsTheirFeedback is the regression test of
// a batch job's online tail numbering its re-ask events from 1 while their
// feedback went on from the waves' re-asks: the web view's timeline showed
// "heal 1" for the item's third re-ask.
func TestCarriedReasksNumberEventsAsTheirFeedback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return ok("wrong") },
			func() (task.Result, error) { return ok("valid") },
		}}
		var mu sync.Mutex
		var heals [][2]int // the event's attempt, the feedback's
		cfg := engine.Config{Concurrency: 1, Validator: onlyValid, Carried: map[int]*engine.Carried{0: {State: engine.State{Heals: 2}}}, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.ItemHeal {
				mu.Lock()
				heals = append(heals, [2]int{ev.Attempt, ev.Item.Feedback.Attempt})
				mu.Unlock()
			}
		}}
		if _, err := engine.New(cfg, tk, newMemJob()).Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		if len(heals) != 1 || heals[0] != [2]int{3, 3} {
			t.Errorf("re-ask events (attempt, feedback attempt) %v, want [[3 3]]: the item's third re-ask after two in earlier waves", heals)
		}
	})
}

// limitLog records the concurrency limit over fake time.
type limitLog struct {
	mu     sync.Mutex
	start  time.Time
	at     []time.Duration
	limits []int
}

func (l *limitLog) onEvent(ev engine.Event) {
	if ev.Kind != engine.ConcurrencyChanged {
		return
	}
	l.mu.Lock()
	l.at = append(l.at, time.Since(l.start))
	l.limits = append(l.limits, ev.Limit)
	l.mu.Unlock()
}

// firstAt is when the limit first reached n, or -1.
func (l *limitLog) firstAt(n int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, v := range l.limits {
		if v >= n {
			return l.at[i]
		}
	}
	return -1
}

// meanBetween is the time-weighted mean limit from from to to, the last
// limit holding until to.
func (l *limitLog) meanBetween(from, to time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var area, span float64
	for i := range l.at {
		next := to
		if i+1 < len(l.at) {
			next = l.at[i+1]
		}
		if next <= from {
			continue
		}
		d := (next - max(l.at[i], from)).Seconds()
		area += float64(l.limits[i]) * d
		span += d
	}
	return area / span
}

// decreases counts the decreases from the initial limit on.
func (l *limitLog) decreases(initial int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, prev := 0, initial
	for _, v := range l.limits {
		if v < prev {
			n++
		}
		prev = v
	}
	return n
}

var noisy429 = classify.WithClass(hintErr{0}, classify.Retryable, "test")

type status503 struct{}

func (status503) Error() string   { return "503 service unavailable" }
func (status503) HTTPStatus() int { return 503 }

func TestAdaptiveSlowStartReachesTheCeilingInFewRoundTrips(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &limitLog{start: time.Now()}
		const rtt = 300 * time.Millisecond
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			time.Sleep(rtt)
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 300, Adaptive: true, Retry: fastRetry, OnEvent: log.onEvent}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(20000)); err != nil {
			t.Fatal(err)
		}
		// From 4, doubling each round trip: 300 after ⌈log2(75)⌉ = 7.
		if at := log.firstAt(300); at < 0 || at > 8*rtt {
			t.Errorf("limit reached 300 at %v, want within 8 round trips (%v); a linear ramp takes ~%v", at, 8*rtt, 296*rtt/4)
		}
	})
}

func TestAdaptiveJumpsToWhatAKnownRateNeedsInsteadOfDoubling(t *testing.T) {
	// The 60,000 rpm / 300 ms run of the benchmark took 4 s to reach 90%
	// of the limit doubling from 4 when the headers had named the rate
	// after the first round trip: 1,000 a second for 300 ms is 300 slots.
	synctest.Test(t, func(t *testing.T) {
		log := &limitLog{start: time.Now()}
		const rtt = 300 * time.Millisecond
		q := &quotaTask{quota: engine.Quota{RequestsLimit: 60000, RequestsRemaining: 50000, TokensLimit: -1, TokensRemaining: -1}}
		q.run = func(task.Item) (task.Result, error) {
			time.Sleep(rtt)
			return ok("x")
		}
		q.e = engine.New(engine.Config{Concurrency: 512, Adaptive: true, Retry: fastRetry, OnEvent: log.onEvent}, q, newMemJob())
		if _, err := q.e.Run(context.Background(), items(5000)); err != nil {
			t.Fatal(err)
		}
		// 1,000/s × 300 ms × 1.25 = 375, after the first round trip.
		if at := log.firstAt(300); at < 0 || at > 2*rtt {
			t.Errorf("limit reached 300 at %v (limits %v), want within 2 round trips (%v): the rate the headers named needs 300 slots", at, log.limits[:min(len(log.limits), 12)], 2*rtt)
		}
		if got := q.e.Stats().Limit; got > 512 {
			t.Errorf("limit %d above concurrency.max 512", got)
		}
	})
}

// TestAdaptiveHoldsTheCeilingUnderSporadic429sAnd5xx: 2% of 429s and 2%
// of 503s are noise and must not pin the limit. The first noise filter
// (three 429s above 5% of a window) passed when the 429s came every 50th
// call, never three in under 60 outcomes, yet random 2% 429s tripped it
// once in 600–800 outcomes (55–64 false decreases held the ceiling of 64
// at 42–49), and CI saw even the regular ones bunch when calls ending at
// one instant came back out of order.
func TestAdaptiveHoldsTheCeilingUnderSporadic429sAnd5xx(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items int
		// draw returns a number in [0, 1): below 0.02 the call is
		// answered 429, below 0.04 503.
		draw func() float64
		// anyDecrease is whether a decrease may come: a false one comes
		// once in about 130,000 random outcomes, each costing under a slot
		// of the mean (seeds 1–8: 0–1 decreases, means 63.6–64).
		anyDecrease bool
	}{
		{name: "every 50th call", items: 20000, draw: func() func() float64 {
			var n atomic.Int64
			return func() float64 { return float64(n.Add(1)%50) / 50 }
		}()},
		{name: "at random", items: 40000, anyDecrease: true, draw: func() func() float64 {
			var mu sync.Mutex
			rng := rand.New(rand.NewPCG(3, 2026))
			return func() float64 {
				mu.Lock()
				defer mu.Unlock()
				return rng.Float64()
			}
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &limitLog{start: time.Now()}
				var calls, limited atomic.Int64
				tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
					time.Sleep(100 * time.Millisecond)
					calls.Add(1)
					switch draw := tc.draw(); {
					case draw < 0.02:
						limited.Add(1)
						return task.Result{}, noisy429
					case draw < 0.04:
						return task.Result{}, classify.WithClass(status503{}, classify.Retryable, "test")
					}
					return ok("x")
				})
				e := engine.New(engine.Config{Concurrency: 64, Adaptive: true, Retry: retry.Policy{MaxAttempts: 10, Backoff: fastRetry.Backoff}, OnEvent: log.onEvent}, tk, newMemJob())
				s, err := e.Run(context.Background(), items(tc.items))
				if err != nil || s.Succeeded != tc.items {
					t.Fatalf("succeeded %d of %d, err %v", s.Succeeded, tc.items, err)
				}
				reached := log.firstAt(64)
				if reached < 0 {
					t.Fatalf("limits %v never reached the ceiling 64", log.limits)
				}
				mean, d := log.meanBetween(reached, time.Since(log.start)), log.decreases(4)
				t.Logf("%d calls, %d answered 429, %d decreases, mean limit %.1f after first reaching 64", calls.Load(), limited.Load(), d, mean)
				if d > 0 && !tc.anyDecrease {
					t.Errorf("%d decreases (limits %v): noise must not pin the limit", d, log.limits)
				}
				if mean < 0.9*64 {
					t.Errorf("mean limit %.1f after first reaching the ceiling 64 (%d decreases), want at least 90%% of it: noise must not pin the limit", mean, d)
				}
			})
		})
	}
}

func TestAdaptiveFindsAHiddenConcurrencyLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const hidden = 40
		log := &limitLog{start: time.Now()}
		var executing, calls, limited atomic.Int64
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			over := executing.Add(1) > hidden
			defer executing.Add(-1)
			calls.Add(1)
			time.Sleep(100 * time.Millisecond)
			if over {
				limited.Add(1)
				return task.Result{}, noisy429
			}
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 400, Adaptive: true, Retry: retry.Policy{MaxAttempts: 50, Backoff: fastRetry.Backoff}, OnEvent: log.onEvent}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(20000))
		if err != nil || s.Succeeded != 20000 {
			t.Fatalf("succeeded %d, err %v", s.Succeeded, err)
		}
		// Time-weighted mean limit over the second half of the run.
		end := time.Since(log.start)
		mean := log.meanBetween(end/2, end)
		share := float64(limited.Load()) / float64(calls.Load())
		t.Logf("mean limit %.1f (hidden %d), %.1f%% of calls limited, %d decreases", mean, hidden, 100*share, log.decreases(4))
		if mean < 0.75*hidden || mean > 1.25*hidden {
			t.Errorf("mean limit %.1f over the second half, want within 25%% of the hidden %d", mean, hidden)
		}
		if share > 0.10 {
			t.Errorf("%.1f%% of calls answered 429, want at most 10%%", 100*share)
		}
	})
}

func TestAdaptiveDecreasesOncePerRoundTripForABurstOf429s(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &limitLog{start: time.Now()}
		var n atomic.Int64
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			k := n.Add(1)
			time.Sleep(100 * time.Millisecond)
			if k <= 32 { // the whole first round trip is refused
				return task.Result{}, noisy429
			}
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 32, Adaptive: true, InitialConcurrency: 32, Retry: fastRetry, OnEvent: log.onEvent}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(32)); err != nil {
			t.Fatal(err)
		}
		if d := log.decreases(32); d != 1 || log.limits[0] != 16 {
			t.Errorf("limits %v: 32 429s from one round trip must decrease once (to 16, leaving slow start)", log.limits)
		}
	})
}

// quotaTask reports rate-limit headers on every call, as the LLM task does.
type quotaTask struct {
	e     *engine.Engine
	quota engine.Quota
	run   func(task.Item) (task.Result, error)
}

func (q *quotaTask) Run(_ context.Context, it task.Item) (task.Result, error) {
	q.e.ObserveQuota(q.quota)
	return q.run(it)
}

// quotaBucket is a provider's request quota as both providers describe
// it: a bucket holding up to a minute of the limit, refilled continuously,
// whose level the rate-limit headers report on every answer.
type quotaBucket struct {
	mu        sync.Mutex
	e         *engine.Engine
	perMinute int
	level     float64
	last      time.Time
	calls     int
	limited   int
	log       callLog
}

func (b *quotaBucket) Run(context.Context, task.Item) (task.Result, error) {
	b.mu.Lock()
	now := time.Now()
	b.level = min(float64(b.perMinute), b.level+now.Sub(b.last).Minutes()*float64(b.perMinute))
	b.last = now
	b.calls++
	b.log.add()
	took := b.level >= 1
	if took {
		b.level--
	} else {
		b.limited++
	}
	q := engine.Quota{RequestsLimit: b.perMinute, RequestsRemaining: int(b.level), RequestsReset: time.Duration((float64(b.perMinute) - b.level) / float64(b.perMinute) * float64(time.Minute)), TokensLimit: -1, TokensRemaining: -1}
	b.mu.Unlock()
	if !took {
		b.e.ObserveQuota(q)
		return task.Result{}, classify.WithClass(hinted429{time.Second}, classify.Retryable, "test")
	}
	time.Sleep(10 * time.Millisecond)
	b.e.ObserveQuota(q)
	return ok("x")
}

func TestQuotaHeadersPaceTheRunWhenTheSpecSetNoLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &quotaBucket{perMinute: 600, level: 20, last: time.Now(), log: callLog{start: time.Now()}}
		b.e = engine.New(engine.Config{Concurrency: 64, Adaptive: true, Retry: fastRetry}, b, newMemJob())
		if _, err := b.e.Run(context.Background(), items(120)); err != nil {
			t.Fatal(err)
		}
		// 600 a minute is 10 a second: the 20 left go at once, the other
		// 100 take about 10s.
		last := b.log.at[len(b.log.at)-1]
		if last < 9*time.Second || last > 13*time.Second {
			t.Errorf("the last call went at %v, want 9–13s: paced at the 600/min the headers named", last)
		}
		if b.limited > 0 {
			t.Errorf("%d of %d calls answered 429: the pace the headers named must keep the run under the quota", b.limited, b.calls)
		}
	})
}

func TestARestedQuotaIsSpentAtOnceThenPaced(t *testing.T) {
	// A job that learned the rate from the headers paced every call at it,
	// even with a whole minute of quota declared: against a rested quota
	// the cookbook's processor, told the limit, finished in a third of
	// tenax's time.
	synctest.Test(t, func(t *testing.T) {
		b := &quotaBucket{perMinute: 600, level: 600, last: time.Now(), log: callLog{start: time.Now()}}
		b.e = engine.New(engine.Config{Concurrency: 64, Adaptive: true, Retry: fastRetry}, b, newMemJob())
		if _, err := b.e.Run(context.Background(), items(800)); err != nil {
			t.Fatal(err)
		}
		// About 470 of the 600 at once (the pace takes over when what
		// remains is near twice what is in flight), the other ~330 at 10
		// a second: ~33s. Paced from the start it is 80s.
		last := b.log.at[len(b.log.at)-1]
		if last > 40*time.Second {
			t.Errorf("the last call went at %v, want within 40s: the quota the headers declared must be spent before pacing (80s)", last)
		}
		if b.limited > 0 {
			t.Errorf("%d of %d calls answered 429: the pace must take over before the quota runs out", b.limited, b.calls)
		}
	})
}

func TestSporadic429WithQuotaLeftDelaysOnlyItsItem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		var first atomic.Bool
		q := &quotaTask{quota: engine.Quota{RequestsLimit: -1, RequestsRemaining: 5000, TokensLimit: -1, TokensRemaining: -1}}
		q.run = func(it task.Item) (task.Result, error) {
			log.add()
			if it.Idx == 0 && first.CompareAndSwap(false, true) {
				return task.Result{}, classify.WithClass(hinted429{30 * time.Second}, classify.Retryable, "test")
			}
			time.Sleep(time.Second)
			return ok("x")
		}
		q.e = engine.New(engine.Config{Concurrency: 2, Retry: fastRetry}, q, newMemJob())
		if _, err := q.e.Run(context.Background(), items(3)); err != nil {
			t.Fatal(err)
		}
		// Item 0 waits its 30s hint; item 2 takes its place at once (an
		// item resting before a retry holds no place among the two), and
		// item 1 is not held up either.
		if len(log.at) != 4 || log.at[2] != 0 || log.at[3] != 30*time.Second {
			t.Errorf("calls at %v, want [0 0 0 30s]: a 429 while the quota shows room delays only its item, and the item resting gives its place to the next", log.at)
		}
	})
}

func TestExhaustedQuotaPausesEveryoneUntilItsReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		q := &quotaTask{quota: engine.Quota{RequestsLimit: -1, RequestsRemaining: 0, RequestsReset: 5 * time.Second, TokensLimit: -1, TokensRemaining: -1}}
		q.run = func(task.Item) (task.Result, error) {
			log.add()
			q.quota.RequestsRemaining = 100 // the first call saw the last of it
			return ok("x")
		}
		q.e = engine.New(engine.Config{Concurrency: 1}, q, newMemJob())
		if _, err := q.e.Run(context.Background(), items(2)); err != nil {
			t.Fatal(err)
		}
		if len(log.at) != 2 || log.at[1] != 5*time.Second {
			t.Errorf("calls at %v, want the second at 5s, when the quota resets", log.at)
		}
	})
}

func TestWorkersAreBoundedByTheItemsNotByConcurrencyMax(t *testing.T) {
	before := countGoroutines()
	var peak atomic.Int64
	tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
		for {
			n := int64(countGoroutines() - before)
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		return ok("x")
	})
	e := engine.New(engine.Config{Concurrency: 1_000_000, Total: 3}, tk, newMemJob())
	if _, err := e.Run(context.Background(), items(3)); err != nil {
		t.Fatal(err)
	}
	if p := peak.Load(); p > 20 {
		t.Errorf("%d goroutines for 3 items with concurrency.max 1e6: workers must be bounded by the items", p)
	}
}

func countGoroutines() int { return runtime.NumGoroutine() }

func TestRestingItemsGiveTheirPlaceToAtMostAsManyMore(t *testing.T) {
	// An item waiting out its backoff held one of the concurrency.max
	// places, so under sporadic faults fewer calls than the limit were in
	// flight. Now a resting item lets another start, up to twice the limit
	// of items, and the calls in flight stay within the limit.
	synctest.Test(t, func(t *testing.T) {
		const limit = 4
		var (
			mu              sync.Mutex
			calls, peak     int
			started         = map[int]bool{}
			startedAtRest   int // distinct items started before the first retry
			firstRetryAfter = 10 * time.Second
		)
		start := time.Now()
		run := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			mu.Lock()
			calls++
			peak = max(peak, calls)
			if time.Since(start) < firstRetryAfter {
				started[it.Idx] = true
				startedAtRest = len(started)
			}
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			calls--
			mu.Unlock()
			return task.Result{}, classify.WithClass(errors.New("500 server error"), classify.Retryable, "test")
		})
		cfg := engine.Config{
			Concurrency: limit,
			Retry:       retry.Policy{MaxAttempts: 2, Backoff: retry.Backoff{Base: firstRetryAfter, Jitter: retry.JitterNone}},
			Breaker:     breaker.Settings{Threshold: -1},
		}
		if _, err := engine.New(cfg, run, newMemJob()).Run(context.Background(), items(20)); err != nil {
			t.Fatal(err)
		}
		if startedAtRest != 2*limit {
			t.Errorf("%d items started while the first ones rested, want %d: a resting item gives its place to another, and no more than twice the limit are under way", startedAtRest, 2*limit)
		}
		if peak > limit {
			t.Errorf("%d calls in flight at once, want at most concurrency %d", peak, limit)
		}
	})
}

func TestConcurrencyOneRunsItemsInOrderWhileOneRests(t *testing.T) {
	// With concurrency.max 1 a job asked for its items one at a time: a
	// resting item keeps its place (found by the web package's metrics
	// test, whose breaker counts three failing items in a row: with the
	// next item started in a resting one's place, that one's successful
	// retry came between them and the breaker never opened).
	synctest.Test(t, func(t *testing.T) {
		var (
			mu    sync.Mutex
			order []int
			first atomic.Bool
		)
		run := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			mu.Lock()
			order = append(order, it.Idx)
			mu.Unlock()
			if it.Idx == 0 && first.CompareAndSwap(false, true) {
				return task.Result{}, classify.WithClass(errors.New("500 server error"), classify.Retryable, "test")
			}
			return ok("x")
		})
		cfg := engine.Config{Concurrency: 1, Retry: retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: 10 * time.Second, Jitter: retry.JitterNone}}}
		if _, err := engine.New(cfg, run, newMemJob()).Run(context.Background(), items(3)); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(order) != "[0 0 1 2]" {
			t.Errorf("calls in item order %v, want [0 0 1 2]: with concurrency 1 no item starts while another rests", order)
		}
	})
}

func TestAnExhaustedQuotaWithAShortResetPausesDispatchUntilTheReset(t *testing.T) {
	// A 200 with x-ratelimit-remaining-requests: 0 and reset-requests: 3s
	// paused dispatch for 3s/limit (a continuous minute's refill of one
	// call): the next calls went out 0.06s apart into a window that
	// admits nothing before its reset. A reset that short is no minute's
	// bucket, and nothing comes back before it.
	for _, tt := range []struct {
		name string
		rpm  int
	}{
		{"limit learned from the headers", 0},
		{"limit set by the spec", 6000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := &callLog{start: time.Now()}
				q := &quotaTask{quota: engine.Quota{RequestsLimit: 50, RequestsRemaining: 0, RequestsReset: 3 * time.Second, TokensLimit: -1, TokensRemaining: -1}}
				q.run = func(task.Item) (task.Result, error) {
					log.add()
					q.quota.RequestsRemaining, q.quota.RequestsReset = 49, 3*time.Second // the window turned
					return ok("x")
				}
				q.e = engine.New(engine.Config{Concurrency: 1, RequestsPerMinute: tt.rpm}, q, newMemJob())
				if _, err := q.e.Run(context.Background(), items(2)); err != nil {
					t.Fatal(err)
				}
				if len(log.at) != 2 || log.at[1] < 3*time.Second || log.at[1] > 3100*time.Millisecond {
					t.Errorf("calls at %v, want the second at the 3s reset", log.at)
				}
			})
		})
	}
}

func TestA429sRetryHintWinsOverTheLimitTheHeadersName(t *testing.T) {
	// A 429 with x-ratelimit-limit-requests: 3 and retry-after-ms: 2500:
	// the learned limiter (3 a minute, drained) held the retry for 20s.
	// The server's explicit hint is its bucket speaking; the limit is a
	// model of it. The hint wins.
	synctest.Test(t, func(t *testing.T) {
		log := &callLog{start: time.Now()}
		var calls atomic.Int32
		q := &quotaTask{quota: engine.Quota{RequestsLimit: 3, RequestsRemaining: 0, TokensLimit: -1, TokensRemaining: -1, RetryAfter: 2500 * time.Millisecond}}
		q.run = func(task.Item) (task.Result, error) {
			log.add()
			if calls.Add(1) == 1 {
				q.quota.RetryAfter = 0
				return task.Result{}, classify.WithClass(hinted429{2500 * time.Millisecond}, classify.Retryable, "test")
			}
			return ok("x")
		}
		q.e = engine.New(engine.Config{Concurrency: 1, Retry: fastRetry}, q, newMemJob())
		if _, err := q.e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		if len(log.at) != 2 || log.at[1] < 2500*time.Millisecond || log.at[1] > 2600*time.Millisecond {
			t.Errorf("calls at %v, want the retry at 2.5s, when the server's hint expires (not 20s, the learned 3/min)", log.at)
		}
	})
}
