package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

// memJob is a job of store/memory, the in-memory store that passes the
// conformance suite, that also counts what the engine appends per idx so
// a test can tell a second record for one item.
type memJob struct {
	store.Job
	mu      sync.Mutex
	appends map[int]int
	records []store.Record
}

// newMemJob creates a job in a fresh memory store.
func newMemJob() *memJob {
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "test", Created: time.Now()})
	if err != nil {
		panic(err)
	}
	return &memJob{Job: j, appends: map[int]int{}}
}

func (j *memJob) Append(ctx context.Context, recs ...store.Record) error {
	if err := j.Job.Append(ctx, recs...); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, r := range recs {
		j.appends[r.Idx]++
		j.records = append(j.records, r)
	}
	return nil
}

func (j *memJob) count() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.records)
}

// byIdx returns the job's records by idx, read back from the store; it
// panics if the engine appended two records for one idx.
func (j *memJob) byIdx() map[int]store.Record {
	j.mu.Lock()
	for idx, n := range j.appends {
		if n > 1 {
			j.mu.Unlock()
			panic(fmt.Sprintf("two records for idx %d", idx))
		}
	}
	j.mu.Unlock()
	m := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error {
		m[r.Idx] = r
		return nil
	}); err != nil {
		panic(err)
	}
	return m
}

// items returns a Source of n items {"n": i}.
func items(n int) engine.Source {
	i := 0
	return engine.SourceFunc(func() (task.Item, error) {
		if i >= n {
			return task.Item{}, io.EOF
		}
		raw := json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))
		it := task.Item{Idx: i, Fields: map[string]any{"n": i}, Raw: raw}
		i++
		return it, nil
	})
}

var (
	errRetryable = classify.WithClass(errors.New("connection reset"), classify.Retryable, "test")
	errFatal     = classify.WithClass(errors.New("401 invalid key"), classify.Fatal, "test")
	errItem      = classify.WithClass(errors.New("400 bad item"), classify.Item, "test")
)

func ok(s string) (task.Result, error) {
	b, _ := json.Marshal(s)
	return task.Result{Output: b}, nil
}

// fastRetry retries quickly so that synctest runs stay short.
var fastRetry = retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: 10 * time.Millisecond, Max: time.Second, Jitter: retry.JitterNone}}

// scriptTask answers each call of an item from a script of results, the last
// repeated.
type scriptTask struct {
	mu     sync.Mutex
	script []func() (task.Result, error)
	calls  map[int]int
	seen   []task.Item
}

func (s *scriptTask) Run(ctx context.Context, it task.Item) (task.Result, error) {
	s.mu.Lock()
	if s.calls == nil {
		s.calls = map[int]int{}
	}
	n := s.calls[it.Idx]
	s.calls[it.Idx]++
	s.seen = append(s.seen, it)
	step := s.script[min(n, len(s.script)-1)]
	s.mu.Unlock()
	return step()
}

type validatorFunc func(json.RawMessage) error

func (f validatorFunc) Validate(_ context.Context, out json.RawMessage) error { return f(out) }

// onlyValid accepts the output "valid".
var onlyValid = validatorFunc(func(out json.RawMessage) error {
	if string(out) == `"valid"` {
		return nil
	}
	return fmt.Errorf("output %s is not \"valid\"", out)
})

// TestCounterResetsAfterInvalidOutput reproduces docs/heal.md's scenario ("The loop"):
// with retry.max_attempts 3, the calls [retryable, invalid output,
// retryable, retryable, valid output] end in success after 5 calls.
func TestCounterResetsAfterInvalidOutput(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) { return ok("wrong") },
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) { return ok("valid") },
		}}
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1, Retry: fastRetry, Validator: onlyValid}, tk, job)
		s, err := e.Run(context.Background(), items(1))
		if err != nil {
			t.Fatal(err)
		}
		rec := job.byIdx()[0]
		if rec.Failed() || s.Succeeded != 1 {
			t.Fatalf("item failed: %+v (a counter that forgot to reset after the invalid answer stops at the 4th call)", rec)
		}
		if rec.Attempts != 5 || rec.HealAttempts != 1 || rec.GenerationAttempts != 2 {
			t.Errorf("attempts=%d heal_attempts=%d generation_attempts=%d, want 5, 1, 2", rec.Attempts, rec.HealAttempts, rec.GenerationAttempts)
		}
	})
}

// TestRetryableStreakExhausts is the contrast: three retryable failures in a
// row, with no success between, exhaust max_attempts 3.
func TestRetryableStreakExhausts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return task.Result{}, errRetryable },
		}}
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1, Retry: fastRetry}, tk, job)
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		rec := job.byIdx()[0]
		if rec.Class != classify.Retryable || rec.Attempts != 3 || !rec.Retryable {
			t.Fatalf("got class %s after %d attempts, want retryable after 3", rec.Class, rec.Attempts)
		}
	})
}

func TestEveryItemGetsOneRecord(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		failedOnce := map[int]bool{}
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			// Every third item fails its first call, retryably.
			mu.Lock()
			first := !failedOnce[it.Idx]
			failedOnce[it.Idx] = true
			mu.Unlock()
			if it.Idx%3 == 0 && first {
				return task.Result{}, errRetryable
			}
			time.Sleep(time.Duration(it.Idx%7) * time.Millisecond)
			return ok("done")
		})
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 16, Retry: fastRetry, Total: 500}, tk, job)
		s, err := e.Run(context.Background(), items(500))
		if err != nil {
			t.Fatal(err)
		}
		recs := job.byIdx()
		if len(recs) != 500 || s.Succeeded != 500 || s.Failed != 0 || s.Pending != 0 {
			t.Fatalf("records=%d succeeded=%d failed=%d pending=%d, want 500/500/0/0", len(recs), s.Succeeded, s.Failed, s.Pending)
		}
		if s.Retries == 0 {
			t.Error("no retries counted, though every third call failed")
		}
	})
}

func TestConcurrencyLimitHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cur, peak atomic.Int64
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			c := cur.Add(1)
			for {
				p := peak.Load()
				if c <= p || peak.CompareAndSwap(p, c) {
					break
				}
			}
			time.Sleep(10 * time.Millisecond)
			cur.Add(-1)
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 5}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(100)); err != nil {
			t.Fatal(err)
		}
		if peak.Load() != 5 {
			t.Errorf("peak concurrency %d, want exactly 5", peak.Load())
		}
	})
}

// TestBreakerTripAborts: a fatal setup error trips the breaker after
// threshold failures; in-flight calls finish and are recorded, the rest
// stays pending, and the task was called at most threshold + concurrency
// times.
func TestBreakerTripAborts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			calls.Add(1)
			time.Sleep(5 * time.Millisecond)
			return task.Result{}, errFatal
		})
		job := newMemJob()
		const threshold, conc = 5, 4
		e := engine.New(engine.Config{Concurrency: conc, Retry: fastRetry, Breaker: breaker.Settings{Threshold: threshold}, OnTrip: engine.TripAbort, Total: 100}, tk, job)
		s, err := e.Run(context.Background(), items(100))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBreaker {
			t.Fatalf("stop = %s, want breaker", s.Stop)
		}
		if c := calls.Load(); c > threshold+conc {
			t.Errorf("task called %d times, want at most threshold+concurrency = %d", c, threshold+conc)
		}
		if got := len(job.byIdx()); int64(got) != calls.Load() {
			t.Errorf("%d records for %d calls: every finished call must be recorded", got, calls.Load())
		}
		if s.Pending != 100-s.Done {
			t.Errorf("pending = %d, want %d", s.Pending, 100-s.Done)
		}
		if s.LastFailure == nil || s.LastFailure.Decision.Class != classify.Fatal {
			t.Errorf("last failure %+v, want the fatal error", s.LastFailure)
		}
	})
}

// scatteredItems: item errors that are not consecutive never trip.
func TestScatteredItemErrorsNeverTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if it.Idx%2 == 0 {
				return task.Result{}, errItem
			}
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 1, Breaker: breaker.Settings{Threshold: 2}}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(50))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopNone || s.Failed != 25 || s.Succeeded != 25 {
			t.Fatalf("stop=%s failed=%d succeeded=%d, want none/25/25", s.Stop, s.Failed, s.Succeeded)
		}
	})
}

type scriptedPrompter struct {
	mu       sync.Mutex
	answers  []engine.TripDecision
	reports  []engine.TripReport
	checkins int
	goOn     bool
}

func (p *scriptedPrompter) Trip(_ context.Context, r engine.TripReport) engine.TripDecision {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.reports = append(p.reports, r)
	if len(p.answers) == 0 {
		return engine.TripAbortRun
	}
	a := p.answers[0]
	p.answers = p.answers[1:]
	return a
}

func (p *scriptedPrompter) CheckIn(context.Context, engine.CheckIn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checkins++
	return p.goOn
}

func TestBreakerPromptContinueThenAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var failing atomic.Bool
		failing.Store(true)
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if failing.Load() {
				return task.Result{}, errFatal
			}
			return ok("x")
		})
		p := &scriptedPrompter{answers: []engine.TripDecision{engine.TripContinue, engine.TripAbortRun}}
		e := engine.New(engine.Config{Concurrency: 1, Breaker: breaker.Settings{Threshold: 3}, OnTrip: engine.TripPrompt, Operator: p, Total: 20}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(20))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.reports) != 2 {
			t.Fatalf("asked %d times, want 2 (continue, then abort)", len(p.reports))
		}
		if r := p.reports[0]; r.Reason != "3 consecutive failures" || r.Last == nil || r.Stats.Failed != 3 {
			t.Errorf("first report = %+v, want reason '3 consecutive failures', a last failure, 3 failed", r)
		}
		if s.Trips != 2 {
			t.Errorf("%d trips counted, want 2", s.Trips)
		}
		if s.Stop != engine.StopOperator || s.Failed != 6 || s.Pending != 14 {
			t.Errorf("stop=%s failed=%d pending=%d, want operator/6/14", s.Stop, s.Failed, s.Pending)
		}
	})
}

// TestBreakerWaitRecovers: with on_trip wait, a storm of fatal errors opens
// the breaker; after the reset timeout a probe goes through, and once the
// provider recovers the job finishes.
func TestBreakerWaitRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var stormCalls atomic.Int64
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if time.Since(start) < 30*time.Second {
				stormCalls.Add(1)
				time.Sleep(10 * time.Millisecond)
				return task.Result{}, errFatal
			}
			return ok("x")
		})
		const threshold, conc, probes = 3, 4, 1
		e := engine.New(engine.Config{
			Concurrency: conc,
			Breaker:     breaker.Settings{Threshold: threshold, ResetTimeout: 10 * time.Second, Probes: probes},
			OnTrip:      engine.TripWait,
			Total:       40,
		}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(40))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopNone || s.Done != 40 {
			t.Fatalf("stop=%s done=%d, want none/40", s.Stop, s.Done)
		}
		// Before the first trip at most threshold+conc calls; then one probe
		// per reset window (30s storm / 10s windows = 3 windows).
		if limit := int64(threshold + conc + 3*probes); stormCalls.Load() > limit {
			t.Errorf("%d calls during the storm, want at most %d", stormCalls.Load(), limit)
		}
	})
}

func TestGracefulStopLeavesPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *engine.Engine
		var calls atomic.Int64
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if calls.Add(1) == 10 {
				e.Stop(engine.StopSignal, "interrupted")
			}
			time.Sleep(time.Second)
			return ok("x")
		})
		job := newMemJob()
		e = engine.New(engine.Config{Concurrency: 4, Total: 100}, tk, job)
		s, err := e.Run(context.Background(), items(100))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopSignal {
			t.Fatalf("stop = %s, want signal", s.Stop)
		}
		if got := len(job.byIdx()); int64(got) != calls.Load() || s.Failed != 0 {
			t.Errorf("%d records for %d calls, %d failed: in-flight calls must finish and be recorded as succeeded", got, calls.Load(), s.Failed)
		}
		if s.Pending != 100-int(calls.Load()) {
			t.Errorf("pending %d, want %d", s.Pending, 100-calls.Load())
		}
	})
}

func TestHardCancelKeepsInterruptedItemsPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var calls atomic.Int64
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if calls.Add(1) == 3 {
				cancel()
			}
			<-ctx.Done()
			return task.Result{}, ctx.Err()
		})
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 3, Total: 10}, tk, job)
		s, err := e.Run(ctx, items(10))
		if err != nil {
			t.Fatal(err)
		}
		if len(job.byIdx()) != 0 || s.Failed != 0 || s.Pending != 10 || s.Stop != engine.StopSignal {
			t.Fatalf("records=%d failed=%d pending=%d stop=%s: canceled items must stay pending", len(job.byIdx()), s.Failed, s.Pending, s.Stop)
		}
	})
}

func TestHealLoopFeedsBackAndSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return ok("nope") },
			func() (task.Result, error) {
				return task.Result{}, &task.OutputError{Output: `{"a":`, Err: errors.New("unexpected end of JSON input")}
			},
			func() (task.Result, error) { return ok("valid") },
		}}
		hints := []heal.Hint{{Match: regexp.MustCompile("end of JSON"), Text: "Answer with one complete JSON object."}}
		job := newMemJob()
		e := engine.New(engine.Config{Validator: onlyValid, Hints: hints}, tk, job)
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		rec := job.byIdx()[0]
		if rec.Failed() || rec.HealAttempts != 2 || rec.GenerationAttempts != 3 {
			t.Fatalf("record %+v: want success after 2 re-asks", rec)
		}
		second, third := tk.seen[1], tk.seen[2]
		if second.Feedback == nil || second.Feedback.PreviousOutput != "nope" {
			t.Fatalf("second call's feedback = %+v, want the previous output 'nope'", second.Feedback)
		}
		if third.Feedback == nil || !strings.Contains(third.Feedback.Message, "Answer with one complete JSON object.") {
			t.Errorf("third call's feedback lacks the matching hint: %+v", third.Feedback)
		}
	})
}

func TestAlwaysInvalidStopsAtErrorBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){func() (task.Result, error) { return ok("nope") }}}
		job := newMemJob()
		e := engine.New(engine.Config{Validator: onlyValid, Heal: heal.Budget{MaxAttempts: 8, MaxErrorAttempts: 3}}, tk, job)
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		rec := job.byIdx()[0]
		if rec.Class != classify.Invalid || len(rec.TrackedErrors) == 0 {
			t.Fatalf("record class %s tracked %s, want invalid with tracked errors", rec.Class, rec.TrackedErrors)
		}
		if rec.GenerationAttempts > 4 {
			t.Errorf("%d generations for an always-invalid item with max_error_attempts 3", rec.GenerationAttempts)
		}
	})
}

func TestBadItemsAreRecordedAsItemFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		i := 0
		src := engine.SourceFunc(func() (task.Item, error) {
			if i == 3 {
				return task.Item{}, io.EOF
			}
			it := task.Item{Idx: i, Raw: json.RawMessage(`{}`)}
			i++
			if it.Idx == 1 {
				return task.Item{}, &engine.BadItem{Item: it, Err: errors.New("line 2: invalid JSON")}
			}
			return it, nil
		})
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1}, task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("x") }), job)
		s, err := e.Run(context.Background(), src)
		if err != nil {
			t.Fatal(err)
		}
		if rec := job.byIdx()[1]; rec.Class != classify.Item || s.Failed != 1 || s.Succeeded != 2 {
			t.Fatalf("bad item record %+v, failed=%d succeeded=%d", rec, s.Failed, s.Succeeded)
		}
	})
}

func TestBudgetStopsDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			r, _ := ok("x")
			r.Usage = task.Usage{InputTokens: 60, OutputTokens: 40}
			return r, nil
		})
		e := engine.New(engine.Config{Concurrency: 1, Budget: engine.Budget{MaxTokens: 450}, Total: 10}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBudget || s.Done != 5 || s.Pending != 5 || s.Failed != 0 {
			t.Fatalf("stop=%s done=%d pending=%d failed=%d (%s): want budget/5/5/0", s.Stop, s.Done, s.Pending, s.Failed, s.StopDetail)
		}
	})
}

type hintErr struct{ d time.Duration }

func (h hintErr) Error() string             { return "429 rate limited" }
func (h hintErr) HTTPStatus() int           { return 429 }
func (h hintErr) RetryAfter() time.Duration { return h.d }

// TestRateLimitHintPausesEveryone: a 429 with Retry-After 7s pauses all
// calls, not just the item that got it.
func TestRateLimitHintPausesEveryone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var callTimes []time.Duration
		var first atomic.Bool
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			mu.Lock()
			callTimes = append(callTimes, time.Since(start))
			mu.Unlock()
			if it.Idx == 0 && first.CompareAndSwap(false, true) {
				return task.Result{}, classify.WithClass(hintErr{7 * time.Second}, classify.Retryable, "test")
			}
			time.Sleep(time.Second)
			return ok("x")
		})
		e := engine.New(engine.Config{Concurrency: 1, Retry: fastRetry}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(3)); err != nil {
			t.Fatal(err)
		}
		// Item 0 fails at t=0 and waits 7s; with concurrency 1 nothing else
		// runs meanwhile; the retry happens at 7s.
		if len(callTimes) != 4 || callTimes[1] != 7*time.Second {
			t.Fatalf("call times %v, want the retry at 7s", callTimes)
		}
	})
}

func TestCheckinPausesAndAsks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &scriptedPrompter{goOn: false}
		e := engine.New(engine.Config{Concurrency: 2, CheckinEvery: 10, Operator: p, Total: 100}, task.Func(func(context.Context, task.Item) (task.Result, error) {
			time.Sleep(time.Millisecond)
			return ok("x")
		}), newMemJob())
		s, err := e.Run(context.Background(), items(100))
		if err != nil {
			t.Fatal(err)
		}
		if p.checkins != 1 || s.Stop != engine.StopOperator || s.Done < 10 || s.Done > 12 {
			t.Fatalf("checkins=%d stop=%s done=%d: want one check-in after 10 items, then abort", p.checkins, s.Stop, s.Done)
		}
	})
}

// TestPostCooldownCallsGoOneAtATime: when a cooldown ends, one call goes
// first; the others wait for its outcome instead of all calling at once
// and meeting the same 429.
func TestPostCooldownCallsGoOneAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var e *engine.Engine
		var cur, peakAfter atomic.Int64
		start := time.Now()
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			c := cur.Add(1)
			defer cur.Add(-1)
			if it.Idx == 0 && time.Since(start) == 0 {
				// The provider says: no quota until 5s from now.
				e.Cooldown(start.Add(5*time.Second), "quota exhausted")
				return ok("x")
			}
			if since := time.Since(start); since >= 5*time.Second && since < 5*time.Second+10*time.Millisecond {
				for {
					p := peakAfter.Load()
					if c <= p || peakAfter.CompareAndSwap(p, c) {
						break
					}
				}
			}
			time.Sleep(10 * time.Millisecond)
			return ok("x")
		})
		e = engine.New(engine.Config{Concurrency: 8}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(40))
		if err != nil || s.Succeeded != 40 {
			t.Fatalf("succeeded %d, err %v", s.Succeeded, err)
		}
		if peakAfter.Load() != 1 {
			t.Errorf("%d calls at once while the first post-cooldown call was under way, want 1", peakAfter.Load())
		}
	})
}

func TestPacingBatches(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := engine.New(engine.Config{Concurrency: 2, Pacing: engine.Pacing{BatchSize: 10, BatchDelay: time.Second, ItemDelay: 200 * time.Millisecond}}, task.Func(func(context.Context, task.Item) (task.Result, error) {
			time.Sleep(200 * time.Millisecond)
			return ok("x")
		}), newMemJob())
		if _, err := e.Run(context.Background(), items(20)); err != nil {
			t.Fatal(err)
		}
		// Batch 1: 9 item delays and the last item's 0.2s end at 2.0s; the
		// pause takes it to 3.0s; an item delay, then batch 2 the same
		// way, ends at 5.2s. No pause after the last batch.
		if got, want := time.Since(start), 5200*time.Millisecond; got != want {
			t.Errorf("took %v, want exactly %v", got, want)
		}
	})
}
