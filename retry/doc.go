// Package retry decides whether, and after how long, a failed operation
// is tried again.
//
// Unlike cenkalti/backoff, retry-go and failsafe-go, it does not retry
// every error: only those that classify as retryable, by what they carry
// (a 429 or 5xx status, a timeout, a reset or refused connection, an exit
// code, words like "timeout" in the message). A plain errors.New("boom")
// says none of that, so the zero Policy calls it once and gives up with
// ErrNotRetryable; errors.New("connection refused") is retried. To retry
// every error but those known to be permanent, as those packages do, set
// Classifier: classify.Classifier{Otherwise: classify.Retryable}; to mark
// one error, wrap it with classify.WithClass. docs/decisions.md says why
// the default is the other way round: over thousands of items, retrying
// an error about the item itself spends minutes of backoff on a certain
// failure.
//
// A Policy is an immutable value that answers three questions about each
// failure. Is it worth retrying? The Classifier decides: only errors of
// class retryable are (see package classify). Is there budget left?
// MaxAttempts counts consecutive retryable failures of one item, so a
// successful call, even one whose output later proved invalid, starts the
// count again; MaxElapsed bounds an item's wall time. How long to wait?
// A server's hint wins: an error on whose chain a Hinter reports a
// positive RetryAfter (see After and ParseHeaders) waits that long, capped
// by MaxHint. Otherwise Backoff computes
//
//	min(Max, Base × Multiplier^(n-1))
//
// for retry n, randomizes it by Jitter so that items that failed together
// spread out, and clamps it to [Min, Max]. With the defaults (Base 1s,
// Multiplier 2, Max 60s, proportional jitter) retry n waits about 1s, 2s,
// 4s, … each drawn from ±50% of that, never over a minute.
//
// Policy.Do and DoValue run an operation to success or to an *Error.
// The error says why retrying stopped (its Cause: ErrExhausted,
// ErrNotRetryable, ErrMaxElapsed, ErrCanceled) and what failed last (Last);
// errors.Is and errors.As see both. The successful path of Do allocates
// nothing, so wrapping a fast call in a Policy costs no garbage.
//
// Callers that need their own loop, as tenax's engine does to interleave
// re-asks for invalid output, take a Retrier from Policy.Start and report
// each call with Success or Failure; Failure returns the delay to wait, or
// the reason to stop. The Retrier holds the per-item state (the streak,
// the previous delay, the random source), so one Policy serves any number
// of items concurrently.
package retry
