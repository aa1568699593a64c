package worker_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestAnAnswerAfterANewTripIsToldTheBreakerTrippedAgain: a terminal whose
// answer to trip 1 came after another operator had answered it and the
// breaker had tripped again was told the breaker closed without an answer
// (TripSettled{}). It is told the trip was settled and the breaker tripped
// again, and which trip it is on.
func TestAnAnswerAfterANewTripIsToldTheBreakerTrippedAgain(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	release := make(chan struct{})
	// Trip 1's answer comes only once the breaker tripped again; trip 2
	// is aborted, which ends the job.
	op := &operator{answer: func(_ context.Context, q engine.SharedTrip) engine.TripDecision {
		if q.Trip == 1 {
			<-release
			return engine.TripContinue
		}
		return engine.TripAbortRun
	}}
	attend(t, c, e.JobID, "a slow terminal", op)
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the terminal to be asked trip 1", func() (bool, error) {
		asked, _ := op.seen()
		return len(asked) == 1, nil
	})
	if err := c.Decide(t.Context(), e.JobID, worker.Continue, "tenax breaker elsewhere"); err != nil {
		t.Fatalf("the first answer: %v", err)
	}
	var trips int
	waitFor(t, "the breaker to trip again", func() (bool, error) {
		p, err := c.Progress(t.Context(), e.JobID)
		trips = p.Breaker.Trips
		return trips >= 2, err
	})
	close(release)
	waitFor(t, "the terminal to be told how trip 1 was settled", func() (bool, error) {
		_, settled := op.seen()
		return len(settled) == 1, nil
	})
	if _, settled := op.seen(); settled[0].Answered || settled[0].TrippedAgain < trips {
		t.Errorf("told %+v, want trip 1 settled and the breaker tripped again (trip %d or later)", settled[0], trips)
	}
	waitFor(t, "the job to be aborted at trip 2", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
}

// TestAFailedReadOfHowATripWasSettledIsToldAsSuch: a terminal whose
// question was taken back, and whose read of the breaker's row then
// failed, was told the breaker closed without an answer (TripSettled{}). It is
// told the read failed, with the database's error.
func TestAFailedReadOfHowATripWasSettledIsToldAsSuch(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := promptJob(t, c)
	conn := connect(t, dsn)
	// A trip asked on a terminal (no worker needed: the row is the
	// question).
	if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_breakers (job_id, state, action, owner, trips, summary)
		VALUES ($1, 'open', 'prompt', 'elsewhere', 1, 'Circuit breaker open: 3 consecutive failures')`, e.JobID); err != nil {
		t.Fatal(err)
	}
	// Once the question is taken back, the breaker's table is gone for
	// the read of how it was settled: a database error. (On a connection
	// of its own: a pgx.Conn is for one goroutine.)
	away := connect(t, dsn)
	op := &operator{answer: func(ctx context.Context, _ engine.SharedTrip) engine.TripDecision {
		<-ctx.Done()
		if _, err := away.Exec(context.Background(), `ALTER TABLE tenax_breakers RENAME TO tenax_breakers_away`); err != nil {
			t.Error(err)
		}
		return engine.TripNoAnswer
	}}
	attend(t, c, e.JobID, "a terminal", op)
	waitFor(t, "the terminal to be asked", func() (bool, error) {
		asked, _ := op.seen()
		return len(asked) == 1, nil
	})
	if _, err := conn.Exec(t.Context(), `UPDATE tenax_breakers SET decision = 'abort', decided_by = 'tenax breaker elsewhere' WHERE job_id = $1`, e.JobID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the terminal to be told how the trip was settled", func() (bool, error) {
		_, settled := op.seen()
		return len(settled) == 1, nil
	})
	if _, err := conn.Exec(t.Context(), `ALTER TABLE tenax_breakers_away RENAME TO tenax_breakers`); err != nil {
		t.Fatal(err)
	}
	_, settled := op.seen()
	var pgErr *pgconn.PgError
	if a := settled[0]; a.Answered || a.TrippedAgain != 0 || !errors.As(a.ReadErr, &pgErr) {
		t.Errorf("told %+v, want the read's failure, a database error", a)
	}
}
