package worker_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// slowSuccess answers every item after a while, without a call: a worker
// that keeps running while another trips the job's breaker.
func slowSuccess(task.Task) task.Task {
	return task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
		select {
		case <-ctx.Done():
			return task.Result{}, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		return task.Result{Output: json.RawMessage(`{"ok": true}`)}, nil
	})
}

// TestATripOnOneWorkerReachesAnotherByNotification: worker A's calls all
// fail (a fatal 401) and trip the job's shared breaker; worker B, whose
// calls succeed, holds the job's calls because A's trip was announced
// (LISTEN/NOTIFY), not because it polled: both poll once an hour here,
// and the wait's limit, a safety net, is far shorter than that.
func TestATripOnOneWorkerReachesAnotherByNotification(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 400, "mock:\n  latency: 1ms\n  errors: {auth: 1}\nbreaker: {threshold: 3, on_trip: abort}\n"))
	cfgB := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgB, time.Hour)
	worker.WrapTask(&cfgB, slowSuccess)
	b := startWorkers(t, c, 1, cfgB)[0]
	waitFor(t, "worker B to run the job", func() (bool, error) {
		_, running := worker.GateClosed(b, e.JobID)
		return running, nil
	})
	if closed, _ := worker.GateClosed(b, e.JobID); closed {
		t.Fatal("worker B holds the job's calls before any trip")
	}
	cfgA := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgA, time.Hour)
	startWorkers(t, c, 1, cfgA)
	waitForUpTo(t, "worker B to hold the job's calls after worker A's trip", 2*time.Minute, func() (bool, error) {
		closed, _ := worker.GateClosed(b, e.JobID)
		return closed, nil
	})
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Breaker.Open || p.Breaker.Owner == b.ID() {
		t.Errorf("shared breaker %+v, want open, tripped by worker A (B is %s)", p.Breaker, b.ID())
	}
}
