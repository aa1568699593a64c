package worker

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// breakerChannel is where PostgreSQL announces a change to a job's shared
// breaker, or an operator's stop, as its transaction commits: a trigger
// of tenax_breakers (worker/migration, version 2) sends "schema job_id".
const breakerChannel = "tenax_breakers"

// listenRetry is how long the listener waits before it connects again
// after losing its connection; the poll carries the changes meanwhile.
const listenRetry = time.Second

// listen wakes the poll of each job whose shared breaker changed, on a
// connection of its own, until ctx ends: a trip on another worker, an
// operator's answer or stop, reaches this worker's engines as soon as it
// commits, where the poll found it up to sharedPollInterval later. The
// poll stays, for what arrives while the connection is down.
func (w *Worker) listen(ctx context.Context) {
	for {
		err := w.listenOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		w.log.Debug("listening for breaker changes failed; the poll carries them until it is back", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(listenRetry):
		}
	}
}

// listenOnce connects, listens and hands each notification of this
// worker's schema to its job's runner, until the connection or ctx ends.
func (w *Worker) listenOnce(ctx context.Context) error {
	cfg := w.c.pool.Config().ConnConfig.Copy()
	if w.c.appName != nil {
		cfg.RuntimeParams["application_name"] = *w.c.appName.Load()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+breakerChannel); err != nil {
		return err
	}
	// What changed before LISTEN took effect (at the start, or while
	// the connection was down) was announced to no one.
	w.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if schema, jobID, ok := strings.Cut(n.Payload, " "); ok && schema == w.c.schema {
			w.wake(jobID)
		}
	}
}

// wake makes the poll of the job's runner, if this worker runs the job,
// look at once.
func (w *Worker) wake(jobID string) {
	w.mu.Lock()
	r := w.runners[jobID]
	w.mu.Unlock()
	if r != nil {
		r.shared.wake()
	}
}

// wakeAll makes the poll of every runner look at once.
func (w *Worker) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.runners {
		r.shared.wake()
	}
}
