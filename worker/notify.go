package worker

import (
	"context"
	"strings"
	"sync/atomic"
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
	return w.c.listenOnce(ctx, func() {
		// What changed before LISTEN took effect (at the start, or while
		// the connection was down) was announced to no one.
		w.listening.Store(true)
		w.wakeAll()
	}, w.wake)
}

// listenOnce connects, LISTENs on both channels, calls listening once it
// does, and then onNotice with the job and part of each notification of
// the client's schema, until the connection or ctx ends.
func (c *Client) listenOnce(ctx context.Context, listening func(), onNotice func(jobID string, p part)) error {
	cfg := c.pool.Config().ConnConfig.Copy()
	if c.appName != nil {
		cfg.RuntimeParams["application_name"] = *c.appName.Load()
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+breakerChannel+"; LISTEN "+sharedChannel); err != nil {
		return err
	}
	listening()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		if jobID, p, ok := c.parseNotification(n.Channel, n.Payload); ok {
			onNotice(jobID, p)
		}
	}
}

// parseNotification reads a notification's job and part; ok is false for
// another schema's.
func (c *Client) parseNotification(channel, payload string) (jobID string, p part, ok bool) {
	schema, rest, ok := strings.Cut(payload, " ")
	if !ok || schema != c.schema {
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

// news is a broadcast of "the job's breaker row may have changed": next
// returns a channel that the next announcement closes. Read it before
// reading the row, so that a change after the read is not missed.
type news struct{ ch atomic.Pointer[chan struct{}] }

func newNews() *news {
	n := &news{}
	ch := make(chan struct{})
	n.ch.Store(&ch)
	return n
}

// next is the channel the next announcement closes.
func (n *news) next() <-chan struct{} { return *n.ch.Load() }

// announce wakes everything waiting on next.
func (n *news) announce() {
	ch := make(chan struct{})
	close(*n.ch.Swap(&ch))
}

// jobNews announces the changes of job jobID's breaker row (a trip, an
// answer, a stop, a pause) as they commit, for a process that runs no
// worker (an attending terminal, Attend): it listens on a connection of
// its own until ctx ends, reconnecting after listenRetry, and announces
// each (re)connection too, when what changed meanwhile is unknown.
// Listening reports whether it listens now; while not, the waiter's poll
// carries the changes.
type jobNews struct {
	*news
	listening atomic.Bool
	done      chan struct{} // closed when the listener has stopped
}

// safety is how often a waiter on n reads the row anyway: every
// sharedSafetyInterval while n listens, else every sharedPollInterval.
func (n *jobNews) safety() time.Duration {
	if n.listening.Load() {
		return sharedSafetyInterval
	}
	return sharedPollInterval
}

func (c *Client) listenJob(ctx context.Context, jobID string) *jobNews {
	n := &jobNews{news: newNews(), done: make(chan struct{})}
	go func() {
		defer close(n.done)
		for {
			_ = c.listenOnce(ctx, func() {
				n.listening.Store(true)
				n.announce()
			}, func(id string, p part) {
				if id == jobID && p&partBreaker != 0 {
					n.announce()
				}
			})
			n.listening.Store(false)
			select {
			case <-ctx.Done():
				return
			case <-time.After(listenRetry):
			}
		}
	}()
	return n
}
