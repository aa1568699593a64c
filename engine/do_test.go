package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

type ctxKey struct{}

// ctxJob is a checkpoint that keeps, for each record, the value its
// Append's context carried.
type ctxJob struct {
	*memJob
	mu   sync.Mutex
	seen map[int]any
}

func (j *ctxJob) Append(ctx context.Context, recs ...store.Record) error {
	j.mu.Lock()
	for _, r := range recs {
		j.seen[r.Idx] = ctx.Value(ctxKey{})
	}
	j.mu.Unlock()
	return j.memJob.Append(ctx, recs...)
}

// TestDoBringsPushedItemsToTheirOutcome: items pushed through Do, beside
// Run(ctx, nil), are retried and healed as Run's own items are; each Do
// returns the record written, and the checkpoint is given Do's context's
// values (a queue's worker completes its job in the record's transaction).
func TestDoBringsPushedItemsToTheirOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) { return ok("x") },
		}}
		job := &ctxJob{memJob: newMemJob(), seen: map[int]any{}}
		e := engine.New(engine.Config{Concurrency: 2, Retry: fastRetry}, tk, job)
		ran := make(chan engine.Summary)
		go func() {
			sum, err := e.Run(context.Background(), nil)
			if err != nil {
				t.Error(err)
			}
			ran <- sum
		}()
		var wg sync.WaitGroup
		for i := range 3 {
			wg.Go(func() {
				ctx := context.WithValue(context.Background(), ctxKey{}, i)
				rec, err := e.Do(ctx, task.Item{Idx: i, Raw: []byte(`{}`)})
				if err != nil {
					t.Errorf("Do(item %d): %v", i, err)
					return
				}
				if rec.Idx != i || rec.Attempts != 2 || rec.Error != "" {
					t.Errorf("Do(item %d) returned %+v, want its record after 2 attempts", i, rec)
				}
			})
		}
		wg.Wait()
		e.Stop(engine.StopOperator, "done")
		sum := <-ran
		if sum.Succeeded != 3 || sum.Retries != 3 {
			t.Errorf("summary %+v, want 3 succeeded after 3 retries", sum.Stats)
		}
		for i := range 3 {
			if job.seen[i] != i {
				t.Errorf("item %d's record was appended under a context carrying %v, want Do's (%d)", i, job.seen[i], i)
			}
		}
	})
}

// TestDoAfterStopLeavesTheItemPending: a stop ends Do's waits (a retry's
// backoff) and refuses new items; Run(ctx, nil) returns once the Do calls
// under way have ended.
func TestDoAfterStopLeavesTheItemPending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			return task.Result{}, classify.WithClass(errors.New("reset"), classify.Retryable, "test")
		})
		pol := fastRetry
		pol.Backoff.Base, pol.Backoff.Max = time.Hour, time.Hour
		job := newMemJob()
		e := engine.New(engine.Config{Concurrency: 1, Retry: pol}, tk, job)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			if _, err := e.Run(context.Background(), nil); err != nil {
				t.Error(err)
			}
		}()
		did := make(chan error)
		go func() {
			_, err := e.Do(context.Background(), task.Item{Idx: 0, Raw: []byte(`{}`)})
			did <- err
		}()
		synctest.Wait() // item 0 rests before its retry
		e.Stop(engine.StopOperator, "stop")
		if err := <-did; !errors.Is(err, engine.ErrPending) {
			t.Fatalf("Do of an item resting when the run stopped: %v, want ErrPending", err)
		}
		<-ran
		if _, err := e.Do(context.Background(), task.Item{Idx: 1, Raw: []byte(`{}`)}); !errors.Is(err, engine.ErrPending) {
			t.Fatalf("Do after the stop: %v, want ErrPending", err)
		}
		if n := job.count(); n != 0 {
			t.Fatalf("%d records, want none", n)
		}
	})
}

// slowJob is a checkpoint whose Append takes a while, as a worker's
// does: it returns once the group holding the record commits.
type slowJob struct {
	*memJob
	wait time.Duration
}

func (j *slowJob) Append(ctx context.Context, recs ...store.Record) error {
	time.Sleep(j.wait)
	return j.memJob.Append(ctx, recs...)
}

// TestATripHoldsCallsWhileTheFailuresRecordsAreWritten: items pushed
// through Do by more goroutines than the concurrency (River's executions
// on a worker), over a checkpoint whose Append takes 20 ms, all called
// and failed before the breaker, at threshold 3, opened: each failure
// reached the breaker only once its record was written, and the call's
// slot was handed on before. The trip holds within the threshold and the
// calls in flight as it came.
func TestATripHoldsCallsWhileTheFailuresRecordsAreWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const threshold, concurrency, items = 3, 2, 12
		var calls atomic.Int64
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			calls.Add(1)
			return task.Result{}, errFatal
		})
		job := &slowJob{memJob: newMemJob(), wait: 20 * time.Millisecond}
		e := engine.New(engine.Config{Concurrency: concurrency, Retry: fastRetry,
			Breaker: breaker.Settings{Threshold: threshold}, OnTrip: engine.TripAbort}, tk, job)
		ran := make(chan struct{})
		go func() {
			defer close(ran)
			if _, err := e.Run(context.Background(), nil); err != nil {
				t.Error(err)
			}
		}()
		var wg sync.WaitGroup
		for i := range items {
			wg.Go(func() { _, _ = e.Do(context.Background(), task.Item{Idx: i, Raw: []byte(`{}`)}) })
		}
		wg.Wait()
		<-ran
		if n := calls.Load(); n < threshold || n > threshold+concurrency {
			t.Errorf("%d calls of %d items before the trip held them, want %d to %d (the threshold and the calls in flight)", n, items, threshold, threshold+concurrency)
		}
	})
}
