package worker_test

import (
	"errors"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// recorded counts a job's records.
func recorded(t *testing.T, dsn, jobID string) int {
	t.Helper()
	n := 0
	for _, c := range finals(t, dsn, jobID) {
		n += c
	}
	return n
}

// steady waits until the job's record count stays put for 40 looks in a
// row (two seconds, in which two workers of 20 ms calls would record
// hundreds), and returns it.
func steady(t *testing.T, dsn, jobID string) int {
	t.Helper()
	last, same := -1, 0
	waitFor(t, "no record for 40 looks in a row", func() (bool, error) {
		n := recorded(t, dsn, jobID)
		if n == last {
			same++
		} else {
			last, same = n, 0
		}
		return same >= 40, nil
	})
	return last
}

// TestAPauseHoldsEveryWorkerUntilContinued: `tenax pause` of a job on
// workers answered 409 on the page and did not exist in the CLI. A pause
// now holds both workers (no record while it lasts, the manifest and the
// progress say who paused), the first pause stands, continue lets them go
// on, and a stop of a paused job drains and leaves it resumable: a resume
// brings every item to exactly one record.
func TestAPauseHoldsEveryWorkerUntilContinued(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	ctx := t.Context()
	e := enqueue(t, c, writeJob(t, 300, "mock:\n  latency: 20ms\n"))
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "10 records", func() (bool, error) { return recorded(t, dsn, e.JobID) >= 10, nil })

	if err := c.Pause(ctx, e.JobID, "alice"); err != nil {
		t.Fatalf("Pause: %v", err)
	}
	held := steady(t, dsn, e.JobID)
	if held >= 300 {
		t.Fatal("every item was recorded before the pause held the workers")
	}
	if m := manifest(t, c, e.JobID); m.Paused == nil || m.Paused.By != "alice" {
		t.Errorf("the manifest of the paused job says %+v, want paused by alice", m.Paused)
	}
	if p, err := c.Progress(ctx, e.JobID); err != nil || p.Hold == nil || p.Hold.By != "alice" || !p.Paused {
		t.Errorf("Progress of the paused job: %+v, %v; want its queue paused, held by alice", p, err)
	}
	var pe *worker.PausedError
	if err := c.Pause(ctx, e.JobID, "bob"); !errors.As(err, &pe) || pe.By != "alice" {
		t.Errorf("a second pause: %v, want a PausedError naming alice", err)
	}

	if err := c.Continue(ctx, e.JobID, "bob"); err != nil {
		t.Fatalf("Continue: %v", err)
	}
	waitFor(t, "records after continue", func() (bool, error) { return recorded(t, dsn, e.JobID) > held+10, nil })
	if err := c.Continue(ctx, e.JobID, "bob"); !errors.Is(err, worker.ErrNotPaused) {
		t.Errorf("a continue of a job not paused: %v, want ErrNotPaused", err)
	}
	if m := manifest(t, c, e.JobID); m.Paused != nil {
		t.Errorf("the manifest after continue still says paused: %+v", m.Paused)
	}

	if err := c.Pause(ctx, e.JobID, "carol"); err != nil {
		t.Fatalf("Pause again: %v", err)
	}
	if err := c.Stop(ctx, e.JobID, "stopped by carol"); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	waitFor(t, "no item running after the stop", func() (bool, error) {
		p, err := c.Progress(ctx, e.JobID)
		return p.Running == 0, err
	})
	m := manifest(t, c, e.JobID)
	if m.State != store.StateAborted || m.StopReason != "stopped by carol" || m.Paused != nil {
		t.Errorf("the stopped job: state %s (%q), paused %+v; want aborted by carol, not paused", m.State, m.StopReason, m.Paused)
	}
	if err := c.Pause(ctx, e.JobID, "dave"); !errors.Is(err, worker.ErrStopping) {
		t.Errorf("a pause of the stopped job: %v, want ErrStopping", err)
	}
	for idx, n := range finals(t, dsn, e.JobID) {
		if n != 1 {
			t.Errorf("idx %d has %d records after the stop, want 1", idx, n)
		}
	}
	if _, err := c.Requeue(ctx, e.JobID, worker.RequeueOptions{}); err != nil {
		t.Fatalf("Requeue: %v", err)
	}
	waitDone(t, c, e.JobID)
	oneRecordEach(t, dsn, e.JobID, 300, "after a pause, a continue, a pause and a stop, and a resume")
}
