package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Error is a provider's error response: its status, the error's type and
// code from the body, the request id, and the retry advice of its headers.
// It carries every signal package classify reads, and retry's hint.
type Error struct {
	// Provider is the Config's provider: openai, anthropic or mock.
	Provider string
	// Status is the HTTP status code.
	Status int
	// Type is the error's type: OpenAI's "invalid_request_error",
	// "server_error", "requests", "insufficient_quota"; Anthropic's
	// "rate_limit_error", "overloaded_error", "authentication_error".
	Type string
	// Code is OpenAI's error code, such as "rate_limit_exceeded",
	// "insufficient_quota", "invalid_api_key", "model_not_found",
	// "context_length_exceeded", or Anthropic's error.details.error_code,
	// such as "enforced_spend_limit_reached"; "" when the body has none.
	Code string
	// Message is the error's message from the body.
	Message string
	// Param is OpenAI's param, the request field at fault.
	Param string
	// ContentFilter is Azure's verdict on a prompt its content filter
	// refused (innererror.content_filter_result): the categories that
	// were filtered or detected, with their severities ("violence:
	// severity medium, filtered"); "" when the body has none.
	ContentFilter string
	// ID is the provider's request id (x-request-id or request-id).
	ID string
	// Hint is the server's retry delay from retry-after-ms or
	// Retry-After; 0 when it gave none.
	Hint time.Duration
	// ShouldRetryHeader is the x-should-retry header's advice, nil when
	// the response had none.
	ShouldRetryHeader *bool
	// Body is the response body (at most 64 KiB), with the API key
	// redacted should it appear.
	Body string
	// Err is the SDK's error for the response.
	Err error
}

// Error prints the status, the code (or type), the message, a content
// filter's verdict and the request id: `429 rate_limit_exceeded: Rate
// limit reached … (request req_123)`. A body with no message (a proxy's
// HTML page) gives its text as the message, tags stripped and cut short.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(strconv.Itoa(e.Status))
	if c := e.ProviderCode(); c != "" {
		b.WriteString(" ")
		b.WriteString(c)
	}
	b.WriteString(": ")
	if e.Message != "" {
		b.WriteString(e.Message)
	} else {
		b.WriteString(strings.ToLower(http.StatusText(e.Status)))
	}
	if e.ContentFilter != "" {
		b.WriteString(" [content filter: ")
		b.WriteString(e.ContentFilter)
		b.WriteString("]")
	}
	b.WriteString(requestSuffix(e.ID))
	return b.String()
}

// Unwrap returns the SDK's error, its text scrubbed of the API key: the
// SDKs quote the response body, which a server may echo the key into, and
// every layer of the chain is shown by Inspect and failure reports.
func (e *Error) Unwrap() error { return e.Err }

// scrubbedError is an SDK error whose message had the API key replaced. It
// ends the chain on purpose: the raw SDK error would say it again.
type scrubbedError struct{ msg string }

func (e *scrubbedError) Error() string { return e.msg }

// HTTPStatus returns the status code, for classify.StatusCoder.
func (e *Error) HTTPStatus() int { return e.Status }

// ProviderCode returns Code, or Type when there is no code, for
// classify.ProviderCoder.
func (e *Error) ProviderCode() string {
	if e.Code != "" {
		return e.Code
	}
	return e.Type
}

// ShouldRetry returns the x-should-retry header's advice, for
// classify.ShouldRetrier.
func (e *Error) ShouldRetry() (retry, ok bool) {
	if e.ShouldRetryHeader == nil {
		return false, false
	}
	return *e.ShouldRetryHeader, true
}

// Stderr returns the response body, for classify.StderrCarrier: rules
// match their regex against it.
func (e *Error) Stderr() string { return e.Body }

// RequestID returns the provider's request id, for classify.RequestIDer.
func (e *Error) RequestID() string { return e.ID }

// RetryAfter returns the server's retry delay, for retry.Hinter.
func (e *Error) RetryAfter() time.Duration { return e.Hint }

func requestSuffix(id string) string {
	if id == "" {
		return ""
	}
	return " (request " + id + ")"
}

// newError builds the Error of an error response from what the
// middleware captured, whatever the SDK made of it. secrets (the API key,
// a base URL's query values) are redacted from the body, the message and
// the SDK's error, which quotes the request's URL.
func newError(provider string, c *capture, sdkErr error, secrets []string) *Error {
	e := &Error{Provider: provider, Status: c.status, Err: sdkErr, Body: string(c.body)}
	scrub := func(s string) string {
		for _, secret := range secrets {
			if secret != "" {
				s = strings.ReplaceAll(s, secret, "[redacted]")
			}
		}
		return s
	}
	e.Body = scrub(e.Body)
	if sdkErr != nil {
		if msg := sdkErr.Error(); scrub(msg) != msg {
			e.Err = &scrubbedError{msg: scrub(msg)}
		}
	}
	var body struct {
		Error     json.RawMessage `json:"error"`
		Message   string          `json:"message"`
		RequestID string          `json:"request_id"`
	}
	if json.Unmarshal(c.body, &body) == nil {
		var detail struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Param   any    `json:"param"`
			Code    any    `json:"code"`
			Details struct {
				ErrorCode string `json:"error_code"`
			} `json:"details"`
			InnerError struct {
				ContentFilterResult json.RawMessage `json:"content_filter_result"`
			} `json:"innererror"`
		}
		var text string
		switch {
		case json.Unmarshal(body.Error, &detail) == nil:
			e.Message, e.Type = detail.Message, detail.Type
			e.Param, e.Code = scalar(detail.Param), scalar(detail.Code)
			e.ContentFilter = filterVerdict(detail.InnerError.ContentFilterResult)
			if detail.Details.ErrorCode != "" {
				// Anthropic's finer code: it tells a spend limit from a
				// rate limit where the type and status are the same.
				e.Code = detail.Details.ErrorCode
			}
		case json.Unmarshal(body.Error, &text) == nil: // {"error": "..."} of some compatible servers
			e.Message = text
		default:
			e.Message = body.Message
		}
	}
	if e.Message == "" {
		// A proxy's page or a server's plain text: its words, not only
		// the status's name, say what happened ("upstream connect error").
		e.Message = bodyExcerpt(c.body)
	}
	e.Message = scrub(e.Message)
	e.ID = requestID(c.header, &body.RequestID)
	if d, ok := retry.ParseHeaders(c.header, time.Now()); ok {
		e.Hint = d
	}
	if v, err := strconv.ParseBool(strings.TrimSpace(c.header.Get("x-should-retry"))); err == nil {
		e.ShouldRetryHeader = &v
	}
	return e
}

// requestID returns the response's request id from its headers, else from
// the body's request_id when given.
func requestID(h http.Header, fromBody *string) string {
	if id := h.Get("x-request-id"); id != "" {
		return id
	}
	if id := h.Get("request-id"); id != "" {
		return id
	}
	if fromBody != nil {
		return *fromBody
	}
	return ""
}

// scalar prints a JSON string or number; null and others give "".
func scalar(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return ""
}

// maxExcerpt caps the characters of a body's text kept as an error's
// message.
const maxExcerpt = 300

// bodyExcerpt is the text of an error body that is not a provider's JSON
// error (task.PageText), cut at maxExcerpt characters. "" for a JSON body
// or no text.
func bodyExcerpt(body []byte) string {
	if len(body) == 0 || json.Valid(body) {
		return ""
	}
	return task.PageText(body, maxExcerpt)
}

// filterVerdict reads Azure's content filter results (a prompt's
// innererror.content_filter_result, an answer's content_filter_results):
// the categories filtered, detected or rated above safe, in name order,
// as "violence: severity medium, filtered; jailbreak: detected". "" when
// raw holds none.
func filterVerdict(raw json.RawMessage) string {
	var results map[string]json.RawMessage
	if len(raw) == 0 || json.Unmarshal(raw, &results) != nil {
		return ""
	}
	var parts []string
	for _, name := range sortedKeys(results) {
		var r struct {
			Filtered bool   `json:"filtered"`
			Detected bool   `json:"detected"`
			Severity string `json:"severity"`
		}
		if json.Unmarshal(results[name], &r) != nil {
			continue
		}
		var says []string
		if r.Severity != "" && r.Severity != "safe" {
			says = append(says, "severity "+r.Severity)
		}
		if r.Detected {
			says = append(says, "detected")
		}
		if r.Filtered {
			says = append(says, "filtered")
		}
		if len(says) > 0 {
			parts = append(parts, name+": "+strings.Join(says, ", "))
		}
	}
	return strings.Join(parts, "; ")
}

// answerError returns the error a 200's body holds instead of an answer
// (OpenAI's {"error": {...}}, Anthropic's {"type": "error", "error":
// {...}}), nil when it holds none. Some gateways and compatible servers
// answer a rate limit or an overload so; read as an answer, it was an
// empty one re-asked five times and the provider's words were lost.
//
// Its class is the one its code or type has under classify's table
// (authentication_error fatal, invalid_request_error item,
// overloaded_error and rate_limit_error retryable), and retryable for a
// type the table does not know (api_error, server_error): the server
// failed, not the item.
func answerError(provider string, c *capture, body []byte, secrets []string) error {
	if !mayHoldErrorMember(body) {
		return nil // nearly every answer: no second decode of the body
	}
	var shape struct {
		Type    string          `json:"type"`
		Error   json.RawMessage `json:"error"`
		Choices json.RawMessage `json:"choices"`
		Content json.RawMessage `json:"content"`
	}
	if json.Unmarshal(body, &shape) != nil || len(shape.Choices) > 0 || len(shape.Content) > 0 {
		return nil
	}
	if e := bytes.TrimSpace(shape.Error); len(e) == 0 || e[0] != '{' && e[0] != '"' {
		return nil
	}
	e := newError(provider, &capture{status: c.status, header: c.header, body: body}, nil, secrets)
	class := classify.Retryable
	if d := classify.Classify(&Error{Code: e.Code, Type: e.Type}); strings.HasPrefix(d.Reason, "code ") {
		class = d.Class
	}
	return classify.WithClass(e, class, "error object in a 200 answer")
}

// mayHoldErrorMember reports whether body may have a member that
// encoding/json decodes into a field tagged "error": false only when no
// spelling of the name is in it. encoding/json matches member names
// without regard to case (as bytes.EqualFold, and none of e, r, o folds to
// a letter outside ASCII, as k and s do), and a name may spell a letter as
// a \u escape. It spares every answer a second full decode, a twentieth of
// the CPU of a call (docs/benchmarks.md, "CPU per LLM call").
func mayHoldErrorMember(body []byte) bool {
	if bytes.Contains(body, []byte(`\u`)) {
		return true
	}
	for i := 0; i+len("error") <= len(body); i++ {
		if body[i]|0x20 == 'e' && bytes.EqualFold(body[i:i+len("error")], []byte("error")) {
			return true
		}
	}
	return false
}

// ErrorWords is err's words without a provider's request id, which differs
// on every request: one failure of many requests (a batch wave's) reads
// the same, so that a breaker can count them as one error.
func ErrorWords(err error) string {
	if le, ok := errors.AsType[*Error](err); ok {
		anon := *le
		anon.ID = ""
		return anon.Error()
	}
	return err.Error()
}
