package retry

import (
	"context"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

// Defaults of Policy's zero fields.
const (
	DefaultMaxAttempts = 5
	DefaultMaxHint     = 2 * time.Minute
)

// Policy says when and how long to wait before trying an operation again.
// It is an immutable value, safe to share between goroutines and items;
// the state of one execution lives in a Retrier (see Start). The zero
// Policy is usable: 5 attempts, the default Backoff, hints capped at 2m,
// the default classifier.
type Policy struct {
	// MaxAttempts is the most consecutive retryable failures of one item:
	// the call that makes the count reach it is the last. 1 means no
	// retry; zero or less means 5. The count resets after any successful
	// call (Retrier.Success).
	MaxAttempts int
	// MaxElapsed, when positive, is a wall-time budget per item,
	// measured from Start: a retry whose wait would end after it is not
	// made (ErrMaxElapsed).
	MaxElapsed time.Duration
	// MaxHint caps a server's retry hint (see Hinter). Zero means 2m; a
	// negative value ignores hints and always uses Backoff.
	MaxHint time.Duration
	// Backoff computes the delay when there is no hint.
	Backoff Backoff
	// Classifier decides which errors are retried: only
	// classify.Retryable ones are.
	Classifier classify.Classifier
	// OnRetry, when set, is called each time a retry is decided, before
	// the wait, on the calling goroutine and outside any lock. It must
	// not block for long.
	OnRetry func(RetryEvent)
	// Seed, when nonzero, makes the jitter of every Retrier of this
	// Policy a fixed sequence drawn from a PCG seeded with it, for
	// reproducible tests and simulations. Leave it zero in production:
	// items that share a seed back off in lockstep, which is what jitter
	// exists to prevent.
	Seed uint64
}

// RetryEvent describes one decision to retry, for Policy.OnRetry.
type RetryEvent struct {
	// Attempt is the number of the call that failed, from 1.
	Attempt int
	// Delay is the wait before the next call.
	Delay time.Duration
	// Hinted says Delay came from the server's hint, not from Backoff.
	Hinted bool
	// Err is the error of the failed call.
	Err error
	// Decision is Err's classification.
	Decision classify.Decision
}

func (p Policy) maxAttempts() int {
	if p.MaxAttempts <= 0 {
		return DefaultMaxAttempts
	}
	return p.MaxAttempts
}

func (p Policy) maxHint() time.Duration {
	if p.MaxHint == 0 {
		return DefaultMaxHint
	}
	return p.MaxHint
}

// Do calls op until it succeeds or the policy gives up, waiting between
// calls as the policy says. It returns nil on success, or an *Error
// whose Cause says why it gave up and whose Last is op's last error. op
// receives ctx; when ctx ends during a wait, Do returns at once with
// ErrCanceled. The success path does not allocate.
func (p Policy) Do(ctx context.Context, op func(context.Context) error) error {
	if err := ctx.Err(); err != nil {
		return &Error{Cause: canceled(ctx)}
	}
	var start time.Time
	if p.MaxElapsed > 0 { // time.Now costs a third of a successful Do
		start = time.Now()
	}
	// The first call needs no retry state: most calls succeed, and the
	// success path stays free of the Retrier's setup.
	err := op(ctx)
	if err == nil {
		return nil
	}
	_, err = retryAfterFirst(ctx, &p, start, err, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, op(ctx)
	})
	return err
}

// DoValue is Do for an operation that returns a value: it returns the
// value of the successful call, or T's zero value and an *Error.
func DoValue[T any](ctx context.Context, p Policy, op func(context.Context) (T, error)) (T, error) {
	if err := ctx.Err(); err != nil {
		var zero T
		return zero, &Error{Cause: canceled(ctx)}
	}
	var start time.Time
	if p.MaxElapsed > 0 {
		start = time.Now()
	}
	v, err := op(ctx)
	if err == nil {
		return v, nil
	}
	return retryAfterFirst(ctx, &p, start, err, op)
}

// retryAfterFirst goes on after a first call failed with err.
func retryAfterFirst[T any](ctx context.Context, p *Policy, start time.Time, err error, op func(context.Context) (T, error)) (T, error) {
	var zero T
	r := Retrier{policy: *p, start: start}
	for {
		delay, _, stop := r.Failure(err)
		if stop != nil {
			return zero, stop
		}
		if err := r.Wait(ctx, delay); err != nil {
			return zero, &Error{Cause: err, Last: r.last, Attempts: r.total, Decision: r.decision}
		}
		var v T
		if v, err = op(ctx); err == nil {
			return v, nil
		}
	}
}
