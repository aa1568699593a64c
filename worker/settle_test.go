package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestAWorkerStoppedJustAfterTheLastRecordCompletesTheJob: a worker sent
// SIGTERM within a moment of recording a job's last item left the job
// running forever (until another worker took it up): the drained job's
// end was only written by the runner's periodic look, which the stop cut
// short. The periodic look is pushed out of reach here, so the stop is
// the only chance to write the end.
func TestAWorkerStoppedJustAfterTheLastRecordCompletesTheJob(t *testing.T) {
	const n = 20
	dsn, c, e, stop := startUnlookedWorker(t, n, true)
	waitFor(t, "every item recorded", func() (bool, error) { return len(finals(t, dsn, e.JobID)) == n, nil })
	if err := stop(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	if got := jobState(t, c, e.JobID); got != store.StateCompleted {
		t.Errorf("job %s after its worker stopped just after the last record, want %s", got, store.StateCompleted)
	}
	oneRecordEach(t, dsn, e.JobID, n, "after the stop")
}

// TestARunningWorkerRecordsTheJobsEndOnceItsLastItemEnds: a drained
// job's end was written only by the runner's periodic look, every two
// seconds, so a job stayed running for up to two more (2.3 s after the
// last record of 10,000 items, measured). The periodic look is pushed
// out of reach here: the end must come from the last execution's
// leaving, with the worker still running.
func TestARunningWorkerRecordsTheJobsEndOnceItsLastItemEnds(t *testing.T) {
	const n = 20
	dsn, c, e, stop := startUnlookedWorker(t, n, false)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("worker: %v", err)
		}
	}()
	waitFor(t, "the job's end recorded while its worker runs", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateCompleted, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "once the job ended")
}

// startUnlookedWorker enqueues a job of n items and runs one worker on
// it whose periodic look for a drained job is pushed out of reach (and,
// with noIdle, its look when its last execution ends); stop stops the
// worker and returns Run's error.
func startUnlookedWorker(t *testing.T, n int, noIdle bool) (dsn string, c *worker.Client, e worker.Enqueued, stop func() error) {
	t.Helper()
	dsn = testDSN(t)
	c = open(t, dsn)
	e = enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4, Options: job.Options{Home: t.TempDir(), Logger: quiet()}}
	worker.FinalizeEvery(&cfg, time.Hour)
	if noIdle {
		worker.NoIdleLook(&cfg)
	}
	w, err := c.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	return dsn, c, e, func() error {
		cancel()
		return <-done
	}
}
