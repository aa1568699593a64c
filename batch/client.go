package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task/llm"
)

// Client is a provider's batch API, reduced to what waves need. OpenAI's
// (files and batches) and Anthropic's (message batches) implement it
// through the official SDKs with their retries off; each method is one
// unreliable operation that the Runner retries with its own policy.
type Client interface {
	// Submit creates a batch of reqs and returns its id. key names the
	// submission (job, wave, chunk); a client that can label a batch
	// keeps it in the batch's metadata.
	Submit(ctx context.Context, key string, reqs []Request) (string, error)
	// Status returns where the batch stands.
	Status(ctx context.Context, id string) (Status, error)
	// Cancel asks the provider to stop the batch; its unprocessed
	// requests end canceled.
	Cancel(ctx context.Context, id string) error
	// Results calls fn with the result of every request of the ended
	// batch st, in whatever order the provider gives them.
	Results(ctx context.Context, st Status, fn func(Answer) error) error
	// Limits returns the provider's limits on one batch.
	Limits() Limits
}

// Finder is a Client that can find a batch by the key it was submitted
// under, among the provider's batches: what closes the window between a
// batch's creation and the ledger entry of its id (a crash there, or a
// create whose answer was lost and is tried again).
type Finder interface {
	// Find returns the id of the batch submitted under key, looking at
	// the batches created since since (newest first); found is false
	// when none carries key.
	Find(ctx context.Context, key string, since time.Time) (id string, found bool, err error)
}

// Request is one request of a batch: the call's body in the provider's
// wire format, under its custom id.
type Request struct {
	CustomID string
	Body     json.RawMessage
}

// Limits bound one batch.
type Limits struct {
	// MaxRequests is the most requests in one batch.
	MaxRequests int
	// MaxBytes is the most bytes of one batch's requests as sent.
	MaxBytes int
}

// The providers' limits.
var (
	// OpenAILimits are OpenAI's: 50,000 requests and a 200 MB input file.
	OpenAILimits = Limits{MaxRequests: 50_000, MaxBytes: 200 << 20}
	// AnthropicLimits are Anthropic's: 100,000 requests or 256 MB.
	AnthropicLimits = Limits{MaxRequests: 100_000, MaxBytes: 256 << 20}
)

// Status is a batch's state as the provider reports it.
type Status struct {
	ID string
	// State is the provider's word: OpenAI's validating, in_progress,
	// finalizing, completed, failed, expired, cancelling, cancelled;
	// Anthropic's in_progress, canceling, ended.
	State string
	// Ended is true once no request will be processed any more and the
	// results can be read.
	Ended bool
	// Failed is true for a batch the provider refused as a whole
	// (OpenAI's failed status); Problem says why.
	Failed  bool
	Problem string
	// Counts are the provider's request_counts.
	Counts Counts
	// ExpiresAt is when the completion window closes.
	ExpiresAt time.Time

	// outputFile and errorFile are OpenAI's result files.
	outputFile, errorFile string
	// operation is an ended Gemini batch as its poll read it, responses
	// and all, which Results reads instead of getting the batch again.
	operation []byte
}

// Counts are a batch's requests by state. OpenAI reports only Total,
// Succeeded and Errored (expired and canceled requests count as errored).
type Counts struct {
	Total, Processing, Succeeded, Errored, Expired, Canceled int
}

// Done returns the requests no longer processing.
func (c Counts) Done() int { return c.Succeeded + c.Errored + c.Expired + c.Canceled }

// Answer is the result of one request of a batch: a successful call's
// body, or the call's error, or nothing because the request was never
// processed.
type Answer struct {
	CustomID string
	// Body is the provider's answer (a chat completion or a message) when
	// the call worked.
	Body json.RawMessage
	// Err is the call's error, an *llm.Error, when it failed.
	Err error
	// Unprocessed is "expired" or "canceled" for a request the provider
	// never ran.
	Unprocessed string
}

// OpError is a failed batch API operation (upload, create, status,
// cancel, results), carrying what package classify reads.
type OpError struct {
	// Op names the operation: "upload", "create", "status", "cancel",
	// "results".
	Op string
	// Status is the HTTP status, 0 when there was no response.
	Status int
	// Code is the provider's error code or type.
	Code string
	// Hint is the server's retry delay, 0 for none.
	Hint time.Duration
	// Err is the SDK's or the transport's error.
	Err error
}

func (e *OpError) Error() string { return "batch " + e.Op + ": " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *OpError) Unwrap() error { return e.Err }

// HTTPStatus returns Status, for classify.StatusCoder (0 reads as none).
func (e *OpError) HTTPStatus() int { return e.Status }

// ProviderCode returns Code, for classify.ProviderCoder.
func (e *OpError) ProviderCode() string { return e.Code }

// RetryAfter returns Hint, for retry.Hinter.
func (e *OpError) RetryAfter() time.Duration { return e.Hint }

// opError wraps err of operation op with the status, code and hint of the
// response it carries (either SDK's error has one).
func opError(op string, err error, status int, body string, header http.Header) error {
	if err == nil {
		return nil
	}
	e := &OpError{Op: op, Status: status, Err: err}
	if header != nil {
		if d, ok := retry.ParseHeaders(header, time.Now()); ok {
			e.Hint = d
		}
	}
	var parsed struct {
		Error struct {
			Type string `json:"type"`
			Code any    `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(body), &parsed) == nil {
		e.Code = parsed.Error.Type
		if c, ok := parsed.Error.Code.(string); ok && c != "" {
			e.Code = c
		}
	}
	return e
}

// requestError turns a request's error in a batch result into the *llm.Error
// the same failure online would have been. anthropicType is Anthropic's
// error type, which stands for the status it has online.
func requestError(provider string, status int, typ, code, message, requestID string) error {
	if status == 0 {
		status = anthropicStatus[typ]
		if status == 0 {
			status = http.StatusInternalServerError
		}
	}
	return &llm.Error{Provider: provider, Status: status, Type: typ, Code: code, Message: message, ID: requestID}
}

// anthropicStatus is the HTTP status of each Anthropic error type, as its
// API documents them.
var anthropicStatus = map[string]int{
	"invalid_request_error": 400,
	"authentication_error":  401,
	"billing_error":         402,
	"permission_error":      403,
	"not_found_error":       404,
	"request_too_large":     413,
	"rate_limit_error":      429,
	"api_error":             500,
	"overloaded_error":      529,
}

// CustomID is the custom id of item idx's request in wave: "i<idx>-w<wave>",
// within both providers' rules (letters, digits, _ and -; 64 at most).
func CustomID(idx, wave int) string {
	return "i" + strconv.Itoa(idx) + "-w" + strconv.Itoa(wave)
}

// ParseCustomID reads a custom id written by CustomID.
func ParseCustomID(id string) (idx, wave int, err error) {
	rest, ok := strings.CutPrefix(id, "i")
	i, w, found := strings.Cut(rest, "-w")
	if !ok || !found {
		return 0, 0, fmt.Errorf("batch: custom id %q is not one of tenax's (i<idx>-w<wave>)", id)
	}
	idx, err1 := strconv.Atoi(i)
	wave, err2 := strconv.Atoi(w)
	if err := errors.Join(err1, err2); err != nil || idx < 0 || wave < 1 || CustomID(idx, wave) != id {
		return 0, 0, fmt.Errorf("batch: custom id %q is not one of tenax's (i<idx>-w<wave>)", id)
	}
	return idx, wave, nil
}
