package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
)

// ItemKind is the River job kind of a tenax item.
const ItemKind = "tenax_item"

// MaxAttempts is how many times River itself runs one item's River job
// before discarding it. tenax's retries, backoff and heal loop all happen
// inside one execution; River runs a job again only when an execution
// died (a killed worker's job, rescued) or panicked. A discarded item is
// left pending, and `tenax resume` enqueues it again.
const MaxAttempts = 10

// insertBatch is how many River jobs one COPY inserts, in a transaction
// of its own.
const insertBatch = 10_000

// insertConns is how many COPYs run at once, each on a connection of its
// own, while the input is read: PostgreSQL writes river_job and its
// indexes (two GIN) on one core per COPY, and reading the input and
// encoding River's arguments overlaps with them instead of coming
// between them.
const insertConns = 2

// ItemArgs is one item of a job as a River job's arguments: what a worker
// needs to run it with no access to the input file.
type ItemArgs struct {
	Job   string          `json:"job"`
	Idx   int             `json:"idx"`
	Round int             `json:"round"`
	ID    string          `json:"id,omitempty"`
	Input json.RawMessage `json:"input"`
	// Bad is the error of an input line that is not a valid item; the
	// worker records it as an item failure without a call.
	Bad string `json:"bad,omitempty"`
}

// Kind returns ItemKind.
func (ItemArgs) Kind() string { return ItemKind }

// Enqueued says what Enqueue or Requeue inserted.
type Enqueued struct {
	JobID string
	Queue string
	Round int
	// Items is how many River jobs were inserted.
	Items   int
	Elapsed time.Duration
}

// Enqueue makes a job created by job.Create runnable by workers: it keeps
// the spec source for them and inserts every item of the input as a River
// job of the job's own queue, in batches through COPY (InsertManyFast).
func (c *Client) Enqueue(ctx context.Context, cr *job.Created) (Enqueued, error) {
	start := time.Now()
	m := cr.Job.Manifest()
	q := queueName(m.ID)
	_, err := c.pool.Exec(ctx,
		`INSERT INTO tenax_queues (job_id, queue, spec_path, spec_source, format) VALUES ($1, $2, $3, $4, $5)`,
		m.ID, q, m.SpecPath, string(cr.SpecSource), string(cr.Format))
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: recording job %s for workers: %w", m.ID, err)
	}
	n, err := c.insertItems(ctx, m.ID, q, 1, cr.InputPath, cr.Format, func(int) bool { return true })
	res := Enqueued{JobID: m.ID, Queue: q, Round: 1, Items: n, Elapsed: time.Since(start)}
	if err != nil {
		return res, err
	}
	return res, nil
}

// insertItems inserts the items of the input that want accepts: one
// goroutine reads the input into batches, insertConns others insert them.
// The first error stops them all; the batches inserted before it stay.
func (c *Client) insertItems(ctx context.Context, jobID, queue string, round int, inPath string, format input.Format, want func(idx int) bool) (int, error) {
	r, err := input.Open(inPath, format)
	if err != nil {
		return 0, fmt.Errorf("worker: %w", err)
	}
	defer r.Close()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	batches := make(chan []river.InsertManyParams, insertConns)
	var (
		inserted atomic.Int64
		wg       sync.WaitGroup
	)
	for range insertConns {
		wg.Go(func() {
			for b := range batches {
				if _, err := c.river.InsertManyFast(ctx, b); err != nil {
					cancel(fmt.Errorf("worker: inserting items of job %s: %w", jobID, err))
					return
				}
				inserted.Add(int64(len(b)))
			}
		})
	}
	readErr := c.readBatches(ctx, r, jobID, queue, round, want, batches)
	close(batches)
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return int(inserted.Load()), err
	}
	return int(inserted.Load()), readErr
}

// readBatches reads the input into batches of River jobs until its end,
// an error, or ctx is done (an insert failed).
func (c *Client) readBatches(ctx context.Context, r *input.Reader, jobID, queue string, round int, want func(idx int) bool, out chan<- []river.InsertManyParams) error {
	opts := &river.InsertOpts{Queue: queue, MaxAttempts: MaxAttempts}
	batch := make([]river.InsertManyParams, 0, insertBatch)
	send := func() bool {
		if len(batch) == 0 {
			return true
		}
		select {
		case out <- batch:
			batch = make([]river.InsertManyParams, 0, insertBatch)
			return true
		case <-ctx.Done():
			return false
		}
	}
	for {
		it, err := r.Next()
		var le *input.LineError
		bad := ""
		switch {
		case errors.Is(err, io.EOF):
			send()
			return nil
		case errors.As(err, &le):
			bad = le.Error()
		case err != nil:
			return fmt.Errorf("worker: reading the input: %w", err)
		}
		if !want(it.Idx) {
			continue
		}
		batch = append(batch, river.InsertManyParams{
			Args:       ItemArgs{Job: jobID, Idx: it.Idx, Round: round, ID: it.ID, Input: it.Raw, Bad: bad},
			InsertOpts: opts,
		})
		if len(batch) == insertBatch && !send() {
			return nil
		}
	}
}

// RequeueOptions are what `tenax resume` takes for a job run by workers.
type RequeueOptions struct {
	// RetryFailures enqueues the items whose latest record failed too, in
	// a new round.
	RetryFailures bool
	// Force enqueues even though the input changed since the job was
	// created.
	Force bool
}

// ErrNotQueued is returned for a job that was not enqueued for workers.
var ErrNotQueued = errors.New("the job was not enqueued for workers")

// Requeue enqueues again the items of a job that have no record and no
// River job that could still run (a job River discarded, an enqueue that
// was interrupted), and with RetryFailures the failed ones in a new round.
// It closes the job's shared breaker and resumes its queue.
func (c *Client) Requeue(ctx context.Context, jobID string, opts RequeueOptions) (Enqueued, error) {
	start := time.Now()
	var queue, format string
	var round int
	err := c.pool.QueryRow(ctx, `SELECT queue, round, format FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue, &round, &format)
	if errors.Is(err, pgx.ErrNoRows) {
		return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	j, err := c.store.Open(ctx, jobID)
	if err != nil {
		return Enqueued{}, err
	}
	defer j.Close()
	m := j.Manifest()
	sum, err := input.Scan(ctx, m.InputPath, input.Format(format), input.ScanOptions{})
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: the job's input: %w", err)
	}
	if sum.SHA256 != m.InputSHA256 && !opts.Force {
		return Enqueued{}, fmt.Errorf("the input %s changed since job %s was created; resuming would mix results of two inputs. Pass --force to resume anyway", m.InputPath, jobID)
	}
	outcomes, err := j.Outcomes(ctx)
	if err != nil {
		return Enqueued{}, err
	}
	live := map[int]bool{}
	rows, err := c.pool.Query(ctx, `SELECT (args->>'idx')::bigint FROM river_job
		WHERE queue = $1 AND state IN ('available', 'running', 'retryable', 'scheduled', 'pending')`, queue)
	if err != nil {
		return Enqueued{}, fmt.Errorf("worker: reading the queue of job %s: %w", jobID, err)
	}
	var idx int64
	if _, err := pgx.ForEachRow(rows, []any{&idx}, func() error { live[int(idx)] = true; return nil }); err != nil {
		return Enqueued{}, fmt.Errorf("worker: reading the queue of job %s: %w", jobID, err)
	}
	_, failed, _ := outcomes.Count(m.Items)
	if opts.RetryFailures && failed > 0 {
		if err := c.pool.QueryRow(ctx, `UPDATE tenax_queues SET round = round + 1 WHERE job_id = $1 RETURNING round`, jobID).Scan(&round); err != nil {
			return Enqueued{}, fmt.Errorf("worker: job %s: %w", jobID, err)
		}
	}
	want := func(idx int) bool {
		if live[idx] {
			return false
		}
		switch outcomes.Get(idx) {
		case store.Succeeded:
			return false
		case store.Failed:
			return opts.RetryFailures
		}
		return true
	}
	if err := c.resetBudget(ctx, jobID); err != nil {
		return Enqueued{}, err
	}
	if err := c.resetBreaker(ctx, jobID, queue); err != nil {
		return Enqueued{}, err
	}
	if err := j.UpdateManifest(ctx, func(m *store.Manifest) { m.State, m.StopReason = store.StateRunning, "" }); err != nil {
		return Enqueued{}, err
	}
	n, err := c.insertItems(ctx, jobID, queue, round, m.InputPath, input.Format(format), want)
	return Enqueued{JobID: jobID, Queue: queue, Round: round, Items: n, Elapsed: time.Since(start)}, err
}
