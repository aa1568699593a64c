package worker_test

import (
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestOnJobSeesEveryEventOfItsJob: two workers' OnJob hooks see, between
// them, every item of the job finish and every call end, with the job's
// spec and its engine's counters (what tenax worker --metrics serves).
func TestOnJobSeesEveryEventOfItsJob(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 60
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n  errors: {server: 0.2}\n"))
	var mu sync.Mutex
	var runs []worker.JobRun
	finished, calls := 0, 0
	onJob := func(r worker.JobRun) func(engine.Event) {
		mu.Lock()
		runs = append(runs, r)
		mu.Unlock()
		return func(ev engine.Event) {
			mu.Lock()
			defer mu.Unlock()
			switch ev.Kind {
			case engine.ItemFinished:
				finished++
			case engine.CallEnded:
				calls++
			}
		}
	}
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 4, OnJob: onJob})
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if finished != n {
		t.Errorf("the hooks saw %d items finish, want the job's %d", finished, n)
	}
	statsCalls := 0
	for _, r := range runs {
		if r.ID != e.JobID || r.Spec == nil || r.Spec.Task.Model != "mock-json" || r.Stats == nil {
			t.Fatalf("OnJob was told %+v, want job %s with its spec and stats", r, e.JobID)
		}
		statsCalls += r.Stats().Calls
	}
	if len(runs) != 2 {
		t.Errorf("OnJob was called %d times, want once per worker", len(runs))
	}
	if calls == 0 || calls != statsCalls {
		t.Errorf("the hooks saw %d calls end; the engines counted %d", calls, statsCalls)
	}
}
