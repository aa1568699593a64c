package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	retrygo "github.com/avast/retry-go/v5"
	"github.com/cenkalti/backoff/v5"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	"github.com/sony/gobreaker/v2"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
)

// The limits every library is given, so that no one does less work
// because of a different configuration.
const (
	maxAttempts  = 5                // calls per Do, at most
	failuresSeen = 2                // failures before the success, in the flaky scenario
	tripAfter    = 5                // consecutive failures that open a breaker
	openTimeout  = 60 * time.Second // how long an open breaker stays open
)

// contender is one library's way of doing a scenario. name is the
// sub-benchmark's name, lib=<library>, so that `benchstat -col /lib`
// sets the libraries side by side and compares each with tenax. setup
// builds what all goroutines share (the policy, executor or breaker, as
// a program holds one) and returns the loop of one goroutine: it makes
// that goroutine's own state, then does one operation per true next().
type contender struct {
	name  string
	setup func(b *testing.B) (loop func(next func() bool))
}

// run benchmarks each contender as a sub-benchmark, in the calling
// goroutine or, when parallel, in GOMAXPROCS goroutines (set by -cpu).
// The setup is outside the timed region.
func run(b *testing.B, cs []contender, parallel bool) {
	for _, c := range cs {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			loop := c.setup(b)
			if !parallel {
				loop(b.Loop) // b.Loop resets the timer at its first call
				return
			}
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) { loop(pb.Next) })
		})
	}
}

// flaky is an operation that fails its first fails calls with err and
// then succeeds. Each goroutine has its own; the benchmark resets n
// before each Do and checks after it that every library made exactly
// fails+1 calls. Its methods have each library's operation signature and
// are taken as method values once, so the operation itself allocates
// nothing for any library.
type flaky struct {
	fails, n int
	err      error
}

func (f *flaky) call() error {
	f.n++
	if f.n <= f.fails {
		return f.err
	}
	return nil
}

func (f *flaky) callCtx(context.Context) error { return f.call() }

func (f *flaky) callValue() (struct{}, error) { return struct{}{}, f.call() }

// check reports a Do that did not end in success after exactly
// fails+1 calls.
func (f *flaky) check(b *testing.B, err error) bool {
	if err != nil || f.n != f.fails+1 {
		b.Errorf("got error %v after %d calls, want success after %d calls", err, f.n, f.fails+1)
		return false
	}
	return true
}

// transient is the error of the flaky scenario. tenax retries only what
// its classifier calls retryable; the mark makes that decision the
// cheapest one the classifier can take (no rules, then the mark). The
// peers retry any error by default.
func transient() error {
	return classify.WithClass(errors.New("bench: transient failure"), classify.Retryable, "bench")
}

// retryContenders are the retry libraries, each configured for 5
// attempts and no wait between them, doing one Do of an operation that
// fails `fails` times and then succeeds. Each policy, executor or retrier
// is built once, before the loop, and shared by the goroutines: that is
// how a program holds it, and it is the cheapest way each library allows.
func retryContenders(fails int) []contender {
	ctx := context.Background()
	return []contender{
		{"lib=tenax", func(b *testing.B) func(func() bool) {
			// Policy.Do: checks ctx, runs op; on each failure classifies
			// the error, counts it against MaxAttempts, computes the
			// backoff and waits it. tenax has no "no delay" setting (a
			// zero Base means the 1s default), so the backoff is 1ns
			// without jitter: the least it can wait, a timer per retry
			// like the peers' zero delays.
			p := retry.Policy{
				MaxAttempts: maxAttempts,
				Backoff:     retry.Backoff{Base: time.Nanosecond, Max: time.Nanosecond, Jitter: retry.JitterNone},
			}
			return func(next func() bool) {
				f := &flaky{fails: fails, err: transient()}
				op := f.callCtx
				for next() {
					f.n = 0
					if !f.check(b, p.Do(ctx, op)) {
						return
					}
				}
			}
		}},
		{"lib=failsafe-go", func(b *testing.B) func(func() bool) {
			// Executor.Run with a RetryPolicy: builds an execution (its
			// counters and start time) per Run, composes the policy
			// executor around op, and on each failure records the result,
			// computes the delay (0 here) and waits on a timer.
			rp := retrypolicy.NewBuilder[any]().WithMaxAttempts(maxAttempts).Build()
			ex := failsafe.With(rp).WithContext(ctx)
			return func(next func() bool) {
				f := &flaky{fails: fails, err: transient()}
				op := f.call
				for next() {
					f.n = 0
					if !f.check(b, ex.Run(op)) {
						return
					}
				}
			}
		}},
		{"lib=cenkalti-backoff", func(b *testing.B) func(func() bool) {
			// backoff.Retry: applies the options to a fresh option set,
			// resets the BackOff, runs op; on each failure looks for a
			// PermanentError and a RetryAfterError on the chain, asks the
			// BackOff for the delay (ZeroBackOff: 0, and stateless, so
			// one is shared) and waits on a timer. The option slice is
			// built once.
			opts := []backoff.RetryOption{
				backoff.WithBackOff(&backoff.ZeroBackOff{}),
				backoff.WithMaxTries(maxAttempts),
			}
			return func(next func() bool) {
				f := &flaky{fails: fails, err: transient()}
				op := f.callValue
				for next() {
					f.n = 0
					_, err := backoff.Retry(ctx, op, opts...)
					if !f.check(b, err) {
						return
					}
				}
			}
		}},
		{"lib=retry-go", func(b *testing.B) func(func() bool) {
			// Retrier.Do (v5's form of retry.Do): copies the per-error
			// attempt map, runs op; on each failure appends the error to
			// its error log (its default; LastErrorOnly would skip that),
			// asks RetryIf and the delay function (FixedDelay of 0) and
			// waits on time.After.
			r := retrygo.New(
				retrygo.Attempts(maxAttempts),
				retrygo.Delay(0),
				retrygo.DelayType(retrygo.FixedDelay),
				retrygo.Context(ctx),
			)
			return func(next func() bool) {
				f := &flaky{fails: fails, err: transient()}
				op := f.call
				for next() {
					f.n = 0
					if !f.check(b, r.Do(op)) {
						return
					}
				}
			}
		}},
	}
}

// BenchmarkRetrySuccess is a Do whose operation succeeds at its first
// call: the price of wrapping a call that works.
func BenchmarkRetrySuccess(b *testing.B) { run(b, retrySuccessContenders(), false) }

// BenchmarkRetrySuccessParallel is BenchmarkRetrySuccess in GOMAXPROCS
// goroutines sharing one policy.
func BenchmarkRetrySuccessParallel(b *testing.B) { run(b, retrySuccessContenders(), true) }

// retrySuccessContenders adds, to the configured libraries, cenkalti's
// backoff.Retry called with no options, as its README shows: it then
// builds a fresh ExponentialBackOff per call.
func retrySuccessContenders() []contender {
	ctx := context.Background()
	return append(retryContenders(0), contender{"lib=cenkalti-backoff-defaults", func(b *testing.B) func(func() bool) {
		return func(next func() bool) {
			f := &flaky{}
			op := f.callValue
			for next() {
				f.n = 0
				_, err := backoff.Retry(ctx, op)
				if !f.check(b, err) {
					return
				}
			}
		}
	}})
}

// BenchmarkRetryTwoFailures is a Do whose operation fails twice and then
// succeeds, with no wait between calls: three calls and two retry
// decisions of library overhead.
func BenchmarkRetryTwoFailures(b *testing.B) { run(b, retryContenders(failuresSeen), false) }

// BenchmarkRetryTwoFailuresParallel is BenchmarkRetryTwoFailures in
// GOMAXPROCS goroutines sharing one policy.
func BenchmarkRetryTwoFailuresParallel(b *testing.B) { run(b, retryContenders(failuresSeen), true) }

// breakerContenders are the circuit breakers, closed (open after 5
// consecutive failures, for 60s), letting one successful call through
// and recording its success. All goroutines share one breaker, as the
// calls to one service do. The call itself does nothing.
func breakerContenders() []contender {
	nothing := func() (struct{}, error) { return struct{}{}, nil }
	nothingErr := func() error { return nil }
	gobreakerSettings := gobreaker.Settings{
		Name:        "bench",
		Timeout:     openTimeout,
		ReadyToTrip: func(c gobreaker.Counts) bool { return c.ConsecutiveFailures >= tripAfter },
	}
	return []contender{
		{"lib=tenax", func(b *testing.B) func(func() bool) {
			// Allow + Permit.Success: an atomic load of the current
			// generation and an atomic add to ask; an atomic add and a
			// load of the failure run to report. No lock, no clock.
			br := breaker.New(breaker.Settings{Threshold: tripAfter, ResetTimeout: openTimeout})
			return func(next func() bool) {
				for next() {
					p, err := br.Allow()
					if err != nil {
						b.Error(err)
						return
					}
					p.Success()
				}
			}
		}},
		{"lib=gobreaker-Execute", func(b *testing.B) func(func() bool) {
			// CircuitBreaker.Execute: takes the mutex and reads the clock
			// before the call and again after it, with a deferred
			// recover around the call.
			cb := gobreaker.NewCircuitBreaker[struct{}](gobreakerSettings)
			return func(next func() bool) {
				for next() {
					if _, err := cb.Execute(nothing); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}},
		{"lib=gobreaker-TwoStep", func(b *testing.B) func(func() bool) {
			// TwoStepCircuitBreaker.Allow + done(nil), tenax's shape: the
			// same mutex and clock reads as Execute, and Allow returns a
			// new closure for the outcome.
			cb := gobreaker.NewTwoStepCircuitBreaker[struct{}](gobreakerSettings)
			return func(next func() bool) {
				for next() {
					done, err := cb.Allow()
					if err != nil {
						b.Error(err)
						return
					}
					done(nil)
				}
			}
		}},
		{"lib=failsafe-go-Run", func(b *testing.B) func(func() bool) {
			// Executor.Run with a CircuitBreaker: builds an execution per
			// Run, acquires a permit under the breaker's mutex, runs the
			// call, and records the result under the mutex.
			cb := circuitbreaker.NewBuilder[any]().WithFailureThreshold(tripAfter).WithDelay(openTimeout).Build()
			ex := failsafe.With(cb)
			return func(next func() bool) {
				for next() {
					if err := ex.Run(nothingErr); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}},
		{"lib=failsafe-go-Permit", func(b *testing.B) func(func() bool) {
			// TryAcquirePermit + RecordSuccess: the breaker used
			// directly, tenax's shape; each takes the mutex.
			cb := circuitbreaker.NewBuilder[any]().WithFailureThreshold(tripAfter).WithDelay(openTimeout).Build()
			return func(next func() bool) {
				for next() {
					if !cb.TryAcquirePermit() {
						b.Error("failsafe-go breaker refused a permit while closed")
						return
					}
					cb.RecordSuccess()
				}
			}
		}},
	}
}

// BenchmarkBreakerSuccess is one call through a closed breaker that
// succeeds: the price of guarding a call that works.
func BenchmarkBreakerSuccess(b *testing.B) { run(b, breakerContenders(), false) }

// BenchmarkBreakerSuccessParallel is BenchmarkBreakerSuccess in
// GOMAXPROCS goroutines sharing one breaker: the contention figure.
func BenchmarkBreakerSuccessParallel(b *testing.B) { run(b, breakerContenders(), true) }
