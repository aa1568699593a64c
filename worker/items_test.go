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

// TestProgressCountsTheRecordedItemsOfAnUnfinishedGroupAsFinished: a
// River job of 8 items with 5 of them recorded this round, in each state
// a group can be left in before its completion, counts 5 finished and 3
// in its state. Progress used to count all 8 by the River job's state:
// `tenax status` showed items running that had their records.
func TestProgressCountsTheRecordedItemsOfAnUnfinishedGroupAsFinished(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	conn := connect(t, dsn)
	cases := []struct {
		state string
		field func(worker.Progress) int
	}{
		{"running", func(p worker.Progress) int { return p.Running }},
		{"retryable", func(p worker.Progress) int { return p.Retrying }},
		{"available", func(p worker.Progress) int { return p.Waiting }},
		{"cancelled", func(p worker.Progress) int { return p.Discarded }},
	}
	for _, tc := range cases {
		t.Run(tc.state, func(t *testing.T) {
			e := enqueue(t, c, writeJob(t, 8, ""))
			for idx := range 5 {
				if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_finals (job_id, idx, round) VALUES ($1, $2, 1)`, e.JobID, idx); err != nil {
					t.Fatal(err)
				}
			}
			// A finished round's record of another item does not count.
			if _, err := conn.Exec(t.Context(), `INSERT INTO tenax_finals (job_id, idx, round) VALUES ($1, 7, 0)`, e.JobID); err != nil {
				t.Fatal(err)
			}
			tag, err := conn.Exec(t.Context(), `UPDATE river_job SET state = $2::river_job_state, attempt = 1, attempted_at = now(),
				finalized_at = CASE WHEN $2::text = 'cancelled' THEN now() END
				WHERE queue = (SELECT queue FROM tenax_queues WHERE job_id = $1)`, e.JobID, tc.state)
			if err != nil || tag.RowsAffected() != 1 {
				t.Fatalf("setting the group's River job %s: %v, %d rows; want one River job", tc.state, err, tag.RowsAffected())
			}
			p, err := c.Progress(t.Context(), e.JobID)
			if err != nil {
				t.Fatal(err)
			}
			if p.Finished != 5 || tc.field(p) != 3 {
				t.Errorf("progress %+v with 5 of the group's 8 items recorded, its River job %s: want 5 finished and 3 %s", p, tc.state, tc.state)
			}
			total := p.Finished + p.Waiting + p.Running + p.Retrying + p.Discarded
			if total != 8 {
				t.Errorf("progress counts %d items, want the job's 8", total)
			}
		})
	}
}
