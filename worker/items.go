package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/riverqueue/river"
)

// A River job of ItemsKind runs a group of a job's items: one execution
// reads the group's inputs and which of its items this round recorded
// already (a rescued execution's), in one query, and runs the others side
// by side, each as one of the runner's concurrency in the engine. Each
// item's record is written as one item's is (commit.go); the River job is
// completed in the transaction of the group's last record to join a
// commit group. The committer writes its groups one after another, each
// once the one before it committed or failed, so every other record of
// the River job is committed by then or in that same transaction: a River
// job is never completed with an item of it left without its record, and
// costs no commit of its own. An item that stops without a record (the
// job or the worker stopping) leaves the River job to be snoozed once the
// others end: its next execution, on any worker, runs what is left.

// groupRun is the River execution of a group of items.
type groupRun struct {
	id int64 // the River job

	mu sync.Mutex
	// remaining counts the group's items whose records are still to join
	// a commit group.
	remaining int
	// failed is set when a record of the group could not be written, or
	// the group is not to be completed (items missing their inputs).
	failed atomic.Bool
}

// joined counts in a record of the group that joined a commit group, and
// reports whether it is the group's last: the one whose transaction
// completes the River job. The committer calls it under its lock, so the
// last to join is in the latest commit group of the River job's records.
func (g *groupRun) joined() (last bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.remaining--
	return g.remaining == 0
}

// skip counts out an item whose record another execution wrote: nothing
// of this execution waits for it.
func (g *groupRun) skip() {
	g.mu.Lock()
	g.remaining--
	g.mu.Unlock()
}

// completes returns the River job that p's transaction completes: the
// group's when p is its last record and no record of it failed.
func (g *groupRun) completes(p *pending) int64 {
	if !p.last || g.failed.Load() {
		return 0
	}
	return g.id
}

// itemsWorker is the River worker of groups of tenax items.
type itemsWorker struct {
	river.WorkerDefaults[ItemsArgs]
	w *Worker
}

// Timeout is itemWorker.Timeout.
func (iw *itemsWorker) Timeout(*river.Job[ItemsArgs]) time.Duration { return iw.w.timeout() }

// Work hands the group's items to its job's engine and returns once each
// is recorded (the River job is then completed already, in the
// transaction of the last record) or handed back (snoozed, to run again
// on any worker).
func (iw *itemsWorker) Work(ctx context.Context, j *river.Job[ItemsArgs]) error {
	return iw.w.execute(ctx, j.ID, j.Args.Job, func(r *runner) error { return r.workItems(ctx, j) })
}

// workItems is one River execution of a group of items.
func (r *runner) workItems(ctx context.Context, j *river.Job[ItemsArgs]) error {
	idxs, err := parseItemSet(j.Args.Items)
	if err != nil {
		return river.JobCancel(fmt.Errorf("worker: River job %d of job %s: %w", j.ID, r.jobID, err))
	}
	items, err := r.inputs.group(idxs, j.Args.Round)
	switch {
	case errors.Is(err, errResumed):
		r.stop(stopResumed)
		return river.JobSnooze(0)
	case err != nil && r.w.hard.Err() != nil:
		return river.JobSnooze(0)
	case err != nil:
		return err
	}
	var todo []groupInput
	var missing []string
	for _, it := range items {
		switch {
		case it.recorded:
			r.duplicates.Add(1)
		case it.missing:
			missing = append(missing, fmt.Sprint(it.in.idx))
		default:
			todo = append(todo, it)
		}
	}
	g := &groupRun{id: j.ID, remaining: len(todo)}
	// A group with items missing their inputs ends cancelled, not
	// completed: its last record does not complete it.
	g.failed.Store(len(missing) > 0)
	errs := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, it := range todo {
		wg.Add(1)
		r.w.items.Go(func() {
			defer wg.Done()
			errs[i] = r.groupItem(ctx, g, j, it)
		})
	}
	wg.Wait()
	stopped := false
	for _, err := range errs {
		switch {
		case err == nil:
		case errors.Is(err, errPending):
			stopped = true
		default:
			return err
		}
	}
	if stopped {
		return river.JobSnooze(0)
	}
	switch len(missing) {
	case 0:
	case 1:
		return river.JobCancel(fmt.Errorf("worker: item %s of job %s: %w; `tenax resume %s --workers 0` enqueues it again",
			missing[0], r.jobID, errNoInput, r.jobID))
	default:
		return river.JobCancel(fmt.Errorf("worker: items %s of job %s: %w; `tenax resume %s --workers 0` enqueues them again",
			strings.Join(missing, ", "), r.jobID, errNoInputs, r.jobID))
	}
	return nil
}

// groupItem runs one item of a group: errPending when it stopped without
// a record.
func (r *runner) groupItem(ctx context.Context, g *groupRun, j *river.Job[ItemsArgs], it groupInput) error {
	end, waited, err := r.begin(ctx, it.in.idx)
	if err != nil {
		return errPending
	}
	defer end()
	if waited {
		// Another execution of the item ran here meanwhile (a rescued
		// group fetched again): its record may be this round's.
		recorded, err := r.recorded(ctx, it.in.idx, j.Args.Round)
		if err != nil {
			return err
		}
		if recorded {
			r.duplicates.Add(1)
			g.skip()
			return nil
		}
	}
	item, bad := itemFrom(it.in)
	return r.call(ctx, &execution{idx: it.in.idx, round: j.Args.Round, group: g, rescued: j.Attempt > 1}, item, bad, j.Metadata)
}

// recorded reports whether item idx has its final record of round.
func (r *runner) recorded(ctx context.Context, idx, round int) (bool, error) {
	var ok bool
	err := r.w.c.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenax_finals WHERE job_id = $1 AND idx = $2 AND round = $3)`,
		r.jobID, idx, round).Scan(&ok)
	if err != nil {
		return false, fmt.Errorf("worker: item %d of job %s: %w", idx, r.jobID, err)
	}
	return ok, nil
}
