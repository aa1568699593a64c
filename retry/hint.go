package retry

import (
	"errors"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Hinter is implemented by errors that carry a server's advice on when to
// try again, such as a 429 response's Retry-After header. A RetryAfter of
// more than zero is a hint; zero or less means none. When a retryable
// error's chain holds a hint, the hint (capped by Policy.MaxHint) replaces
// the backoff delay.
type Hinter interface {
	RetryAfter() time.Duration
}

// hintError is the error-typed view of Hinter, so errors.AsType can look
// for it.
type hintError interface {
	error
	Hinter
}

// hinted is the error After returns.
type hinted struct {
	after time.Duration
	err   error
}

func (h *hinted) Error() string             { return h.err.Error() }
func (h *hinted) Unwrap() error             { return h.err }
func (h *hinted) RetryAfter() time.Duration { return h.after }

// After returns err carrying the hint "retry after d": an operation's way
// to pass on what a server said. It returns nil for a nil err. A hint
// only sets the delay: whether the error is retried at all is still the
// classifier's decision, so mark an error of your own with
// classify.WithClass if the default classification would not retry it.
func After(d time.Duration, err error) error {
	if err == nil {
		return nil
	}
	return &hinted{after: d, err: err}
}

// hintOf returns the first positive hint on err's chain.
func hintOf(err error) (time.Duration, bool) {
	h, ok := errors.AsType[hintError](err)
	if !ok {
		return 0, false
	}
	if d := h.RetryAfter(); d > 0 {
		return d, true
	}
	return 0, false
}

// ParseHeaders reads a server's retry hint from response headers, as the
// OpenAI and Anthropic SDKs do: "retry-after-ms" (milliseconds, possibly
// fractional) wins; otherwise "Retry-After" as seconds (an integer or a
// decimal) or as an HTTP date, in which case the delay is the date minus
// now, and never negative. ok is false when neither header holds a usable
// value; a malformed retry-after-ms falls through to Retry-After.
func ParseHeaders(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && !math.IsInf(ms, 0) {
			return fromFloat(ms * float64(time.Millisecond)), true
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || math.IsInf(s, 0) || math.IsNaN(s) {
			return 0, false
		}
		return fromFloat(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// fromFloat converts nanoseconds to a Duration, saturating instead of
// overflowing.
func fromFloat(ns float64) time.Duration {
	if math.IsNaN(ns) || ns >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(ns)
}
