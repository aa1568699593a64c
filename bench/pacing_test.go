package bench

import (
	"context"
	"encoding/json"
	"io"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// memJob is a store.Job that keeps records in memory: the pacing figures
// are about dispatch, not about the checkpoint.
type memJob struct {
	mu   sync.Mutex
	recs []store.Record
}

func (j *memJob) Manifest() store.Manifest                                    { return store.Manifest{} }
func (j *memJob) SetState(context.Context, store.State) error                 { return nil }
func (j *memJob) UpdateManifest(context.Context, func(*store.Manifest)) error { return nil }
func (j *memJob) Flush(context.Context) error                                 { return nil }
func (j *memJob) Finish(context.Context) error                                { return nil }
func (j *memJob) Close() error                                                { return nil }
func (j *memJob) Scan(context.Context, func(store.Record) error) error        { return nil }
func (j *memJob) Failures(context.Context, func(store.Record) error) error    { return nil }
func (j *memJob) Outcomes(context.Context) (store.Outcomes, error)            { return nil, nil }
func (j *memJob) Append(_ context.Context, recs ...store.Record) error {
	j.mu.Lock()
	j.recs = append(j.recs, recs...)
	j.mu.Unlock()
	return nil
}

// countItems is a source of n items with nothing in them.
func countItems(n int) engine.Source {
	i := 0
	return engine.SourceFunc(func() (task.Item, error) {
		if i == n {
			return task.Item{}, io.EOF
		}
		it := task.Item{Idx: i, Raw: json.RawMessage(`{}`)}
		i++
		return it, nil
	})
}

// sleepTask answers after latency, like a call to a slow service.
func sleepTask(latency time.Duration) task.Task {
	return task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
		t := time.NewTimer(latency)
		defer t.Stop()
		select {
		case <-t.C:
			return task.Result{Output: json.RawMessage(`"ok"`)}, nil
		case <-ctx.Done():
			return task.Result{}, ctx.Err()
		}
	})
}

// pacingCase is one way of running the same 100 items.
type pacingCase struct {
	name        string
	concurrency int
	pacing      engine.Pacing
	// want is the exact wall time under fake time, worked out from the
	// engine's dispatch loop (see TestBatchBarrierAgainstContinuousPipeline).
	want time.Duration
}

const (
	pacingItems   = 100
	pacingLatency = 200 * time.Millisecond
)

// batchBaseline is how older tools pace calls: batches of 10 with a
// barrier at the end of each, 2 in flight, 0.2s between two dispatches
// and 1s between batches.
var batchBaseline = engine.Pacing{BatchSize: 10, BatchDelay: time.Second, ItemDelay: 200 * time.Millisecond}

func pacingCases() []pacingCase {
	return []pacingCase{
		// A batch dispatches at 0, 0.2, …, 1.8s (the item delay, not the
		// 2 slots, sets the pace), its last item ends at 2.0s, then the
		// batch delay; from the second batch on the item delay also comes
		// before the batch's first dispatch: 3.0s + 9 × 3.2s = 31.8s, less
		// the pause after the last batch, which the engine skips once it
		// sees the input is exhausted: 30.8s.
		{"batches of 10, 2 in flight, item delay 0.2s, batch delay 1s", 2, batchBaseline, 30800 * time.Millisecond},
		// 100 items × 0.2s / 2 slots.
		{"continuous, 2 in flight", 2, engine.Pacing{}, 10 * time.Second},
		// 100 items × 0.2s / 10 slots.
		{"continuous, 10 in flight", 10, engine.Pacing{}, 2 * time.Second},
	}
}

// runPaced runs the items through the engine inside a synctest bubble and
// returns the run's wall time in fake time.
func runPaced(t *testing.T, c pacingCase) time.Duration {
	t.Helper()
	var elapsed time.Duration
	synctest.Test(t, func(t *testing.T) {
		job := &memJob{}
		cfg := engine.Config{Concurrency: c.concurrency, Pacing: c.pacing, Total: pacingItems}
		e := engine.New(cfg, sleepTask(pacingLatency), job)
		start := time.Now()
		s, err := e.Run(t.Context(), countItems(pacingItems))
		elapsed = time.Since(start)
		if err != nil || s.Succeeded != pacingItems || len(job.recs) != pacingItems {
			t.Fatalf("%s: %d of %d items succeeded, %d records, error %v", c.name, s.Succeeded, pacingItems, len(job.recs), err)
		}
	})
	return elapsed
}

// TestBatchBarrierAgainstContinuousPipeline measures 100 items of 200ms
// through tenax's engine paced as older tools pace them (batches with a
// barrier, pauses between items and batches) and as tenax's continuous
// pipeline runs them. Time is fake (testing/synctest), so the figures are
// exact: they are the schedule the engine's dispatch loop produces, with
// no machine noise in them. Run with -v to see the table that
// docs/benchmarks.md shows.
func TestBatchBarrierAgainstContinuousPipeline(t *testing.T) {
	cases := pacingCases()
	baseline := time.Duration(0)
	for i, c := range cases {
		got := runPaced(t, c)
		if got != c.want {
			t.Errorf("%s: the run took %v of fake time, want %v", c.name, got, c.want)
		}
		if i == 0 {
			baseline = got
		}
		t.Logf("%-62s %6.1fs  %5.1f items/s  baseline/this %5.2fx", c.name, got.Seconds(), pacingItems/got.Seconds(), baseline.Seconds()/got.Seconds())
	}
}
