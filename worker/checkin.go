package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
)

// checkinLatest is how many recent records a check-in shows, as one
// process shows.
const checkinLatest = 5

// checkinAbortDetail is why a job aborted at a check-in stopped, in the
// words one process uses.
const checkinAbortDetail = "aborted by the operator at a check-in"

// How check-ins work on workers. The attending terminal writes the job's
// row of tenax_checkins: every (the spec's checkin_every), done (items
// finished since it began attending: those a worker recorded before it
// learned of the terminal, within a poll, are not counted) and next (done
// at the next check-in). While a terminal attends, each worker counts each item it
// records there (countCheckin), and the worker whose item reaches next
// marks the check-in due and pauses the job's queue at once, as one
// process pauses at its Nth item. The terminal then waits until the items
// the workers had taken are recorded, asks, and resumes the queue or
// stops the job (Client.Stop). A terminal that goes away leaves no job
// paused: its last act, or else a worker that finds it gone, resumes it.

// checkins is a terminal's side of a job's check-ins, for Attend.
type checkins struct {
	c     *Client
	jobID string
	queue string
	every int
}

// newCheckins reads the job's checkin_every from its spec as stored (a
// resume stores the file as edited) and starts the job's count. It
// returns nil when the spec asks for no check-ins.
func (c *Client) newCheckins(ctx context.Context, jobID string) (*checkins, error) {
	var queue, path, source string
	err := c.pool.QueryRow(ctx, `SELECT queue, spec_path, spec_source FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue, &path, &source)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
	}
	if err != nil {
		return nil, fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	// The attending process created or resumed the job: the variables the
	// spec names were set here then.
	s, err := spec.Parse(path, []byte(source), filepath.Dir(path), os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("worker: job %s: reading checkin_every: %w", jobID, err)
	}
	if s.CheckinEvery <= 0 {
		return nil, nil
	}
	if _, err := c.pool.Exec(ctx, `INSERT INTO tenax_checkins (job_id, every, done, next, due) VALUES ($1, $2, 0, $2, false)
		ON CONFLICT (job_id) DO UPDATE SET every = $2, done = 0, next = $2, due = false`, jobID, s.CheckinEvery); err != nil {
		return nil, fmt.Errorf("worker: job %s: starting its check-ins: %w", jobID, err)
	}
	return &checkins{c: c, jobID: jobID, queue: queue, every: s.CheckinEvery}, nil
}

// step runs at each of Attend's ticks: once a check-in is due and the
// items the workers had taken are recorded, it asks op, then resumes the
// queue or stops the job. A read that fails is tried again at the next
// tick; only a failed stop is returned, since the operator's abort would
// be lost.
func (k *checkins) step(ctx context.Context, by string, op engine.Operator) error {
	var due bool
	if err := k.c.pool.QueryRow(ctx, `SELECT due FROM tenax_checkins WHERE job_id = $1`, k.jobID).Scan(&due); err != nil || !due {
		return nil
	}
	if drained, err := k.c.drained(ctx, k.queue); err != nil {
		return nil
	} else if drained {
		// The last items are done: there is nothing left to decide.
		_, _ = k.c.pool.Exec(ctx, `UPDATE tenax_checkins SET due = false WHERE job_id = $1`, k.jobID)
		return nil
	}
	// Paused again at every tick while the check-in waits: the shared
	// breaker resumes the queue when it closes.
	if err := k.c.river.QueuePause(ctx, k.queue, nil); err != nil {
		return nil
	}
	var running int
	if err := k.c.pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running' AND queue = $1`, k.queue).Scan(&running); err != nil || running > 0 {
		return nil
	}
	b, err := k.c.breaker(ctx, k.jobID)
	if err != nil {
		return nil
	}
	if b.aborted() {
		// Stopped meanwhile: there is nothing to go on with.
		_, _ = k.c.pool.Exec(ctx, `UPDATE tenax_checkins SET due = false WHERE job_id = $1`, k.jobID)
		return nil
	}
	q, err := k.question(ctx)
	if err != nil {
		return nil
	}
	goOn := op.CheckIn(ctx, q)
	if ctx.Err() != nil {
		// No answer: the operator stopped attending.
		return nil
	}
	if !goOn {
		return k.c.Stop(context.WithoutCancel(ctx), k.jobID, checkinAbortDetail+" ("+by+")")
	}
	// The next check-in comes at the next multiple of every, as in one
	// process, whatever the items finished while this one was asked.
	if _, err := k.c.pool.Exec(ctx, `UPDATE tenax_checkins SET due = false, next = (done / every + 1) * every WHERE job_id = $1`, k.jobID); err != nil {
		return nil
	}
	if b, err := k.c.breaker(ctx, k.jobID); err != nil || b.State == "open" {
		// The breaker holds the job: its answer resumes the queue.
		return nil
	}
	_ = k.c.resumeQueue(ctx, k.queue)
	return nil
}

// close ends the terminal's check-ins: workers stop counting, and a
// check-in left due no longer holds the job.
func (k *checkins) close(ctx context.Context) {
	var due bool
	err := pgx.BeginFunc(ctx, k.c.pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT due FROM tenax_checkins WHERE job_id = $1 FOR UPDATE`, k.jobID).Scan(&due); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE tenax_checkins SET every = 0, due = false WHERE job_id = $1`, k.jobID)
		return err
	})
	if err == nil && due {
		k.c.releaseCheckin(ctx, k.jobID, k.queue)
	}
}

// releaseCheckin resumes a queue that a check-in paused, unless the
// breaker or an operator's stop holds it too.
func (c *Client) releaseCheckin(ctx context.Context, jobID, queue string) {
	if b, err := c.breaker(ctx, jobID); err == nil && b.State != "open" && !b.aborted() {
		_ = c.resumeQueue(ctx, queue)
	}
}

// question reads what a check-in shows: the counts and the latest
// records.
func (k *checkins) question(ctx context.Context) (engine.CheckIn, error) {
	q := engine.CheckIn{JobID: k.jobID}
	j, err := k.c.store.OpenReadOnly(ctx, k.jobID)
	if err != nil {
		return q, err
	}
	defer j.Close()
	q.Stats.Total = j.Manifest().Items
	o, err := j.Outcomes(ctx)
	if err != nil {
		return q, err
	}
	ok, failed, _ := o.Count(q.Stats.Total)
	q.Stats.Done, q.Stats.Failed = ok+failed, failed
	rows, err := k.c.pool.Query(ctx, `SELECT record FROM tenax_records WHERE job_id = $1 ORDER BY seq DESC LIMIT $2`, k.jobID, checkinLatest)
	if err != nil {
		return q, fmt.Errorf("worker: the latest records of job %s: %w", k.jobID, err)
	}
	var raw []byte
	_, err = pgx.ForEachRow(rows, []any{&raw}, func() error {
		var rec store.Record
		if err := json.Unmarshal(raw, &rec); err != nil {
			return err
		}
		q.Latest = append(q.Latest, rec)
		return nil
	})
	if err != nil {
		return q, fmt.Errorf("worker: the latest records of job %s: %w", k.jobID, err)
	}
	slices.Reverse(q.Latest)
	return q, nil
}

// countCheckin counts an item this worker recorded toward the job's next
// check-in, while a terminal holds them, and pauses the job's queue when
// the item is the one the check-in waits for. Its commit does not wait
// for the disk, as the shared schedule's: every item of every worker
// updates the row, and a lost count after a PostgreSQL crash only moves a
// check-in.
func (s *shared) countCheckin(ctx context.Context) {
	if !s.checkins.Load() {
		return
	}
	r := s.r
	var (
		reached bool
		setting string
	)
	err := r.w.c.pool.QueryRow(ctx, `
		WITH u AS (
			UPDATE tenax_checkins SET done = done + 1, due = due OR done + 1 >= next
			WHERE job_id = $1 AND every > 0
			RETURNING done = next AS reached
		)
		SELECT reached, set_config('synchronous_commit', 'off', true) FROM u`, r.jobID).Scan(&reached, &setting)
	if err != nil || !reached {
		return
	}
	if err := r.w.river.QueuePause(ctx, r.queue, nil); err != nil {
		r.w.log.Warn("pausing the job's queue for a check-in failed", "job", r.jobID, "error", err)
	}
}

// followCheckins reads whether a terminal holds the job's check-ins, and
// releases a check-in whose terminal is gone (not attended for longer
// than attended), so that no job stays paused for nobody.
func (s *shared) followCheckins(ctx context.Context) {
	r := s.r
	var every int
	var due, attending bool
	err := r.w.c.pool.QueryRow(ctx, `SELECT c.every, c.due, coalesce(b.attended > now() - $2::interval, false)
		FROM tenax_checkins c LEFT JOIN tenax_breakers b ON b.job_id = c.job_id WHERE c.job_id = $1`, r.jobID, attended).Scan(&every, &due, &attending)
	if errors.Is(err, pgx.ErrNoRows) {
		s.checkins.Store(false)
		return
	}
	if err != nil {
		return
	}
	s.checkins.Store(every > 0 && attending)
	if every > 0 && !attending {
		tag, err := r.w.c.pool.Exec(ctx, `UPDATE tenax_checkins SET every = 0, due = false WHERE job_id = $1 AND every > 0
			AND NOT coalesce((SELECT attended > now() - $2::interval FROM tenax_breakers WHERE job_id = $1), false)`, r.jobID, attended)
		if err == nil && tag.RowsAffected() == 1 && due {
			r.w.log.Warn("the terminal holding the job's check-ins is gone: the job goes on", "job", r.jobID)
			r.w.c.releaseCheckin(ctx, r.jobID, r.queue)
		}
	}
}

// Stop stops a job run by workers as an operator's abort: its queue is
// paused, every worker stops it within a poll (the calls in flight finish
// and are recorded), and the job is aborted with detail as its reason. Its
// items stay pending until `tenax resume`.
func (c *Client) Stop(ctx context.Context, jobID, detail string) error {
	var queue string
	if err := c.pool.QueryRow(ctx, `SELECT queue FROM tenax_queues WHERE job_id = $1`, jobID).Scan(&queue); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("worker: job %s: %w", jobID, ErrNotQueued)
		}
		return fmt.Errorf("worker: job %s: %w", jobID, err)
	}
	// A stop ends an operator's pause: the paused workers drain and stop.
	if _, err := c.pool.Exec(ctx, `INSERT INTO tenax_breakers (job_id, stopped) VALUES ($1, $2)
		ON CONFLICT (job_id) DO UPDATE SET stopped = $2, paused_by = '', paused_at = NULL, updated = now()`, jobID, detail); err != nil {
		return fmt.Errorf("worker: stopping job %s: %w", jobID, err)
	}
	if err := c.river.QueuePause(ctx, queue, nil); err != nil {
		return fmt.Errorf("worker: stopping job %s: %w", jobID, err)
	}
	j, err := c.store.Open(ctx, jobID)
	if err != nil {
		return err
	}
	defer j.Close()
	return j.UpdateManifest(ctx, func(m *store.Manifest) {
		m.State, m.StopReason, m.Paused = store.StateAborted, detail, nil
	})
}
