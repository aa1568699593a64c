package mock

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Config sets how the simulated provider behaves. The zero Config answers
// every request at once, with no faults and no rate limit.
type Config struct {
	// Latency is how long each answer takes.
	Latency time.Duration
	// LatencyMax, when above Latency, makes each answer take a time drawn
	// uniformly from [Latency, LatencyMax].
	LatencyMax time.Duration
	// Seed seeds the draws of faults and latencies: for a given seed and
	// request order the same requests meet the same faults.
	Seed int64
	// RPM is a hidden limit of requests per sliding minute: a request past
	// it gets a 429 with Retry-After. 0 means no limit.
	RPM int
	// TPM is a hidden limit of tokens per sliding minute, counting each
	// request's prompt tokens plus its max_tokens (or its answer's tokens
	// when it sets none), as OpenAI does. 0 means no limit.
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
}

// Faults are fractions of requests, each in [0, 1], that meet a fault
// instead of a good answer. One draw per request picks at most one fault,
// in the order of the fields, so the fractions must sum to at most 1.
type Faults struct {
	// RateLimit answers 429 with Retry-After: 1.
	RateLimit float64
	// Server answers 500.
	Server float64
	// Overloaded answers 529 (Anthropic) or 503 (OpenAI).
	Overloaded float64
	// Timeout never answers: the request blocks until the client gives up.
	Timeout float64
	// Reset drops the connection with a TCP reset, before any response.
	Reset float64
	// Malformed answers 200 with a truncated JSON body.
	Malformed float64
	// InvalidOutput answers 200 with a plausible but wrong answer:
	// truncated JSON or an object missing a field for mock-json, a refusal
	// for mock-echo.
	InvalidOutput float64
	// Auth answers 401 as if the API key were wrong.
	Auth float64
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
)

// list returns the fractions in draw order, paired with their faults.
func (f Faults) list() [8]struct {
	kind fault
	name string
	frac float64
} {
	return [8]struct {
		kind fault
		name string
		frac float64
	}{
		{faultRateLimit, "rate_limit", f.RateLimit},
		{faultServer, "server", f.Server},
		{faultOverloaded, "overloaded", f.Overloaded},
		{faultTimeout, "timeout", f.Timeout},
		{faultReset, "reset", f.Reset},
		{faultMalformed, "malformed", f.Malformed},
		{faultInvalidOutput, "invalid_output", f.InvalidOutput},
		{faultAuth, "auth", f.Auth},
	}
}

// Validate reports a fraction outside [0, 1], fractions that sum past 1,
// a negative latency or limit.
func (c Config) Validate() error {
	var errs []error
	sum := 0.0
	for _, f := range c.Faults.list() {
		if f.frac < 0 || f.frac > 1 {
			errs = append(errs, fmt.Errorf("mock: fault %s is %v, want a fraction in [0, 1]", f.name, f.frac))
		}
		sum += f.frac
	}
	if sum > 1+1e-9 {
		errs = append(errs, fmt.Errorf("mock: fault fractions sum to %v, want at most 1", sum))
	}
	if c.Latency < 0 || c.LatencyMax < 0 {
		errs = append(errs, errors.New("mock: latency must not be negative"))
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
	Requests       int64
	Succeeded      int64
	RateLimited    int64 // hidden limit and RateLimit faults
	ServerErrors   int64
	Overloaded     int64
	Timeouts       int64
	Resets         int64
	Malformed      int64
	InvalidOutputs int64
	AuthErrors     int64 // missing key and Auth faults
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
	// Header is the request's header with the API key redacted.
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
	cfg Config

	mu       sync.Mutex // guards rng, seq, window and recorded
	rng      *rand.Rand
	seq      int64
	window   window
	recorded []Recorded

	// answered counts the scripted answers given (Config.Answers).
	answered atomic.Int64

	held      chan struct{} // closed when requests held by Timeout faults must end
	closeOnce sync.Once

	stats struct {
		requests, succeeded, rateLimited, serverErrors, overloaded,
		timeouts, resets, malformed, invalidOutputs, authErrors atomic.Int64
	}
}

// New returns a Server that behaves as cfg says. Fractions out of range
// are not checked here; use Config.Validate for user input.
func New(cfg Config) *Server {
	seed := uint64(cfg.Seed)
	return &Server{
		cfg:    cfg,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		window: window{rpm: cfg.RPM, tpm: cfg.TPM},
		held:   make(chan struct{}),
	}
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
	return Stats{
		Requests:       s.stats.requests.Load(),
		Succeeded:      s.stats.succeeded.Load(),
		RateLimited:    s.stats.rateLimited.Load(),
		ServerErrors:   s.stats.serverErrors.Load(),
		Overloaded:     s.stats.overloaded.Load(),
		Timeouts:       s.stats.timeouts.Load(),
		Resets:         s.stats.resets.Load(),
		Malformed:      s.stats.malformed.Load(),
		InvalidOutputs: s.stats.invalidOutputs.Load(),
		AuthErrors:     s.stats.authErrors.Load(),
	}
}

// Requests returns a copy of the recorded requests, in arrival order; nil
// unless Config.Record is on.
func (s *Server) Requests() []Recorded {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Recorded, len(s.recorded))
	copy(out, s.recorded)
	return out
}

// draw takes the next request's sequence number, fault and latency, in
// one step so that the draws follow the request order.
func (s *Server) draw() (seq int64, f fault, latency time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	u := s.rng.Float64()
	acc := 0.0
	for _, c := range s.cfg.Faults.list() {
		acc += c.frac
		if u < acc {
			f = c.kind
			break
		}
	}
	latency = s.cfg.Latency
	if span := s.cfg.LatencyMax - s.cfg.Latency; span > 0 {
		latency += time.Duration(s.rng.Int64N(int64(span) + 1))
	}
	return s.seq, f, latency
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

// admit applies the hidden rate limit at now and returns the window's
// state for the response headers.
func (s *Server) admit(now time.Time, tokens int) limitState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.window.admit(now, tokens)
}
