package mock

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// dialect is one provider's wire format: how a request authenticates and
// is validated, and how its errors, rate-limit headers, answers and event
// streams look. The handler asks the request's dialect instead of
// branching on the provider; openAI and anthropic are its two values.
type dialect struct {
	// name is "openai" or "anthropic", as in logs and limit keys.
	name string
	// requestIDHeader carries the request id on every response.
	requestIDHeader string
	// everyResponse are headers set on every response.
	everyResponse map[string]string
	// contextWindow is the mock models' context, in tokens.
	contextWindow int
	// outputLimit: the provider limits output tokens apart (Anthropic).
	outputLimit bool
	// toolCallPrefix starts the ids of tool calls.
	toolCallPrefix string
	// objectToolInput: a tool call's input is a JSON object in the answer
	// (Anthropic's tool_use input), not a string of arguments that may
	// fail to parse (OpenAI's).
	objectToolInput bool
	// apiKey returns the request's key, "" when it has none.
	apiKey func(r *http.Request) string
	// verify checks the request's credentials beyond their presence (a
	// SigV4 signature), nil when they pass or are not checked.
	verify func(x *exchange) *apiError
	// decode reads the request body into the exchange's request; nil
	// means the body is OpenAI's or Anthropic's JSON, read as it is.
	decode func(x *exchange) error
	// errorBody is an error response's body.
	errorBody func(requestID string, e apiError) []byte
	// errs are the provider's errors by kind.
	errs [numErrs]func(x *exchange) apiError
	// validate refuses a request the provider would refuse, nil if none.
	validate func(x *exchange) *apiError
	// limitHeaders announces the limits' state.
	limitHeaders func(h http.Header, st limitState, now time.Time)
	// rateLimited is the 429 of a request the limits refused.
	rateLimited func(x *exchange, st limitState) apiError
	// answer is a completed answer's body.
	answer func(x *exchange, a answer) []byte
	// events are a streamed answer's server-sent events, in order.
	events func(x *exchange, a answer) [][]byte
	// streamError is the event that reports e in the middle of a stream.
	streamError func(x *exchange, e apiError) []byte
	// models is the body of GET /v1/models.
	models func() []byte
	// model is the body of GET /v1/models/{id}.
	model func(id string) []byte
}

// errKind names the errors every dialect has its own body for.
type errKind uint8

const (
	errMissingKey errKind = iota
	errBadKey
	errBadJSON
	errUnknownModel
	errUnknownRoute
	errRateLimit
	errServer
	errOverloaded
	errQuota
	errSpendLimit
	errPaymentRequired
	errForbidden
	errTooLarge
	errContextLength
	errModelNotReady // Bedrock's; the others answer as errOverloaded
	errModelTimeout  // Bedrock's; the others answer as errServer
	numErrs
)

// faultErr is the error an error fault answers with.
var faultErr = map[fault]errKind{
	faultRateLimit: errRateLimit, faultServer: errServer, faultOverloaded: errOverloaded,
	faultAuth: errBadKey, faultQuota: errQuota, faultSpendLimit: errSpendLimit,
	faultPaymentRequired: errPaymentRequired, faultForbidden: errForbidden,
	faultTooLarge: errTooLarge, faultContextLength: errContextLength,
	faultModelNotReady: errModelNotReady, faultModelTimeout: errModelTimeout,
}

// apiError is an error response: status, the provider's type (and for
// OpenAI its code and param), the message, and the headers that come
// with it.
type apiError struct {
	status  int
	typ     string
	code    string // OpenAI's error.code; "" is null
	param   string // OpenAI's error.param; "" is null
	message string
	header  map[string]string
	counter counter
	details []any // Google's error.details (QuotaFailure, RetryInfo, …)
}

// bad is a validation error in d's type for bad requests.
func bad(typ, code, param, message string) *apiError {
	return &apiError{status: http.StatusBadRequest, typ: typ, code: code, param: param, message: message, counter: cBadRequests}
}

// The mock's models and what they answer.
const (
	// ModelEcho answers with the prompt itself.
	ModelEcho = "mock-echo"
	// ModelJSON answers {"text": <prompt>, "length": <runes>} as JSON text.
	ModelJSON = "mock-json"
)

// models are the models the mock serves, in listing order.
var models = []string{ModelEcho, ModelJSON, ModelAgent}

func knownModel(m string) bool { return m == ModelEcho || m == ModelJSON || m == ModelAgent }

// modelsCreated is when the mock's models were "created", for listings.
const modelsCreated = 1700000000

// retryHeaders are a 429's Retry-After (whole seconds, rounded up) and,
// for OpenAI, retry-after-ms.
func retryHeaders(wait time.Duration, ms bool) map[string]string {
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	h := map[string]string{"retry-after": strconv.FormatInt(secs, 10)}
	if ms {
		h["retry-after-ms"] = strconv.FormatInt(max((wait+time.Millisecond-1).Milliseconds(), 1), 10)
	}
	return h
}

// sporadicWait is the hint of a RateLimit fault: a refusal the provider
// makes though its bucket shows room, as a limit enforced over a window
// shorter than the minute does (OpenAI says RPM limits may be quantized to
// the second). The wait is what such a limit asks of its caller: the time
// the announced limit takes to refill one request, at least a
// millisecond, as the headers beside it say (docs/decisions.md, "The
// mock's sporadic 429").
func sporadicWait(requests meter) time.Duration {
	if requests.limit <= 0 {
		return time.Second
	}
	per := time.Minute / time.Duration(requests.limit)
	return max(per.Round(time.Millisecond), time.Millisecond)
}

// mustJSON marshals v, which is always marshalable here.
func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic("mock: " + err.Error())
	}
	return b
}
