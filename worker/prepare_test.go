package worker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// countingTask counts what the engine asks of the job's task.
type countingTask struct {
	task.Task
	prepares, runs *atomic.Int64
	// outsideRiver counts the calls made under a context that is not a
	// River execution's.
	outsideRiver *atomic.Int64
}

func (c countingTask) Prepare(ctx context.Context, it task.Item) (task.Prepared, error) {
	c.prepares.Add(1)
	p, err := c.Task.(task.Preparer).Prepare(ctx, it)
	if run := p.Run; run != nil {
		p.Run = func(ctx context.Context) (task.Result, error) {
			if _, err := river.ClientFromContextSafely[pgx.Tx](ctx); err != nil {
				c.outsideRiver.Add(1)
			}
			return run(ctx)
		}
	}
	return p, err
}

func (c countingTask) Run(ctx context.Context, it task.Item) (task.Result, error) {
	c.runs.Add(1)
	return c.Task.Run(ctx, it)
}

// TestWorkersPrepareEachAttemptOnce: a worker's engine prepares each
// attempt once (the prompt rendered, estimated and keyed once) and calls
// what it prepared, under River's execution context. The worker wrapped
// the job's task in its shared gate, which hid the LLM task's Prepare:
// every prompt was rendered again for each question the engine asked (its
// estimate, its cache, its call); and River's executions handed their
// items to the engine through a channel, so calls ran under the worker's
// own context, not River's.
func TestWorkersPrepareEachAttemptOnce(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 30
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n  errors: {server: 0.3}\nrate_limit: {requests_per_minute: 60000, tokens_per_minute: 10000000}\n"))
	var prepares, runs, outsideRiver atomic.Int64
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(tk task.Task) task.Task {
		if _, ok := tk.(task.Preparer); !ok {
			t.Errorf("the job's task %T prepares nothing: the test needs an LLM task", tk)
		}
		return countingTask{Task: tk, prepares: &prepares, runs: &runs, outsideRiver: &outsideRiver}
	})
	startWorkers(t, c, 1, cfg)
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var attempts int64
	if err := conn.QueryRow(t.Context(), `SELECT COALESCE(sum((record->>'attempts')::int), 0) FROM tenax_records WHERE job_id = $1`, e.JobID).Scan(&attempts); err != nil {
		t.Fatal(err)
	}
	if attempts <= n {
		t.Fatalf("%d attempts over %d items: the mock's server errors were meant to make some retries", attempts, n)
	}
	if got := prepares.Load(); got != attempts || runs.Load() != 0 {
		t.Errorf("%d attempts prepared and %d calls made without preparing, over %d attempts recorded; want every attempt prepared once and none unprepared", got, runs.Load(), attempts)
	}
	if n := outsideRiver.Load(); n != 0 {
		t.Errorf("%d calls made outside a River execution's context, want none", n)
	}
}
