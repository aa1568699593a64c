package worker_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// idxTask records the idx of every item the engine prepares.
type idxTask struct {
	task.Task
	mu   *sync.Mutex
	seen *[]int
}

func (c idxTask) Prepare(ctx context.Context, it task.Item) (task.Prepared, error) {
	c.mu.Lock()
	*c.seen = append(*c.seen, it.Idx)
	c.mu.Unlock()
	return c.Task.(task.Preparer).Prepare(ctx, it)
}

// TestAGroupRunAgainRunsOnlyItsItemsWithoutARecord: the River job of a
// group whose execution recorded some of its items and died before the
// rest (here: records and claims written before any worker starts) runs,
// on its next execution, only the items this round has no record for,
// and the job ends with one record per item.
func TestAGroupRunAgainRunsOnlyItsItemsWithoutARecord(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 8 // one River job
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	j, err := c.Store().Open(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	for idx := range 5 {
		if err := j.Append(t.Context(), store.Record{Idx: idx, Output: []byte(`"before"`), FinishedAt: time.Now()}); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_finals (job_id, idx, round) VALUES ($1, $2, 1)`, e.JobID, idx); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Flush(t.Context()); err != nil {
		t.Fatal(err)
	}
	j.Close()
	var (
		mu   sync.Mutex
		seen []int
	)
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(tk task.Task) task.Task { return idxTask{Task: tk, mu: &mu, seen: &seen} })
	startWorkers(t, c, 1, cfg)
	waitDone(t, c, e.JobID)
	mu.Lock()
	slices.Sort(seen)
	if !slices.Equal(seen, []int{5, 6, 7}) {
		t.Errorf("the worker ran items %v, want only 5, 6 and 7: the others had their records", seen)
	}
	mu.Unlock()
	oneRecordEach(t, dsn, e.JobID, n, "after the group ran again")
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Errorf("job state %s, want completed", st)
	}
}
