package retry

import (
	"errors"
	"strconv"

	"github.com/tenaxhq/tenax/classify"
)

// The causes of an *Error: why retrying stopped. Test for them with
// errors.Is.
var (
	// ErrExhausted means MaxAttempts consecutive retryable failures.
	ErrExhausted = errors.New("retries exhausted")
	// ErrNotRetryable means the classifier decided the failure is not
	// retryable (fatal, item or invalid).
	ErrNotRetryable = errors.New("not retryable")
	// ErrMaxElapsed means the next wait would pass Policy.MaxElapsed.
	ErrMaxElapsed = errors.New("retry time budget exhausted")
	// ErrCanceled means the context ended, or the operation's error was
	// classified canceled. The item stays pending.
	ErrCanceled = errors.New("retry canceled")
)

// Error is how retrying gives up: Cause says why (one of the Err
// sentinels, possibly wrapping the context's error), Last is the last
// error of the operation. Unwrap returns both, so errors.Is(err,
// retry.ErrExhausted) and errors.As(err, &yourErrorType) both work.
type Error struct {
	// Cause is why retrying stopped; errors.Is(Cause, ErrX) holds for
	// exactly one of the sentinels.
	Cause error
	// Last is the operation's last error, nil if it never ran.
	Last error
	// Attempts is how many calls were made.
	Attempts int
	// Decision is the classification of Last.
	Decision classify.Decision
}

// Error reads "gave up after 3 attempts: retries exhausted: <last>".
func (e *Error) Error() string {
	s := "gave up after " + strconv.Itoa(e.Attempts) + " attempt"
	if e.Attempts != 1 {
		s += "s"
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	if e.Cause == ErrNotRetryable && e.Decision.Class != classify.Unknown {
		s += " (" + e.Decision.Class.String() + ")"
	}
	if e.Last != nil {
		s += ": " + e.Last.Error()
	}
	return s
}

// Unwrap returns Cause and Last, leaving out whichever is nil.
func (e *Error) Unwrap() []error {
	switch {
	case e.Cause == nil && e.Last == nil:
		return nil
	case e.Cause == nil:
		return []error{e.Last}
	case e.Last == nil:
		return []error{e.Cause}
	}
	return []error{e.Cause, e.Last}
}
