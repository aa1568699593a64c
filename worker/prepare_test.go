package worker_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// countingTask counts what the engine asks of the job's task.
type countingTask struct {
	task.Task
	prepares, runs *atomic.Int64
}

func (c countingTask) Prepare(ctx context.Context, it task.Item) (task.Prepared, error) {
	c.prepares.Add(1)
	return c.Task.(task.Preparer).Prepare(ctx, it)
}

func (c countingTask) Run(ctx context.Context, it task.Item) (task.Result, error) {
	c.runs.Add(1)
	return c.Task.Run(ctx, it)
}

// TestWorkersPrepareEachAttemptOnce: a worker's engine prepares each
// attempt once (the prompt rendered, estimated and keyed once) and calls
// what it prepared. The worker wrapped the job's task in its shared gate,
// which hid the LLM task's Prepare: every prompt was rendered again for
// each question the engine asked (its estimate, its cache, its call).
func TestWorkersPrepareEachAttemptOnce(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 30
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n  errors: {server: 0.3}\nrate_limit: {requests_per_minute: 60000, tokens_per_minute: 10000000}\n"))
	var prepares, runs atomic.Int64
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(tk task.Task) task.Task {
		if _, ok := tk.(task.Preparer); !ok {
			t.Errorf("the job's task %T prepares nothing: the test needs an LLM task", tk)
		}
		return countingTask{Task: tk, prepares: &prepares, runs: &runs}
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
}
