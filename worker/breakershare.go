package worker

import (
	"context"
	"sync"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/store"
)

// breakerSharing keeps the writes of an engine's breaker changes to the
// job's shared row in the order the breaker made them. They run off the
// breaker's goroutine (a database round trip must not hold a call), and
// once ran on a goroutine each: after an operator's Continue, the write
// that opened the row for the next trip could land before the one that
// closed it for the last, find the row still open and change nothing,
// and the trip's question then read the last trip's "continue" as its
// own answer — every later trip went on unasked until the job's items
// were all failed (TestAPageShownForOneTripDoesNotAnswerTheNext, one
// run in two under load).
type breakerSharing struct {
	mu       sync.Mutex
	pending  []breaker.State
	draining bool
	opens    int64         // Open changes handed to breakerChanged
	opened   int64         // Open changes written (or given up on)
	wrote    chan struct{} // closed and replaced when opened grows
}

// breakerChanged shares this engine's breaker: a trip opens the job's
// shared breaker and pauses its queue (no worker takes new items); the
// owner's breaker closing (probes succeeded, the operator continued)
// closes it again. It never blocks: the writes are made in order by one
// goroutine at a time.
func (s *shared) breakerChanged(state breaker.State) {
	b := &s.sharing
	b.mu.Lock()
	defer b.mu.Unlock()
	if state == breaker.Open {
		b.opens++
	}
	b.pending = append(b.pending, state)
	if !b.draining {
		b.draining = true
		go s.writeBreakerChanges()
	}
}

// writeBreakerChanges writes the queued changes, oldest first, until
// none is left.
func (s *shared) writeBreakerChanges() {
	b := &s.sharing
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.draining = false
			b.mu.Unlock()
			return
		}
		state := b.pending[0]
		b.pending = b.pending[1:]
		b.mu.Unlock()
		switch state {
		case breaker.Open:
			s.shareOpen()
			b.mu.Lock()
			b.opened++
			if b.wrote != nil {
				close(b.wrote)
				b.wrote = nil
			}
			b.mu.Unlock()
		case breaker.Closed:
			s.shareClosed()
		}
	}
}

// openWritten reports whether every trip handed to breakerChanged so far
// has been written to the job's row; when not, wake is closed once one
// more is. Until then, what the row says (closed, the last trip's
// decision) is about an earlier trip.
func (b *breakerSharing) openWritten() (done bool, wake <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.opened >= b.opens {
		return true, nil
	}
	if b.wrote == nil {
		b.wrote = make(chan struct{})
	}
	return false, b.wrote
}

func (s *shared) shareOpen() {
	r := s.r
	ctx := context.WithoutCancel(r.w.hard)
	tag, err := r.w.c.pool.Exec(ctx, `UPDATE tenax_breakers SET state = 'open', action = $3, owner = $2, decision = '', decided_by = '',
		reason = '', last_error = '', summary = '', failures = '{}', trips = trips + 1, updated = now() WHERE job_id = $1 AND state = 'closed'`,
		r.jobID, r.w.id, s.action.String())
	if err != nil {
		r.w.log.Warn("sharing the breaker's trip failed", "job", r.jobID, "error", err)
		return
	}
	if tag.RowsAffected() == 1 {
		_ = r.sj.UpdateManifest(ctx, func(m *store.Manifest) { m.BreakerTrips++ })
	}
	if err := r.w.river.QueuePause(ctx, r.queue, nil); err != nil {
		r.w.log.Warn("pausing the job's queue failed", "job", r.jobID, "error", err)
	}
}

func (s *shared) shareClosed() {
	r := s.r
	ctx := context.WithoutCancel(r.w.hard)
	// The decision stays, for whoever attends the job to tell who
	// answered (Attend); the next trip clears it.
	tag, err := r.w.c.pool.Exec(ctx, `UPDATE tenax_breakers SET state = 'closed', updated = now()
		WHERE job_id = $1 AND owner = $2 AND state = 'open' AND action <> 'abort' AND decision <> 'abort'`, r.jobID, r.w.id)
	if err == nil && tag.RowsAffected() == 1 {
		_ = r.w.c.resumeQueue(ctx, r.queue)
	}
}
