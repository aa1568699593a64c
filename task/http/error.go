package http

import (
	"math"
	nethttp "net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/task"
)

// StatusError reports a response whose status is not 2xx. It carries what
// the classifier reads (the status, the body, x-should-retry, the request
// id) and the server's retry hint for the retry policy.
type StatusError struct {
	// Status is the response's status code.
	Status int
	// Body is the response body, at most MaxErrorBody bytes of it.
	Body string
	// Hint is how long the server asked to wait, from retry-after-ms or
	// Retry-After; 0 when it gave no hint.
	Hint time.Duration
	// ShouldRetryHeader is the server's x-should-retry advice, nil when
	// the header is absent or neither "true" nor "false".
	ShouldRetryHeader *bool
	// Header is the response's header, for anything else a caller wants.
	Header nethttp.Header
}

// MaxErrorBody caps StatusError.Body.
const MaxErrorBody = 64 << 10

// Error reads like "http: 503 Service Unavailable: first line of the body",
// or, for an HTML page, the page's text (task.PageText).
func (e *StatusError) Error() string {
	var b strings.Builder
	b.WriteString("http: ")
	b.WriteString(strconv.Itoa(e.Status))
	if text := nethttp.StatusText(e.Status); text != "" {
		b.WriteByte(' ')
		b.WriteString(text)
	}
	line := firstLine(e.Body, 200)
	if task.IsPage(e.Header.Get("Content-Type"), []byte(e.Body)) {
		line = task.PageText([]byte(e.Body), 200)
	}
	if line != "" {
		b.WriteString(": ")
		b.WriteString(line)
	}
	return b.String()
}

// HTTPStatus returns the status code. It implements classify.StatusCoder.
func (e *StatusError) HTTPStatus() int { return e.Status }

// Stderr returns the body, so classification rules can match it. It
// implements classify.StderrCarrier.
func (e *StatusError) Stderr() string { return e.Body }

// ShouldRetry returns the x-should-retry advice and whether there was any.
// It implements classify.ShouldRetrier.
func (e *StatusError) ShouldRetry() (retry, ok bool) {
	if e.ShouldRetryHeader == nil {
		return false, false
	}
	return *e.ShouldRetryHeader, true
}

// RetryAfter returns the server's hint, 0 for none. It implements
// retry.Hinter, so the retry policy waits at least this long.
func (e *StatusError) RetryAfter() time.Duration { return e.Hint }

// RequestID returns the response's x-request-id (or request-id) header,
// "" if none. It implements classify.RequestIDer.
func (e *StatusError) RequestID() string {
	if id := e.Header.Get("X-Request-Id"); id != "" {
		return id
	}
	return e.Header.Get("Request-Id")
}

// newStatusError builds the error of a non-2xx response; now is when the
// response arrived, for Retry-After dates when the response has no Date.
func newStatusError(resp *nethttp.Response, body []byte, now time.Time) *StatusError {
	e := &StatusError{
		Status: resp.StatusCode,
		Body:   string(body),
		Hint:   parseRetryAfter(resp.Header, now),
		Header: resp.Header,
	}
	switch v := strings.TrimSpace(resp.Header.Get("X-Should-Retry")); {
	case strings.EqualFold(v, "true"):
		e.ShouldRetryHeader = new(true)
	case strings.EqualFold(v, "false"):
		e.ShouldRetryHeader = new(false)
	}
	return e
}

// parseRetryAfter returns the wait a response asks for: retry-after-ms
// (fractional milliseconds, as OpenAI sends) wins, then Retry-After as
// seconds or an HTTP date. A date is measured from the response's Date
// header when it has one, so a skewed local clock does not matter, else
// from now. It returns 0 for no hint, a past date or a malformed value.
func parseRetryAfter(h nethttp.Header, now time.Time) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
			return fromFloat(ms, float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return fromFloat(s, float64(time.Second))
	}
	at, err := nethttp.ParseTime(v)
	if err != nil {
		return 0
	}
	if date, err := nethttp.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	return max(at.Sub(now), 0)
}

// fromFloat converts n units to a Duration: 0 for negative or NaN,
// saturated instead of overflowing.
func fromFloat(n, unit float64) time.Duration {
	d := n * unit
	switch {
	case !(d > 0): // also NaN
		return 0
	case d >= math.MaxInt64:
		return math.MaxInt64
	}
	return time.Duration(d)
}

// firstLine returns the first non-blank line of s, trimmed and cut to at
// most max bytes.
func firstLine(s string, max int) string {
	for line := range strings.Lines(s) {
		if line = strings.TrimSpace(line); line != "" {
			if len(line) > max {
				line = strings.ToValidUTF8(line[:max], "") + "…"
			}
			return line
		}
	}
	return ""
}
