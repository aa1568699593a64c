package worker

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channels PostgreSQL announces a change of a job's shared state on,
// as its transaction commits. breakerChannel carries the job's shared
// breaker and an operator's stop or pause: a trigger of tenax_breakers
// (worker/migration, versions 2 and 3) sends "schema job_id".
// sharedChannel carries the rest (version 4): "schema job_id part", part
// naming what changed (partNames).
const (
	breakerChannel = "tenax_breakers"
	sharedChannel  = "tenax_shared"
)

// part is one part of a job's shared state, as a poll reads it: a
// notification names the parts that changed, and the poll reads those
// alone (a cooldown extended is one query, not the whole look).
type part uint32

const (
	partBreaker  part = 1 << iota // tenax_breakers: trip, answer, stop, pause, its owner alive
	partCooldown                  // tenax_limits' cooldown row
	partBudget                    // tenax_budgets.reached
	partCheckins                  // tenax_checkins, and whether a terminal attends
	partRoutes                    // tenax_routes
	partResume                    // tenax_queues.resumes

	// partAll is every part: the safety net's look, and a wake after the
	// listener (re)connected, when what changed meanwhile is unknown.
	partAll = partBreaker | partCooldown | partBudget | partCheckins | partRoutes | partResume
)

// partNames are the parts as version 4's triggers name them.
var partNames = map[string]part{
	"cooldown": partCooldown, "budget": partBudget, "checkins": partCheckins,
	"routes": partRoutes, "resume": partResume,
}

// listenRetry is how long the listener waits before it connects again
// after losing its connection; the poll carries the changes meanwhile.
const listenRetry = time.Second

// listen wakes the poll of each job whose shared state changed, on a
// connection of its own, until ctx ends: a trip on another worker, an
// operator's answer, stop or pause, a 429 cooldown, the budget reached,
// a terminal's check-ins, a route's breaker or a resume reach this
// worker's engines as soon as they commit, where the poll found them up
// to sharedPollInterval later. While the listener is down the poll looks
// at every sharedPollInterval, as it did before; while it listens, every
// sharedSafetyInterval, for a connection lost without a word.
func (w *Worker) listen(ctx context.Context) {
	for {
		err := w.listenOnce(ctx)
		w.listening.Store(false)
		if ctx.Err() != nil {
			return
		}
		w.log.Debug("listening for shared state changes failed; the poll carries them until it is back", "error", err)
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
	if _, err := conn.Exec(ctx, "LISTEN "+breakerChannel+"; LISTEN "+sharedChannel); err != nil {
		return err
	}
	// What changed before LISTEN took effect (at the start, or while
	// the connection was down) was announced to no one.
	w.listening.Store(true)
	w.wakeAll()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if jobID, p, ok := w.parseNotification(n.Channel, n.Payload); ok {
			w.wake(jobID, p)
		}
	}
}

// parseNotification reads a notification's job and part; ok is false for
// another schema's.
func (w *Worker) parseNotification(channel, payload string) (jobID string, p part, ok bool) {
	schema, rest, ok := strings.Cut(payload, " ")
	if !ok || schema != w.c.schema {
		return "", 0, false
	}
	if channel == breakerChannel {
		return rest, partBreaker, true
	}
	i := strings.LastIndexByte(rest, ' ')
	if i < 0 {
		return "", 0, false
	}
	p, known := partNames[rest[i+1:]]
	if !known {
		// A newer tenax's part: look at everything.
		p = partAll
	}
	return rest[:i], p, true
}

// wake makes the poll of the job's runner, if this worker runs the job,
// read part p at once.
func (w *Worker) wake(jobID string, p part) {
	w.mu.Lock()
	r := w.runners[jobID]
	w.mu.Unlock()
	if r != nil {
		r.shared.wake(p)
	}
}

// wakeAll makes the poll of every runner read everything at once.
func (w *Worker) wakeAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.runners {
		r.shared.wake(partAll)
	}
}
