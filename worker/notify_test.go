package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/engine"
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

// rateLimited is a provider's 429 with a retry hint.
type rateLimited struct{}

func (rateLimited) Error() string             { return "429 Too Many Requests" }
func (rateLimited) HTTPStatus() int           { return 429 }
func (rateLimited) RetryAfter() time.Duration { return 30 * time.Second }

// blockingTask's calls signal started and end only when release is
// closed or their context ends: a worker whose engine makes no new call
// (no reserve of the budget, no 429 of its own) while the test runs.
func blockingTask(started chan<- struct{}, release <-chan struct{}) func(task.Task) task.Task {
	return func(task.Task) task.Task {
		return task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
			select {
			case started <- struct{}{}:
			default:
			}
			select {
			case <-ctx.Done():
				return task.Result{}, ctx.Err()
			case <-release:
				return task.Result{Output: json.RawMessage(`{"ok": true}`)}, nil
			}
		})
	}
}

// watchEvents makes cfg's worker send each engine event of kind to the
// returned channel (dropped when nobody reads).
func watchEvents(cfg *worker.Config, kind engine.EventKind) <-chan engine.Event {
	ch := make(chan engine.Event, 64)
	cfg.OnJob = func(worker.JobRun) func(engine.Event) {
		return func(ev engine.Event) {
			if ev.Kind == kind {
				select {
				case ch <- ev:
				default:
				}
			}
		}
	}
	return ch
}

// awaitEvent waits for an event on ch that ok accepts, up to a safety
// net far shorter than the hour the workers of these tests poll at.
func awaitEvent(t *testing.T, what string, ch <-chan engine.Event, ok func(engine.Event) bool) engine.Event {
	t.Helper()
	limit := time.After(2 * time.Minute)
	for {
		select {
		case ev := <-ch:
			if ok(ev) {
				return ev
			}
		case <-limit:
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}

// TestACooldownMetByOneWorkerReachesAnotherByNotification: worker A's
// calls all meet a 429 with a 30 s retry hint, which A shares as the
// job's cooldown; worker B, whose calls succeed, begins the same
// cooldown because the cooldown's row announced it (LISTEN/NOTIFY), not
// because it polled: both poll once an hour here.
func TestACooldownMetByOneWorkerReachesAnotherByNotification(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	// A breaker that never trips: its notification would make B read
	// everything, the cooldown included.
	e := enqueue(t, c, writeJob(t, 400, "mock:\n  latency: 1ms\nbreaker: {threshold: 100000}\n"))
	cfgB := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgB, time.Hour)
	worker.WrapTask(&cfgB, slowSuccess)
	cooldowns := watchEvents(&cfgB, engine.Cooldown)
	b := startWorkers(t, c, 1, cfgB)[0]
	waitFor(t, "worker B to run the job", func() (bool, error) {
		_, running := worker.GateClosed(b, e.JobID)
		return running, nil
	})
	cfgA := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgA, time.Hour)
	worker.WrapTask(&cfgA, func(task.Task) task.Task {
		return task.Func(func(context.Context, task.Item) (task.Result, error) { return task.Result{}, rateLimited{} })
	})
	started := time.Now()
	startWorkers(t, c, 1, cfgA)
	ev := awaitEvent(t, "worker B to begin the cooldown worker A met", cooldowns, func(engine.Event) bool { return true })
	if !strings.Contains(ev.Reason, "a worker of this job") {
		t.Errorf("worker B's cooldown %q, want the shared one (a 429 met by a worker of this job)", ev.Reason)
	}
	if ev.Until.Before(started.Add(25 * time.Second)) {
		t.Errorf("worker B cools down until %s, want the 30 s hint A met after %s", ev.Until, started)
	}
}

// TestABudgetReachedByOneWorkerStopsAnotherByNotification: worker B's two
// calls hang, so its engine reserves nothing more and learns of the
// budget only from the job's row; worker A spends the job's budget, and B
// stops for it because the row announced it: both poll once an hour.
func TestABudgetReachedByOneWorkerStopsAnotherByNotification(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeBudgetJob(t, 400, "{max_tokens: 800}"))
	started, release := make(chan struct{}, 2), make(chan struct{})
	cfgB := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgB, time.Hour)
	worker.WrapTask(&cfgB, blockingTask(started, release))
	stops := watchEvents(&cfgB, engine.Stopping)
	startWorkers(t, c, 1, cfgB)
	t.Cleanup(func() { close(release) }) // before the workers stop
	for range 2 {
		select {
		case <-started:
		case <-time.After(2 * time.Minute):
			t.Fatal("gave up waiting for worker B's two calls")
		}
	}
	cfgA := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfgA, time.Hour)
	startWorkers(t, c, 1, cfgA)
	awaitEvent(t, "worker B to stop at the budget worker A reached", stops, func(ev engine.Event) bool {
		return strings.Contains(ev.Reason, "budget.max_tokens of 800 reached")
	})
}

// TestATerminalsCheckInsReachAWorkerByNotification: a terminal that
// begins attending a job with checkin_every makes a running worker count
// its items toward the check-ins at once, because the check-ins' row
// announced it: the worker polls once an hour. The worker listens before
// it takes the job up (it works every job, and the job is enqueued after),
// so that the look its listener's start asks for cannot read the
// check-ins instead.
func TestATerminalsCheckInsReachAWorkerByNotification(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	cfg := worker.Config{Concurrency: 2}
	worker.SharedPollEvery(&cfg, time.Hour)
	worker.WrapTask(&cfg, slowSuccess)
	w := startWorkers(t, c, 1, cfg)[0]
	waitFor(t, "the worker to listen", func() (bool, error) { return worker.Listening(w), nil })
	e := enqueue(t, c, writeJob(t, 400, "checkin_every: 20\nmock:\n  latency: 1ms\n"))
	waitFor(t, "the worker to run the job", func() (bool, error) {
		_, running := worker.CountsCheckins(w, e.JobID)
		return running, nil
	})
	if counts, _ := worker.CountsCheckins(w, e.JobID); counts {
		t.Fatal("the worker counts check-ins before any terminal attends")
	}
	if _, err := c.BeginAttending(t.Context(), e.JobID); err != nil {
		t.Fatal(err)
	}
	waitForUpTo(t, "the worker to count the terminal's check-ins", 2*time.Minute, func() (bool, error) {
		counts, _ := worker.CountsCheckins(w, e.JobID)
		return counts, nil
	})
}
