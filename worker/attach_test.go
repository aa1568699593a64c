package worker_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

func TestAttachWorksOnTheJobUntilItEndsAndShowsItsQueue(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 60
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 5ms\n"))
	var ws []*worker.Worker
	for range 2 {
		w, err := c.NewWorker(worker.Config{Jobs: []string{e.JobID}, Concurrency: 4, Options: job.Options{Home: t.TempDir(), Logger: quiet()}})
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, w)
	}
	var readings atomic.Int32
	var last atomic.Pointer[worker.Progress]
	_, err := c.Attach(t.Context(), e.JobID, worker.Attached{
		Workers: ws,
		Every:   10 * time.Millisecond,
		Progress: func(p worker.Progress) {
			readings.Add(1)
			last.Store(&p)
		},
	})
	if err != nil {
		t.Fatalf("Attach: %v", err)
	}
	if st := jobState(t, c, e.JobID); st == store.StateRunning {
		t.Fatalf("Attach returned with the job still %s: it must work on the job until it ends", st)
	}
	oneRecordEach(t, dsn, e.JobID, n, "after Attach")
	if readings.Load() == 0 {
		t.Fatal("Progress was never called: the queue must be shown while the workers run")
	}
	if p := last.Load(); p.Finished != n {
		t.Errorf("the last reading showed %d finished, want %d: the job ends on the reading that shows it done", p.Finished, n)
	}
}

func TestAttachReturnsWhenItsContextEnds(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 400, "mock:\n  latency: 100ms\n"))
	w, err := c.NewWorker(worker.Config{Jobs: []string{e.JobID}, Concurrency: 2, Options: job.Options{Home: t.TempDir(), Logger: quiet()}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	started := make(chan struct{})
	var once atomic.Bool
	go func() {
		<-started
		cancel()
	}()
	_, err = c.Attach(ctx, e.JobID, worker.Attached{
		Workers: []*worker.Worker{w},
		Every:   10 * time.Millisecond,
		Progress: func(p worker.Progress) {
			if p.Running > 0 && once.CompareAndSwap(false, true) {
				close(started)
			}
		},
	})
	if err != nil {
		t.Fatalf("Attach after its context ended: %v, want nil (a stop, not a failure)", err)
	}
	if st := jobState(t, c, e.JobID); st != store.StateRunning {
		t.Errorf("job state %s after the attaching process stopped, want %s: the job goes on for other workers", st, store.StateRunning)
	}
}
