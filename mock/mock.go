package mock

import (
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config sets how the simulated provider behaves. The zero Config answers
// every request at once, with no faults and limits too high to reach.
type Config struct {
	// Latency is how long each answer takes.
	Latency time.Duration
	// LatencyMax, when above Latency, makes each answer take a time drawn
	// uniformly from [Latency, LatencyMax].
	LatencyMax time.Duration
	// Seed seeds the draws of faults and latencies: for a given seed and
	// request order the same requests meet the same faults.
	Seed int64
	// RPM is the request limit of each model in each dialect, a bucket of
	// RPM requests refilled continuously at RPM per minute, as the real
	// providers refill theirs. A request past it gets the provider's 429
	// with the time until the bucket holds a request again. 0 means
	// unlimited: the headers announce 1,000,000.
	RPM int
	// TPM is the token limit of each model in each dialect, refilled the
	// same way. OpenAI counts a request's prompt tokens plus its
	// max_tokens; Anthropic has an input-token and an output-token bucket
	// of TPM each, charges max_tokens to the output bucket and gives back
	// what the answer did not use. A request larger than the whole limit
	// gets the non-retryable "request too large". 0 means unlimited: the
	// headers announce 1,000,000,000.
	TPM int
	// Faults are the fractions of requests that meet each fault.
	Faults Faults
	// Record keeps every request for inspection with Server.Requests.
	Record bool
	// Answers, when set, script the model: the good answers are these
	// texts, in order, whatever the model and prompt; the last one is
	// repeated. Faults still apply. A test of a multi-turn loop (a fix
	// run's edits) scripts its model this way.
	Answers []string
	// LogRequests, when set, receives one JSON line per request: what was
	// asked (headers with credentials redacted, the body) and what was
	// answered (status, fault, headers, body or event stream). Writes are
	// serialized; a write error is ignored.
	LogRequests io.Writer
	// Batch configures the batch APIs (see BatchConfig).
	Batch BatchConfig
	// ContextWindow, when above 0, is every model's context window in
	// tokens, in place of the dialect's (128,000 OpenAI, 200,000
	// Anthropic): a prompt and max_tokens past it get the provider's
	// context-length 400. Several servers with different windows
	// rehearse a job's routes.
	ContextWindow int
	// AWSCredentials, when set, are the AWS access key ids the mock's
	// Bedrock endpoint knows, each with its secret access key: a Converse
	// request's SigV4 signature is checked as AWS checks it, so an unknown
	// key id is 403 UnrecognizedClientException and a signature made with
	// another secret (or over other bytes) 403 InvalidSignatureException.
	// Unset, any signed request is taken.
	AWSCredentials map[string]string
	// AWSRegion, when set with AWSCredentials, is the region the mock's
	// Bedrock serves: a signature scoped to another is 403
	// InvalidSignatureException, as a regional endpoint answers it.
	AWSRegion string
}

// Faults are fractions of requests, each in [0, 1], that meet a fault
// instead of a good answer. One draw per request picks at most one fault,
// in the order of the fields, so the fractions must sum to at most 1.
type Faults struct {
	// RateLimit answers 429 as a provider does for a request its limit
	// refused though the headers show room: the hint (retry-after-ms for
	// OpenAI, Retry-After rounded up to whole seconds for both) is the
	// time one request takes to refill at the announced RPM.
	RateLimit float64
	// Server answers 500; on a stream, an error event mid-stream.
	Server float64
	// Overloaded answers 529 (Anthropic) or 503 (OpenAI); on a stream, an
	// overloaded error event mid-stream.
	Overloaded float64
	// Timeout never answers: the request blocks until the client gives up.
	Timeout float64
	// Reset drops the connection with a TCP reset, before any response.
	Reset float64
	// Malformed cuts the connection in the middle of the answer, after a
	// 200 and part of the body (or part of the event stream).
	Malformed float64
	// InvalidOutput answers 200 with a plausible but wrong answer: JSON
	// that does not parse (a trailing comma; the answer finished normally)
	// or an object missing a field for mock-json, a structured output or a
	// tool call; a refusal in prose for mock-echo. A cut answer is the
	// Truncated fault's.
	InvalidOutput float64
	// Auth answers 401 as if the API key were wrong.
	Auth float64
	// Quota answers as an account out of credit: OpenAI's 429
	// insufficient_quota, Anthropic's 400 invalid_request_error "Your
	// credit balance is too low".
	Quota float64
	// SpendLimit answers 429 as an organization past its spend limit.
	SpendLimit float64
	// PaymentRequired answers 402 (billing_error).
	PaymentRequired float64
	// Forbidden answers 403 (permission_error; OpenAI's unsupported region).
	Forbidden float64
	// TooLarge answers 413 request_too_large.
	TooLarge float64
	// ContextLength answers 400 as a prompt longer than the model's
	// context window (OpenAI's context_length_exceeded).
	ContextLength float64
	// ContentFilter answers 200 with the answer stopped by the content
	// filter: finish_reason content_filter (OpenAI), stop_reason refusal
	// (Anthropic).
	ContentFilter float64
	// Refusal answers 200 with a refusal: OpenAI's message.refusal,
	// Anthropic's stop_reason refusal.
	Refusal float64
	// Truncated answers 200 with the answer cut at max_tokens:
	// finish_reason length, stop_reason max_tokens.
	Truncated float64
	// ModelNotReady answers Bedrock's 429 ModelNotReadyException (a model
	// still loading); the other dialects answer it as Overloaded.
	ModelNotReady float64
	// ModelTimeout answers Bedrock's 408 ModelTimeoutException; the other
	// dialects answer it as Server.
	ModelTimeout float64
}

// fault is the outcome of one request's draw.
type fault uint8

const (
	faultNone fault = iota
	faultRateLimit
	faultServer
	faultOverloaded
	faultTimeout
	faultReset
	faultMalformed
	faultInvalidOutput
	faultAuth
	faultQuota
	faultSpendLimit
	faultPaymentRequired
	faultForbidden
	faultTooLarge
	faultContextLength
	faultContentFilter
	faultRefusal
	faultTruncated
	faultModelNotReady
	faultModelTimeout
	numFaults
)

// faultNames are the faults' names in errors, logs and flags' help.
var faultNames = [numFaults]string{
	"", "rate_limit", "server", "overloaded", "timeout", "reset", "malformed", "invalid_output", "auth",
	"quota", "spend_limit", "payment_required", "forbidden", "too_large", "context_length",
	"content_filter", "refusal", "truncated", "model_not_ready", "model_timeout",
}

func (f fault) String() string { return faultNames[f] }

// fractions returns the fractions indexed by fault, in draw order.
func (f Faults) fractions() [numFaults]float64 {
	return [numFaults]float64{
		0, f.RateLimit, f.Server, f.Overloaded, f.Timeout, f.Reset, f.Malformed, f.InvalidOutput, f.Auth,
		f.Quota, f.SpendLimit, f.PaymentRequired, f.Forbidden, f.TooLarge, f.ContextLength,
		f.ContentFilter, f.Refusal, f.Truncated, f.ModelNotReady, f.ModelTimeout,
	}
}

// Validate reports a fraction outside [0, 1], fractions that sum past 1,
// a negative latency or limit.
func (c Config) Validate() error {
	var errs []error
	sum := 0.0
	for k, frac := range c.Faults.fractions() {
		if frac < 0 || frac > 1 {
			errs = append(errs, fmt.Errorf("mock: fault %s is %v, want a fraction in [0, 1]", fault(k), frac))
		}
		sum += frac
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("mock: fault fractions sum to %v, want at most 1", sum))
	}
	if c.Latency < 0 || c.LatencyMax < 0 {
		errs = append(errs, errors.New("mock: latency must not be negative"))
	}
	if c.ContextWindow < 0 {
		errs = append(errs, fmt.Errorf("mock: context window %d must not be negative", c.ContextWindow))
	}
	if c.RPM < 0 || c.TPM < 0 {
		errs = append(errs, errors.New("mock: rpm and tpm must not be negative"))
	}
	return errors.Join(errs...)
}

// Stats counts what the server did, by outcome. Every request counts in
// Requests; a request that met no fault and got a proper answer counts in
// Succeeded.
type Stats struct {
	Requests        int64
	Succeeded       int64
	RateLimited     int64 // the limits and RateLimit faults
	ServerErrors    int64
	Overloaded      int64
	Timeouts        int64
	Resets          int64
	Malformed       int64
	InvalidOutputs  int64
	AuthErrors      int64 // missing key and Auth faults
	BadRequests     int64 // refused by validation, unknown routes and models
	BillingErrors   int64 // Quota, SpendLimit and PaymentRequired faults
	Forbidden       int64
	TooLarge        int64 // bodies past 32 MB and TooLarge faults
	ContextLength   int64 // prompts past the context window and ContextLength faults
	ContentFiltered int64
	Refusals        int64
	Truncated       int64
}

// counter indexes Server.counts.
type counter uint8

const (
	cRequests counter = iota
	cSucceeded
	cRateLimited
	cServerErrors
	cOverloaded
	cTimeouts
	cResets
	cMalformed
	cInvalidOutputs
	cAuthErrors
	cBadRequests
	cBillingErrors
	cForbidden
	cTooLarge
	cContextLength
	cContentFiltered
	cRefusals
	cTruncated
	numCounters
)

// faultCounter is the counter each fault adds to.
var faultCounter = [numFaults]counter{
	cSucceeded, cRateLimited, cServerErrors, cOverloaded, cTimeouts, cResets, cMalformed, cInvalidOutputs, cAuthErrors,
	cBillingErrors, cBillingErrors, cBillingErrors, cForbidden, cTooLarge, cContextLength,
	cContentFiltered, cRefusals, cTruncated, cOverloaded, cServerErrors,
}

// Recorded is one request as the server received it, kept when
// Config.Record is on.
type Recorded struct {
	// Path is the URL path, such as /v1/chat/completions.
	Path string
	// Model is the requested model.
	Model string
	// Messages are the conversation, with Anthropic's system prompt first
	// as a message of role "system".
	Messages []Message
	// Header is the request's header, every value that may be a
	// credential (all but the SDKs' and HTTP's own headers) redacted.
	Header http.Header
}

// Message is one message of a recorded conversation.
type Message struct {
	Role    string
	Content string
}

// Server is the simulated provider. It is an http.Handler for a real
// server and serves in-process through Transport. It is safe for
// concurrent use.
type Server struct {
	cfg    Config
	routes []route

	mu       sync.Mutex // guards rng, seq, limits and recorded
	rng      *rand.Rand
	seq      int64
	limits   map[limitKey]*limiter
	recorded []Recorded
	batch    batchStore // the batch APIs' files and batches
	stored   storedCompletions

	// answered counts the scripted answers given (Config.Answers).
	answered atomic.Int64
	logMu    sync.Mutex // serializes writes to cfg.LogRequests

	held      chan struct{} // closed when requests held by Timeout faults must end
	closeOnce sync.Once

	counts [numCounters]atomic.Int64
}

// New returns a Server that behaves as cfg says. Fractions out of range
// are not checked here; use Config.Validate for user input.
func New(cfg Config) *Server {
	seed := uint64(cfg.Seed)
	s := &Server{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		limits: map[limitKey]*limiter{},
		held:   make(chan struct{}),
	}
	s.routes = s.routeTable()
	return s
}

// Close ends the requests held by Timeout faults, which would otherwise
// wait for their clients to give up. It is safe to call more than once.
func (s *Server) Close() error {
	s.releaseHeld()
	return nil
}

// releaseHeld ends the requests held by Timeout faults.
func (s *Server) releaseHeld() { s.closeOnce.Do(func() { close(s.held) }) }

// Stats returns the counts so far.
func (s *Server) Stats() Stats {
	n := func(c counter) int64 { return s.counts[c].Load() }
	return Stats{
		Requests: n(cRequests), Succeeded: n(cSucceeded), RateLimited: n(cRateLimited),
		ServerErrors: n(cServerErrors), Overloaded: n(cOverloaded), Timeouts: n(cTimeouts),
		Resets: n(cResets), Malformed: n(cMalformed), InvalidOutputs: n(cInvalidOutputs),
		AuthErrors: n(cAuthErrors), BadRequests: n(cBadRequests), BillingErrors: n(cBillingErrors),
		Forbidden: n(cForbidden), TooLarge: n(cTooLarge), ContextLength: n(cContextLength),
		ContentFiltered: n(cContentFiltered), Refusals: n(cRefusals), Truncated: n(cTruncated),
	}
}

func (s *Server) count(c counter) { s.counts[c].Add(1) }

// Requests returns a copy of the recorded requests, in arrival order; nil
// unless Config.Record is on.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.recorded))
	copy(out, s.recorded)
	return out
}

// next takes the next request's sequence number.
func (s *Server) next() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// draw picks a chat request's fault and latency, in one step so that the
// draws follow the request order.
func (s *Server) draw() (f fault, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.rng.Float64()
	acc := 0.0
	for k, frac := range s.cfg.Faults.fractions() {
		acc += frac
		if frac > 0 && u < acc {
			f = fault(k)
			break
		}
	}
	latency = s.cfg.Latency
	if span := s.cfg.LatencyMax - s.cfg.Latency; span > 0 {
		latency += time.Duration(s.rng.Int64N(int64(span) + 1))
	}
	return f, latency
}

// record keeps r when recording is on.
func (s *Server) record(r Recorded) {
	if !s.cfg.Record {
		return
	}
	s.mu.Lock()
	s.recorded = append(s.recorded, r)
	s.mu.Unlock()
}
