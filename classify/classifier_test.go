package classify

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// httpErr is an error as task/http and task/llm return them.
type httpErr struct {
	status    int
	code      string
	msg       string
	body      string
	requestID string
	advice    *bool // x-should-retry; nil when absent
}

func (e *httpErr) Error() string {
	if e.msg != "" {
		return e.msg
	}
	return fmt.Sprintf("POST https://api.example.com/v1/chat: %d", e.status)
}
func (e *httpErr) HTTPStatus() int      { return e.status }
func (e *httpErr) ProviderCode() string { return e.code }
func (e *httpErr) Stderr() string       { return e.body }
func (e *httpErr) RequestID() string    { return e.requestID }
func (e *httpErr) ShouldRetry() (retry, ok bool) {
	if e.advice == nil {
		return false, false
	}
	return *e.advice, true
}

// exitErr is an error as task/exec returns them.
type exitErr struct {
	code   int
	signal string
	stderr string
}

func (e *exitErr) Error() string {
	if e.signal != "" {
		return "signal: " + e.signal
	}
	return fmt.Sprintf("exit status %d", e.code)
}
func (e *exitErr) ExitCode() int  { return e.code }
func (e *exitErr) Signal() string { return e.signal }
func (e *exitErr) Stderr() string { return e.stderr }

// timeoutErr is a net.Error that timed out, as a custom transport returns.
type timeoutErr struct{}

func (timeoutErr) Error() string   { return "read deadline passed" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func status(n int) *httpErr               { return &httpErr{status: n} }
func statusCode(n int, c string) *httpErr { return &httpErr{status: n, code: c} }
func advice(b bool) *bool                 { return &b }

// wrapThreeDeep buries err the way layered Go code does.
func wrapThreeDeep(err error) error {
	return fmt.Errorf("a: %w", fmt.Errorf("b: %w", fmt.Errorf("c: %w", err)))
}

func opErr(errno syscall.Errno) error {
	return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", errno)}
}

func TestClassifyDefaults(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want Decision
	}{
		// Interruption and the attempt deadline.
		{"canceled run", context.Canceled, Decision{Canceled, "run canceled"}},
		{"attempt deadline", context.DeadlineExceeded, Decision{Retryable, "attempt deadline"}},
		{"canceled wins over deadline", errors.Join(context.DeadlineExceeded, context.Canceled), Decision{Canceled, "run canceled"}},
		{"canceled wins over the signal it caused", errors.Join(&exitErr{code: -1, signal: "killed"}, context.Canceled), Decision{Canceled, "run canceled"}},
		{"deadline wins over a cut body", errors.Join(io.ErrUnexpectedEOF, context.DeadlineExceeded), Decision{Retryable, "attempt deadline"}},

		// Marks.
		{"mark", WithClass(errors.New("template: no field simplified"), Item, "template"), Decision{Item, "marked: template"}},
		{"mark wins over status", WithClass(status(503), Fatal, "known bad"), Decision{Fatal, "marked: known bad"}},
		{"mark wins over canceled", WithClass(context.Canceled, Item, "template"), Decision{Item, "marked: template"}},
		{"mark without reason", WithClass(errors.New("x"), Invalid, ""), Decision{Invalid, "marked"}},
		{"unknown mark decides nothing", WithClass(status(503), Unknown, "nothing"), Decision{Retryable, "status 503"}},

		// x-should-retry.
		{"should retry true beats status 400", &httpErr{status: 400, advice: advice(true)}, Decision{Retryable, "x-should-retry: true"}},
		{"should retry true without status", &httpErr{advice: advice(true)}, Decision{Retryable, "x-should-retry: true"}},
		{"should retry false turns 503 into item", &httpErr{status: 503, advice: advice(false)}, Decision{Item, "x-should-retry: false"}},
		{"should retry false keeps 401 fatal", &httpErr{status: 401, advice: advice(false)}, Decision{Fatal, "status 401"}},
		{"should retry false keeps 400 item", &httpErr{status: 400, advice: advice(false)}, Decision{Item, "status 400"}},
		{"should retry false turns keyword into item", &httpErr{msg: "connection reset", advice: advice(false)}, Decision{Item, "x-should-retry: false"}},
		{"no advice leaves 503 retryable", &httpErr{status: 503}, Decision{Retryable, "status 503"}},

		// Statuses.
		{"408", status(408), Decision{Retryable, "status 408"}},
		{"409", status(409), Decision{Retryable, "status 409"}},
		{"425", status(425), Decision{Retryable, "status 425"}},
		{"429", status(429), Decision{Retryable, "status 429"}},
		{"500", status(500), Decision{Retryable, "status 500"}},
		{"502", status(502), Decision{Retryable, "status 502"}},
		{"503", status(503), Decision{Retryable, "status 503"}},
		{"504", status(504), Decision{Retryable, "status 504"}},
		{"529", status(529), Decision{Retryable, "status 529"}},
		{"other 5xx", status(507), Decision{Retryable, "status 507"}},
		{"401", status(401), Decision{Fatal, "status 401"}},
		{"402", status(402), Decision{Fatal, "status 402"}},
		{"403", status(403), Decision{Fatal, "status 403"}},
		{"bare 404 is the item's", status(404), Decision{Item, "status 404"}},
		{"400", status(400), Decision{Item, "status 400"}},
		{"413", status(413), Decision{Item, "status 413"}},
		{"422", status(422), Decision{Item, "status 422"}},
		{"other 4xx", status(418), Decision{Item, "status 418"}},
		{"status beats keyword", &httpErr{status: 400, msg: "timeout in template"}, Decision{Item, "status 400"}},
		{"3xx decides nothing", &httpErr{status: 302, msg: "redirect loop"}, Decision{Item, "no signal"}},
		{"3xx falls to keywords", &httpErr{status: 302, msg: "redirect timed out"}, Decision{Retryable, `keyword "timed out"`}},

		// Provider codes.
		{"openai quota", statusCode(429, "insufficient_quota"), Decision{Fatal, "status 429 code insufficient_quota"}},
		{"anthropic spend limit code", statusCode(429, "enforced_spend_limit_reached"), Decision{Fatal, "status 429 code enforced_spend_limit_reached"}},
		{"spend limit in message", &httpErr{status: 429, msg: "429: You have reached your Spend Limit for this month"}, Decision{Fatal, "status 429 spend limit"}},
		{"spend limit in body", &httpErr{status: 429, body: `{"error":{"message":"spend limit reached"}}`}, Decision{Fatal, "status 429 spend limit"}},
		{"request too large code", statusCode(429, "request_too_large"), Decision{Item, "status 429 code request_too_large"}},
		{"request too large message", &httpErr{status: 429, code: "tokens", msg: "Request too large for gpt-4o in organization org-x on tokens per min"}, Decision{Item, "status 429 request too large"}},
		// What OpenAI really sends: the rate-limit code on a request too
		// large, which must not be retried.
		{"request too large with the rate-limit code", &httpErr{status: 429, code: "rate_limit_exceeded", msg: "Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 50000."}, Decision{Item, "status 429 request too large"}},
		{"anthropic spend limit as a rate_limit_error", &httpErr{status: 429, code: "rate_limit_error", msg: "This request would exceed your organization's spend limit."}, Decision{Fatal, "status 429 spend limit"}},
		{"a plain rate limit stays retryable", statusCode(429, "rate_limit_exceeded"), Decision{Retryable, "status 429 code rate_limit_exceeded"}},
		{"rate-limit code without a status", statusCode(0, "rate_limit_error"), Decision{Retryable, "code rate_limit_error"}},
		{"rate limit exceeded", statusCode(429, "rate_limit_exceeded"), Decision{Retryable, "status 429 code rate_limit_exceeded"}},
		{"rate limit error", statusCode(429, "rate_limit_error"), Decision{Retryable, "status 429 code rate_limit_error"}},
		{"billing error beats 400", statusCode(400, "billing_error"), Decision{Fatal, "status 400 code billing_error"}},
		{"overloaded", statusCode(529, "overloaded_error"), Decision{Retryable, "status 529 code overloaded_error"}},
		{"authentication error", statusCode(401, "authentication_error"), Decision{Fatal, "status 401 code authentication_error"}},
		{"invalid api key", statusCode(401, "invalid_api_key"), Decision{Fatal, "status 401 code invalid_api_key"}},
		{"permission error", statusCode(403, "permission_error"), Decision{Fatal, "status 403 code permission_error"}},
		{"not found error", statusCode(404, "not_found_error"), Decision{Fatal, "status 404 code not_found_error"}},
		{"model not found", statusCode(404, "model_not_found"), Decision{Fatal, "status 404 code model_not_found"}},
		{"invalid request", statusCode(400, "invalid_request_error"), Decision{Item, "status 400 code invalid_request_error"}},
		{"context length", statusCode(400, "context_length_exceeded"), Decision{Item, "status 400 code context_length_exceeded"}},
		{"content filter", statusCode(400, "content_filter"), Decision{Item, "status 400 code content_filter"}},
		{"status overrides a generic code: 404", statusCode(404, "invalid_request_error"), Decision{Item, "status 404 code invalid_request_error"}},
		{"status overrides a generic code: 500", statusCode(500, "invalid_request_error"), Decision{Retryable, "status 500 code invalid_request_error"}},
		{"unknown code follows status", statusCode(503, "api_error"), Decision{Retryable, "status 503 code api_error"}},
		{"decisive code without status", &httpErr{code: "overloaded_error"}, Decision{Retryable, "code overloaded_error"}},
		{"generic code without status", &httpErr{code: "context_length_exceeded"}, Decision{Item, "code context_length_exceeded"}},
		{"unknown code without status", &httpErr{code: "mystery", msg: "odd"}, Decision{Item, "no signal"}},

		// Exit codes and signals.
		{"exit 75", &exitErr{code: 75}, Decision{Retryable, "exit 75"}},
		{"exit 124", &exitErr{code: 124}, Decision{Retryable, "exit 124"}},
		{"exit 126", &exitErr{code: 126}, Decision{Fatal, "exit 126"}},
		{"exit 127", &exitErr{code: 127}, Decision{Fatal, "exit 127"}},
		{"exit 1", &exitErr{code: 1}, Decision{Item, "exit 1"}},
		{"exit 2", &exitErr{code: 2}, Decision{Item, "exit 2"}},
		{"signal killed", &exitErr{code: -1, signal: "killed"}, Decision{Retryable, "signal killed"}},
		{"signal terminated", &exitErr{code: -1, signal: "terminated"}, Decision{Retryable, "signal terminated"}},
		{"exit 0 decides nothing", &exitErr{code: 0}, Decision{Item, "no signal"}},
		{"status beats exit", errors.Join(status(503), &exitErr{code: 127}), Decision{Retryable, "status 503"}},

		// Go's own errors.
		{"ECONNRESET", opErr(syscall.ECONNRESET), Decision{Retryable, "ECONNRESET"}},
		{"ECONNREFUSED", opErr(syscall.ECONNREFUSED), Decision{Retryable, "ECONNREFUSED"}},
		{"ECONNABORTED", opErr(syscall.ECONNABORTED), Decision{Retryable, "ECONNABORTED"}},
		{"EPIPE", opErr(syscall.EPIPE), Decision{Retryable, "EPIPE"}},
		{"EHOSTUNREACH", opErr(syscall.EHOSTUNREACH), Decision{Retryable, "EHOSTUNREACH"}},
		{"ENETUNREACH", opErr(syscall.ENETUNREACH), Decision{Retryable, "ENETUNREACH"}},
		{"net.Error timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, Decision{Retryable, "net.Error timeout"}},
		{"custom net.Error timeout", timeoutErr{}, Decision{Retryable, "net.Error timeout"}},
		{"DNS not found", &net.DNSError{Err: "no such host", Name: "api.nope", IsNotFound: true}, Decision{Fatal, "DNS not found"}},
		{"DNS timeout", &net.DNSError{Err: "i/o timeout", Name: "api.example.com", IsTimeout: true}, Decision{Retryable, "DNS timeout"}},
		{"DNS temporary", &net.DNSError{Err: "server misbehaving", Name: "api.example.com", IsTemporary: true}, Decision{Retryable, "DNS temporary"}},
		{"EOF from transport", &url.Error{Op: "Post", URL: "http://127.0.0.1/v1", Err: io.EOF}, Decision{Retryable, "EOF from transport"}},
		{"unexpected EOF", io.ErrUnexpectedEOF, Decision{Retryable, "unexpected EOF"}},
		{"bare EOF is only a keyword", io.EOF, Decision{Retryable, `keyword "EOF"`}},
		{"exec not found", &exec.Error{Name: "reviewer", Err: exec.ErrNotFound}, Decision{Fatal, "command not found"}},
		{"exec dot", &exec.Error{Name: "reviewer", Err: exec.ErrDot}, Decision{Fatal, "command not runnable"}},
		{"fork/exec ENOENT", &os.PathError{Op: "fork/exec", Path: "./review.sh", Err: syscall.ENOENT}, Decision{Fatal, "command not found"}},
		{"fork/exec EACCES", &os.PathError{Op: "fork/exec", Path: "./review.sh", Err: syscall.EACCES}, Decision{Fatal, "command not executable"}},
		{"fork/exec ENOEXEC", &os.PathError{Op: "fork/exec", Path: "./data.bin", Err: syscall.ENOEXEC}, Decision{Fatal, "command not executable"}},
		{"ENOENT outside exec is not fatal", &os.PathError{Op: "open", Path: "in.txt", Err: syscall.ENOENT}, Decision{Item, "no signal"}},

		// Keywords.
		{"keyword timeout", errors.New("upstream Timeout"), Decision{Retryable, `keyword "timeout"`}},
		{"keyword timed out", errors.New("operation TIMED OUT"), Decision{Retryable, `keyword "timed out"`}},
		{"keyword connection reset", errors.New("Connection Reset while reading"), Decision{Retryable, `keyword "connection reset"`}},
		{"keyword connection refused", errors.New("dial: connection refused"), Decision{Retryable, `keyword "connection refused"`}},
		{"keyword reset by peer", errors.New("stream reset by peer"), Decision{Retryable, `keyword "reset by peer"`}},
		{"keyword broken pipe", errors.New("write: broken pipe"), Decision{Retryable, `keyword "broken pipe"`}},
		{"keyword temporarily unavailable", errors.New("resource temporarily unavailable"), Decision{Retryable, `keyword "temporarily unavailable"`}},
		{"keyword try again", errors.New("server busy, try again later"), Decision{Retryable, `keyword "try again"`}},
		{"keyword EOF", errors.New("read body: unexpected eof"), Decision{Retryable, `keyword "EOF"`}},
		{"EOF inside a word is no keyword", errors.New("geofence rejected the point"), Decision{Item, "no signal"}},

		// Nothing to go on.
		{"no signal", errors.New("template: unknown field"), Decision{Item, "no signal"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%q) = %v, want %v", tt.err, got, tt.want)
			}
			deep := wrapThreeDeep(tt.err)
			if got := Classify(deep); got != tt.want {
				t.Errorf("Classify of the error wrapped three deep (%q) = %v, want %v", deep, got, tt.want)
			}
		})
	}
}

func TestClassifyNilIsZeroDecision(t *testing.T) {
	if got := Classify(nil); got != (Decision{}) {
		t.Errorf("Classify(nil) = %#v, want the zero Decision", got)
	}
	c := Classifier{Rules: []Rule{{Name: "all", Message: mustRegexp(t, "."), Class: Fatal}}}
	if got := c.Classify(nil); got != (Decision{}) {
		t.Errorf("Classify(nil) with rules = %#v, want the zero Decision", got)
	}
}

func TestClassifyHotPathDoesNotAllocate(t *testing.T) {
	err := wrapThreeDeep(status(503))
	allocs := testing.AllocsPerRun(100, func() {
		if d := Classify(err); d.Class != Retryable {
			t.Fatalf("Classify = %v, want retryable", d)
		}
	})
	if allocs != 0 {
		t.Errorf("classifying a status error allocated %v times per call, want 0", allocs)
	}
}

func BenchmarkClassify(b *testing.B) {
	err := wrapThreeDeep(status(429))
	b.ReportAllocs()
	for b.Loop() {
		Classify(err)
	}
}

func BenchmarkClassifyWithRules(b *testing.B) {
	quota, err := NewRule("quota", "quota exceeded", nil, nil, nil, "fatal")
	if err != nil {
		b.Fatal(err)
	}
	c := Classifier{Rules: []Rule{quota}}
	e := wrapThreeDeep(status(429))
	b.ReportAllocs()
	for b.Loop() {
		c.Classify(e)
	}
}

func TestAnthropicCreditBalanceTooLowIsFatal(t *testing.T) {
	// Anthropic's empty wallet is a 400 invalid_request_error that only its
	// message tells apart from a bad request: classified item, it ran
	// through every item of the job, and --retry-failures=retryable
	// missed them all.
	const body = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CZ47RMLnx1JoJXRrzzSde"}`
	for _, err := range []error{
		&httpErr{status: 400, code: "invalid_request_error", msg: "400 invalid_request_error: Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.", body: body},
		&httpErr{status: 400, code: "invalid_request_error", body: body},
	} {
		if d := Classify(err); d != (Decision{Fatal, "status 400 credit balance too low"}) {
			t.Errorf("Classify(%q) = %v, want fatal: no item can pass until credits are bought", err.Error(), d)
		}
	}
	if d := Classify(&httpErr{status: 400, code: "invalid_request_error", msg: "400 invalid_request_error: messages: at least one message is required"}); d.Class != Item {
		t.Errorf("a plain bad request is %v, want item", d)
	}
}

func TestNetworkAndResolverFailuresAreRetryable(t *testing.T) {
	// The textbook transient errors fell through to item ("no signal") and
	// were never retried.
	for _, tc := range []struct {
		msg, reason string
	}{
		{"OSError: [Errno 101] Network is unreachable", `keyword "network"`},
		{"requests.exceptions.ConnectionError: HTTPSConnectionPool(host='api.openai.com', port=443): Max retries exceeded (Caused by NewConnectionError(...: Failed to establish a new connection: [Errno 101] Network is unreachable'))", `keyword "network"`},
		{"ssh: connect to host build-7 port 22: No route to host (host unreachable)", `keyword "unreachable"`},
		{"Error: getaddrinfo EAI_AGAIN api.anthropic.com", `keyword "EAI_AGAIN"`},
		{"socket.gaierror: [Errno -3] Temporary failure in name resolution", `keyword "temporary failure"`},
		{"BlockingIOError: [Errno 11] Resource temporarily unavailable", `keyword "temporarily unavailable"`},
		{"fetch failed: network error", `keyword "network"`},
	} {
		if d := Classify(errors.New(tc.msg)); d != (Decision{Retryable, tc.reason}) {
			t.Errorf("Classify(%q) = %v, want retryable (%s)", tc.msg, d, tc.reason)
		}
	}
	for _, msg := range []string{
		"networkx.exception.NetworkXError: Graph has no nodes",
		"KeyError: 'network_id'",
	} {
		if d := Classify(errors.New(msg)); d.Class != Item {
			t.Errorf("Classify(%q) = %v, want item: the word must stand alone", msg, d)
		}
	}
}

// TestOtherwiseClassesOnlyErrorsWithoutSignal: Otherwise decides an error
// that says nothing, and nothing an error's signal or a rule decides.
func TestOtherwiseClassesOnlyErrorsWithoutSignal(t *testing.T) {
	c := Classifier{Otherwise: Retryable}
	tests := []struct {
		name string
		err  error
		want Decision
	}{
		{"no signal", errors.New("boom"), Decision{Retryable, "no signal"}},
		{"a status still decides", status(401), Decision{Fatal, "status 401"}},
		{"a mark still decides", WithClass(errors.New("boom"), Item, "template"), Decision{Item, "marked: template"}},
		{"a keyword still decides", errors.New("connection refused"), Decision{Retryable, `keyword "connection refused"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.Classify(tt.err); got != tt.want {
				t.Errorf("Classify(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
	if got := (Classifier{}).Classify(errors.New("boom")); got != (Decision{Item, "no signal"}) {
		t.Errorf("the zero Classifier: %v, want item: no signal", got)
	}
}
