package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// questionWritten waits until the worker that tripped has written its
// question into the job's breaker row.
func questionWritten(t *testing.T, dsn, jobID string) {
	t.Helper()
	conn := connect(t, dsn)
	waitForUpTo(t, "the trip's question", time.Minute, func() (bool, error) {
		var summary string
		err := conn.QueryRow(t.Context(), `SELECT summary FROM tenax_breakers WHERE job_id = $1`, jobID).Scan(&summary)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		return summary != "", err
	})
}

// TestAnOperatorsAnswerReachesTheTrippedWorkerByNotification: the worker
// whose trip waits for the operator (on_trip: prompt) learns of the
// answer as it commits, not at a poll of its own: with its poll set to
// an hour, a Continue lets it go on and trip again within seconds.
func TestAnOperatorsAnswerReachesTheTrippedWorkerByNotification(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := promptJob(t, c)
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 2}
	worker.SharedPollEvery(&cfg, time.Hour)
	startWorkers(t, c, 1, cfg)
	questionWritten(t, dsn, e.JobID)
	if err := c.Decide(t.Context(), e.JobID, worker.Continue, "tenax breaker in the test"); err != nil {
		t.Fatal(err)
	}
	waitForUpTo(t, "the worker to go on and trip again", 30*time.Second, func() (bool, error) {
		p, err := c.Progress(t.Context(), e.JobID)
		return p.Breaker.Trips >= 2, err
	})
}

// TestAnAttendingTerminalIsAskedByNotification: an attending terminal
// (Attend) is asked a trip's question as the worker that tripped writes
// it, not at a tick of its own: with its ticks set to an hour, it is
// asked within seconds, and its abort stops the job.
func TestAnAttendingTerminalIsAskedByNotification(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	op := &operator{answer: func(context.Context, engine.SharedTrip) engine.TripDecision { return engine.TripAbortRun }}
	a, err := c.BeginAttending(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	worker.AttendPollEvery(a, time.Hour)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Serve(ctx, "the test's terminal", op) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitForUpTo(t, "the terminal to be asked", 30*time.Second, func() (bool, error) {
		asked, _ := op.seen()
		return len(asked) == 1, nil
	})
	waitForUpTo(t, "the job to be aborted by the terminal's answer", 30*time.Second, func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
}
