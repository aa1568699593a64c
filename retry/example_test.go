package retry_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
)

// A flaky operation fails twice with a retryable error, then works; Do
// waits between the calls as the policy says.
func ExamplePolicy_Do() {
	p := retry.Policy{
		MaxAttempts: 5,
		Backoff:     retry.Backoff{Base: time.Millisecond, Jitter: retry.JitterNone},
		OnRetry: func(e retry.RetryEvent) {
			fmt.Printf("attempt %d failed (%s), retrying in %v\n", e.Attempt, e.Decision.Class, e.Delay)
		},
	}
	calls := 0
	err := p.Do(context.Background(), func(context.Context) error {
		calls++
		if calls < 3 {
			return classify.WithClass(errors.New("503 service unavailable"), classify.Retryable, "status 503")
		}
		return nil
	})
	fmt.Println("calls:", calls, "err:", err)
	// Output:
	// attempt 1 failed (retryable), retrying in 1ms
	// attempt 2 failed (retryable), retrying in 2ms
	// calls: 3 err: <nil>
}

// A non-retryable error stops at once; the *Error says why and keeps the
// operation's error.
func ExamplePolicy_Do_notRetryable() {
	err := retry.Policy{}.Do(context.Background(), func(context.Context) error {
		return classify.WithClass(errors.New("401 invalid api key"), classify.Fatal, "status 401")
	})
	fmt.Println(err)
	fmt.Println(errors.Is(err, retry.ErrNotRetryable))
	// Output:
	// gave up after 1 attempt: not retryable (fatal): 401 invalid api key
	// true
}

// Schedule prints a backoff's delays before jitter.
func ExampleBackoff_Schedule() {
	b := retry.Backoff{Base: time.Second, Multiplier: 2, Max: 30 * time.Second}
	fmt.Println(b.Schedule(7))
	// Output:
	// [1s 2s 4s 8s 16s 30s 30s]
}

// A plain error carries no class signal: the zero Policy calls it once;
// Otherwise: Retryable retries it like cenkalti/backoff or retry-go would,
// while a 401 still stops at once.
func ExamplePolicy_Do_noSignal() {
	for _, p := range []retry.Policy{
		{},
		{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Millisecond, Jitter: retry.JitterNone},
			Classifier: classify.Classifier{Otherwise: classify.Retryable}},
	} {
		calls := 0
		err := p.Do(context.Background(), func(context.Context) error {
			calls++
			return errors.New("boom")
		})
		fmt.Println("calls:", calls, "err:", err)
	}
	// Output:
	// calls: 1 err: gave up after 1 attempt: not retryable (item): boom
	// calls: 3 err: gave up after 3 attempts: retries exhausted: boom
}
