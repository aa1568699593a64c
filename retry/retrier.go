package retry

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	mrand "math/rand/v2"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

// Retrier is the state of one execution of a Policy: one item's calls.
// It is what Do runs on, and what a caller with its own loop drives (the
// engine's heal loop): report each call's outcome with Failure or
// Success, and wait the delay Failure returns. A Retrier is not safe for
// use by several goroutines at once.
type Retrier struct {
	policy      Policy
	start       time.Time
	consecutive int
	total       int
	prev        time.Duration // the last delay, for decorrelated jitter
	last        error
	decision    classify.Decision
	rnd         *mrand.Rand // made at the first failure
}

// Start returns a Retrier for one execution of p. MaxElapsed is measured
// from now.
func (p Policy) Start() *Retrier {
	return &Retrier{policy: p, start: time.Now()}
}

// StartAfter returns a Retrier for an execution of p that continues one
// whose last failures calls failed in a row (a batch job's waves before its
// online tail): the next failure is number failures+1 of the streak that
// MaxAttempts bounds, and its backoff is the streak's.
func (p Policy) StartAfter(failures int) *Retrier {
	return p.Continue(time.Now(), failures)
}

// Continue returns a Retrier for an execution of p that began at start
// and whose last failures calls failed in a row (an item read back from a
// batch job's ledger): MaxElapsed is measured from start, not from now,
// and the next failure is number failures+1 of the streak.
func (p Policy) Continue(start time.Time, failures int) *Retrier {
	return &Retrier{policy: p, start: start, consecutive: max(failures, 0)}
}

// Success records a successful call: the count of consecutive failures
// goes back to zero, and so does the backoff. Per docs/heal.md ("The loop") this holds
// for any call that worked, including one whose output then failed
// validation.
func (r *Retrier) Success() {
	r.total++
	r.consecutive = 0
	r.prev = 0
}

// Failure records a failed call (err is its non-nil error) and decides
// what comes next. It returns the delay to wait before the next call, the
// classification of err, and, when no retry is to be made, stop: an
// *Error whose Cause is
// ErrCanceled (err was classified canceled), ErrNotRetryable (any class
// but retryable), ErrExhausted (MaxAttempts consecutive failures) or
// ErrMaxElapsed (the wait would end past MaxElapsed). The delay is the
// server's hint on err's chain, capped by MaxHint, or else the backoff
// for the current streak. When it decides to retry, Failure calls
// Policy.OnRetry before returning.
func (r *Retrier) Failure(err error) (delay time.Duration, d classify.Decision, stop error) {
	r.total++
	r.consecutive++
	d = r.policy.Classifier.Classify(err)
	r.last, r.decision = err, d
	switch {
	case d.Class == classify.Canceled:
		return 0, d, r.giveUp(ErrCanceled)
	case d.Class != classify.Retryable:
		return 0, d, r.giveUp(ErrNotRetryable)
	case r.consecutive >= r.policy.maxAttempts():
		return 0, d, r.giveUp(ErrExhausted)
	}
	delay, hinted := r.delay(err)
	if limit := r.policy.MaxElapsed; limit > 0 && time.Since(r.start)+delay > limit {
		return 0, d, r.giveUp(ErrMaxElapsed)
	}
	r.prev = delay
	if r.policy.OnRetry != nil {
		r.policy.OnRetry(RetryEvent{Attempt: r.total, Delay: delay, Hinted: hinted, Err: err, Decision: d})
	}
	return delay, d, nil
}

// delay is the hint on err, capped, or the backoff for the streak.
func (r *Retrier) delay(err error) (time.Duration, bool) {
	if limit := r.policy.maxHint(); limit > 0 {
		if h, ok := hintOf(err); ok {
			return min(h, limit), true
		}
	}
	b := r.policy.Backoff
	if b.Jitter == JitterNone {
		return b.Delay(r.consecutive, r.prev, nil), false
	}
	if r.rnd == nil {
		r.rnd = newRand(r.policy.Seed)
	}
	return b.Delay(r.consecutive, r.prev, r.rnd), false
}

func (r *Retrier) giveUp(cause error) error {
	return &Error{Cause: cause, Last: r.last, Attempts: r.total, Decision: r.decision}
}

// Consecutive returns the current streak of failed calls.
func (r *Retrier) Consecutive() int { return r.consecutive }

// Total returns how many calls were reported, failed or not.
func (r *Retrier) Total() int { return r.total }

// Wait waits for d or until ctx ends, whichever is first. It returns nil
// after the wait, and otherwise an error that wraps both ErrCanceled and
// the context's cause (context.Canceled, context.DeadlineExceeded, or the
// cause given to a context.CancelCauseFunc).
func (r *Retrier) Wait(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return canceled(ctx)
	}
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return canceled(ctx)
	}
}

func canceled(ctx context.Context) error {
	return fmt.Errorf("%w: %w", ErrCanceled, context.Cause(ctx))
}

// newRand returns a PCG seeded with seed, or from crypto/rand when seed
// is zero.
func newRand(seed uint64) *mrand.Rand {
	if seed != 0 {
		return mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return mrand.New(mrand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])))
}
