package worker_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/worker"
)

// TestAWorkerTripHoldsWithinItsCallsInFlight: at the mock's 1 ms, a
// worker's trip at threshold 3 held its calls only after 25–32 of 40
// items had failed with a fatal 401: its engine counted each failure
// toward the breaker once the item's record was committed, a group
// commit later, and the calls of the items that came in meanwhile all
// went out. The trip holds within the threshold and the calls in flight
// as it came.
func TestAWorkerTripHoldsWithinItsCallsInFlight(t *testing.T) {
	const threshold, concurrency = 3, 2
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 40, "mock:\n  latency: 1ms\n  errors: {auth: 1}\nbreaker: {threshold: 3, on_trip: prompt}\n"))
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: concurrency})
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// The question is written once the calls in flight at the trip have
	// ended and are recorded (the engine drains before it asks).
	waitFor(t, "the trip's question", func() (bool, error) {
		var summary string
		err := conn.QueryRow(t.Context(), `SELECT summary FROM tenax_breakers WHERE job_id = $1`, e.JobID).Scan(&summary)
		if err == pgx.ErrNoRows {
			return false, nil
		}
		return summary != "", err
	})
	var failed int
	if err := conn.QueryRow(t.Context(), `SELECT count(*) FROM tenax_records WHERE job_id = $1 AND failed`, e.JobID).Scan(&failed); err != nil {
		t.Fatal(err)
	}
	if failed < threshold || failed > threshold+concurrency {
		t.Errorf("%d items failed before the trip held the job, want %d to %d (the threshold and the calls in flight)", failed, threshold, threshold+concurrency)
	}
}
