package worker

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// How an operator's pause works on workers. Pause writes who paused the
// job into its row of tenax_breakers (paused_by, paused_at: migration
// version 3) and pauses its River queue, so that no worker fetches its
// items; the row's trigger announces the change (notify.go), and every
// worker running the job holds its engine at once (shared.follow): the
// items it had taken wait, calls in flight finish and are recorded.
// Continue clears the row and resumes the queue, unless the breaker, a
// check-in or a stop holds it too; while a pause holds, nothing else
// resumes the queue (resumeQueue). The manifest keeps the pause too
// (store.Manifest.Paused), for `tenax status` and the page.

// PausedError is returned by Pause for a job already paused.
type PausedError = workertype.PausedError

// ErrNotPaused is returned by Continue for a job that no operator paused.
var ErrNotPaused = workertype.ErrNotPaused

// ErrStopping is returned by Pause for a job that is stopping or stopped.
var ErrStopping = workertype.ErrStopping

// Pause holds a job run by workers for the operator by: no worker starts
// a call of it until Continue, calls in flight finish and are recorded.
// It returns a *PausedError when the job is paused already (the first
// pause stands), ErrStopping when it is stopping or stopped, and
// ErrNotQueued for a job one process runs.
func (c *Client) Pause(ctx context.Context, jobID, by string) error {
	queue, err := c.queueOf(ctx, jobID)
	if err != nil {
		return err
	}
	if b, err := c.breaker(ctx, jobID); err != nil {
		return err
	} else if b.aborted() {
		return fmt.Errorf("worker: job %s: %w", jobID, ErrStopping)
	}
	var since time.Time
	err = c.pool.QueryRow(ctx, `INSERT INTO tenax_breakers (job_id, paused_by, paused_at) VALUES ($1, $2, now())
		ON CONFLICT (job_id) DO UPDATE SET paused_by = $2, paused_at = now(), updated = now() WHERE tenax_breakers.paused_by = ''
		RETURNING paused_at`, jobID, by).Scan(&since)
	if errors.Is(err, pgx.ErrNoRows) {
		pe := &PausedError{JobID: jobID}
		if err := c.pool.QueryRow(ctx, `SELECT paused_by, coalesce(paused_at, now()) FROM tenax_breakers WHERE job_id = $1`, jobID).Scan(&pe.By, &pe.Since); err != nil {
			return fmt.Errorf("worker: pausing job %s: %w", jobID, err)
		}
		return pe
	}
	if err != nil {
		return fmt.Errorf("worker: pausing job %s: %w", jobID, err)
	}
	if err := c.pauseQueue(ctx, queue); err != nil {
		return fmt.Errorf("worker: pausing job %s: %w", jobID, err)
	}
	return c.notePause(ctx, jobID, &store.Pause{By: by, Since: since})
}

// Continue ends the operator's pause of a job run by workers: the queue
// resumes (unless its breaker, a check-in or a stop holds it) and every
// worker lets its engine go on. by says who, for the workers' logs. It
// returns ErrNotPaused when no operator paused the job.
func (c *Client) Continue(ctx context.Context, jobID, by string) error {
	queue, err := c.queueOf(ctx, jobID)
	if err != nil {
		return err
	}
	tag, err := c.pool.Exec(ctx, `UPDATE tenax_breakers SET paused_by = '', paused_at = NULL, continued_by = $2, updated = now()
		WHERE job_id = $1 AND paused_by <> ''`, jobID, by)
	if err != nil {
		return fmt.Errorf("worker: continuing job %s: %w", jobID, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("worker: job %s: %w", jobID, ErrNotPaused)
	}
	if err := c.notePause(ctx, jobID, nil); err != nil {
		return err
	}
	b, err := c.breaker(ctx, jobID)
	if err != nil || b.State == "open" || b.aborted() {
		// The breaker holds the job: its answer resumes the queue.
		return err
	}
	var due bool
	err = c.pool.QueryRow(ctx, `SELECT due FROM tenax_checkins WHERE job_id = $1`, jobID).Scan(&due)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("worker: continuing job %s: %w", jobID, err)
	}
	if due {
		// A check-in holds the job: the attending terminal's answer
		// resumes the queue.
		return nil
	}
	if err := c.resumeQueue(ctx, queue); err != nil {
		return fmt.Errorf("worker: continuing job %s: %w", jobID, err)
	}
	return nil
}

// pauseQueue pauses a job's River queue, making it paused when no worker
// has worked the job yet (River makes a queue's row when a producer of
// it starts, and keeps a paused_at it finds there).
func (c *Client) pauseQueue(ctx context.Context, queue string) error {
	err := c.river.QueuePause(ctx, queue, nil)
	if !errors.Is(err, rivertype.ErrNotFound) {
		return err
	}
	_, err = c.pool.Exec(ctx, `INSERT INTO river_queue (name, paused_at) VALUES ($1, now())
		ON CONFLICT (name) DO UPDATE SET paused_at = coalesce(river_queue.paused_at, now())`, queue)
	return err
}

// notePause writes the operator's pause (nil: none) into the job's
// manifest, where `tenax status` reads it for every store.
func (c *Client) notePause(ctx context.Context, jobID string, p *store.Pause) error {
	j, err := c.store.Open(ctx, jobID)
	if err != nil {
		return err
	}
	defer j.Close()
	return j.UpdateManifest(ctx, func(m *store.Manifest) { m.Paused = p })
}

// queueOf returns the River queue of a job run by workers, ErrNotQueued
// for another.
func (c *Client) queueOf(ctx context.Context, jobID string) (string, error) {
	var queue string
	err := c.pool.QueryRow(ctx, `SELECT queue FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return "", fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	return queue, nil
}

// pausedQueue reports whether an operator's pause holds the job whose
// River queue is queue: then nothing but Continue resumes it.
func (c *Client) pausedQueue(ctx context.Context, queue string) (bool, error) {
	var paused bool
	err := c.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenax_breakers b JOIN tenax_queues q ON q.job_id = b.job_id
		WHERE q.queue = $1 AND b.paused_by <> '')`, queue).Scan(&paused)
	return paused, err
}

// hold is the operator's pause the row holds, nil for none.
func (b breakerRow) hold() *store.Pause {
	if b.PausedBy == "" {
		return nil
	}
	p := &store.Pause{By: b.PausedBy}
	if b.PausedAt != nil {
		p.Since = *b.PausedAt
	}
	return p
}

// followPause holds this worker's engine of the job while an operator's
// pause holds the job, and lets it go on once the pause is lifted; the
// engine's Held and Unheld events log who did it.
func (s *shared) followPause(b breakerRow) {
	if b.PausedBy != "" {
		s.r.eng.Pause(b.PausedBy)
		return
	}
	s.r.eng.Continue(cmp.Or(b.ContinuedBy, "an operator"))
}
