package classify

import "testing"

// TestNoRouteToHostInStderrIsRetried: issue 41 #15. "No route to host"
// alone (without "(host unreachable)" after it) matched no keyword, and a
// command that met it failed as item after one attempt.
func TestNoRouteToHostInStderrIsRetried(t *testing.T) {
	for _, stderr := range []string{
		"ssh: connect to host build-7 port 22: No route to host\n",
		"rsync: [Receiver] failed to connect to mirror.example.org (10.0.0.9): No route to host (113)\nrsync error: error in socket IO (code 10) at clientserver.c(139) [Receiver=3.2.7]\n",
		"curl: (7) Failed to connect to 10.0.0.9 port 443 after 3 ms: Couldn't connect to server: No route to host\n",
	} {
		if got := Classify(&exitErr{code: 1, stderr: stderr}); got.Class != Retryable {
			t.Errorf("stderr %q classified %v, want retryable", stderr, got)
		}
	}
}

// TestServiceUnavailableInStderrIsRetried: issue 41 #15. "503 Service
// Unavailable" named a status the HTTP tasks retry, but stderr's words
// knew no status and the command failed as item.
func TestServiceUnavailableInStderrIsRetried(t *testing.T) {
	tests := []struct{ stderr, reason string }{
		{"fetch.sh: GET https://api.example.com/v1/items: 503 Service Unavailable\n", "exit 1, stderr status 503"},
		{"curl: (22) The requested URL returned error: 503\n", "exit 1, stderr status 503"},
		{"--2026-12-01 20:01:07--  https://mirror.example.org/a.tar\nHTTP request sent, awaiting response... 503 Service Unavailable\n2026-12-01 20:01:07 ERROR 503: Service Unavailable.\n", "exit 1, stderr status 503"},
		{"error: upstream answered HTTP/1.1 502 Bad Gateway\n", "exit 1, stderr status 502"},
	}
	for _, tt := range tests {
		want := Decision{Class: Retryable, Reason: tt.reason}
		if got := Classify(&exitErr{code: 1, stderr: tt.stderr}); got != want {
			t.Errorf("stderr %q classified %v, want %v", tt.stderr, got, want)
		}
	}
	// The same rule makes the setup errors fatal, as a response's status is.
	if got := Classify(&exitErr{code: 1, stderr: "upload.sh: PUT https://x/y: 403 Forbidden\n"}); got != (Decision{Fatal, "exit 1, stderr status 403"}) {
		t.Errorf("403 Forbidden in stderr classified %v, want fatal (exit 1, stderr status 403)", got)
	}
}

// TestAssertionTextWithANetworkWordIsNotRetried: issue 41 #15. A failed
// assertion whose text held "unreachable" matched the keyword and was
// retried, as a test suite whose test names a network word would be
// forever. Test failures and their assertion text decide nothing.
func TestAssertionTextWithANetworkWordIsNotRetried(t *testing.T) {
	for name, stderr := range map[string]string{
		"python assertion":               pyTraceback("AssertionError: expected the host to be unreachable"),
		"python assertion, no traceback": "AssertionError: state is 'unreachable', want 'ok'\n",
		"assert statement in a frame": `Traceback (most recent call last):
  File "check.py", line 9, in <module>
    assert probe(host) != "unreachable", "network unreachable: connection refused"
AssertionError: network unreachable: connection refused
`,
		"pytest":              "E       AssertionError: assert 'connection refused' == 'ok'\nFAILED tests/test_net.py::test_timeout - AssertionError: assert 'connection refused' == 'ok'\n",
		"unittest":            "FAIL: test_retry_on_timeout (tests.test_client.ClientTest.test_retry_on_timeout)\n",
		"go test":             "    client_test.go:42: got error \"dial tcp: connection refused\", want nil\n--- FAIL: TestDialTimeout (0.00s)\nFAIL\tgithub.com/x/client\t0.012s\n",
		"node assert":         "AssertionError [ERR_ASSERTION]: Expected values to be strictly equal:\n'ETIMEDOUT' !== 'ok'\n",
		"rust assert":         "thread 'main' panicked at src/net.rs:12:5:\nassertion `left == right` failed: connection reset\n",
		"rust unreachable!()": "thread 'main' panicked at src/main.rs:7:14:\ninternal error: entered unreachable code\n",
	} {
		if got := Classify(&exitErr{code: 1, stderr: stderr}); got != (Decision{Item, "exit 1"}) {
			t.Errorf("%s: classified %v, want item (exit 1)\nstderr:\n%s", name, got, stderr)
		}
	}
}

// TestSignalPhrasesMatchWhole: the classic network words decide within
// their phrases, as whole words.
func TestSignalPhrasesMatchWhole(t *testing.T) {
	tests := []struct {
		stderr string
		want   Decision
	}{
		{"review: read: Connection reset by peer\n", Decision{Retryable, `exit 1, stderr keyword "connection reset"`}},
		{"psql: error: connection to server at \"db\" (10.0.0.5), port 5432 failed: Connection refused\n", Decision{Retryable, `exit 1, stderr keyword "connection refused"`}},
		{"fetch failed: network error\n", Decision{Retryable, `exit 1, stderr keyword "network error"`}},
		{"Error: socket hang up\n", Decision{Retryable, `exit 1, stderr keyword "socket hang up"`}},
		{"dial tcp 10.0.0.5:443: i/o timeout\n", Decision{Retryable, `exit 1, stderr keyword "timeout"`}},
		{"password reset token expired\n", Decision{Item, "exit 1"}},
		{"networkx.exception.NetworkXError: Graph has no nodes\n", Decision{Item, "exit 1"}},
		{"warning: unreachable pattern\n", Decision{Item, "exit 1"}},
		{"read_timeout must be set\n", Decision{Item, "exit 1"}},
	}
	for _, tt := range tests {
		if got := Classify(&exitErr{code: 1, stderr: tt.stderr}); got != tt.want {
			t.Errorf("stderr %q classified %v, want %v", tt.stderr, got, tt.want)
		}
	}
}

// TestRulesStillComeBeforeStderrSignals: a user's rule decides before any
// exception line does.
func TestRulesStillComeBeforeStderrSignals(t *testing.T) {
	r, err := NewRule("local overload", `openai\.RateLimitError`, nil, nil, nil, "fatal")
	if err != nil {
		t.Fatal(err)
	}
	c := Classifier{Rules: []Rule{r}}
	e := &exitErr{code: 1, stderr: pyTraceback("openai.RateLimitError: Error code: 429 - {'error': {'code': 'rate_limit_exceeded'}}")}
	if got := c.Classify(e); got != (Decision{Fatal, `rule "local overload"`}) {
		t.Errorf("classified %v, want the rule's fatal", got)
	}
	if got := Classify(e); got.Class != Retryable {
		t.Errorf("without the rule: %v, want retryable", got)
	}
}

// TestAnExceptionRaisedFromAnotherIsClassifiedByItsCause: a script that
// wraps the SDK's error ("raise RuntimeError(...) from err", or
// tenacity's RetryError after its own retries) printed the cause's
// exception in the traceback above, and the unknown wrapper decided item.
func TestAnExceptionRaisedFromAnotherIsClassifiedByItsCause(t *testing.T) {
	chained := func(cause, sep, last string) string {
		return pyTraceback(cause) + "\n" + sep + "\n\n" + pyTraceback(last)
	}
	direct := "The above exception was the direct cause of the following exception:"
	during := "During handling of the above exception, another exception occurred:"
	tests := []struct {
		name   string
		stderr string
		want   Decision
	}{
		{"tenacity", chained("openai.APIConnectionError: Connection error.", direct,
			"tenacity.RetryError: RetryError[<Future at 0x7f1b2c3d4e50 state=finished raised APIConnectionError>]"),
			Decision{Retryable, "exit 1, stderr exception openai.APIConnectionError (cause of tenacity.RetryError)"}},
		{"raise from", chained("openai.AuthenticationError: Error code: 401 - {'error': {'code': 'invalid_api_key'}}", direct,
			"RuntimeError: review failed"),
			Decision{Fatal, "exit 1, stderr exception openai.AuthenticationError, status 401 code invalid_api_key (cause of RuntimeError)"}},
		{"two causes deep", chained("httpx.ConnectError: [Errno 111] Connection refused", direct,
			"openai.APIStatusError: wrapped") + "\n" + direct + "\n\n" + pyTraceback("RuntimeError: review failed"),
			Decision{Retryable, "exit 1, stderr exception httpx.ConnectError (cause of RuntimeError)"}},
		{"a known last exception decides itself", chained("httpx.ConnectError: [Errno 111] Connection refused", direct,
			"openai.BadRequestError: Error code: 400 - {'error': {'code': 'context_length_exceeded'}}"),
			Decision{Item, "exit 1, stderr exception openai.BadRequestError, status 400 code context_length_exceeded"}},
		{"a plain last exception decides nothing", chained("httpx.ConnectError: [Errno 111] Connection refused", direct,
			"ValueError: bad reply"),
			Decision{Item, "exit 1"}},
		{"an error in a handler is no cause", chained("httpx.ConnectError: [Errno 111] Connection refused", during,
			"RuntimeError: review failed"),
			Decision{Item, "exit 1"}},
		{"a cause that is a test failure", chained("AssertionError: connection refused", direct,
			"RuntimeError: review failed"),
			Decision{Item, "exit 1"}},
	}
	for _, tt := range tests {
		if got := Classify(&exitErr{code: 1, stderr: tt.stderr}); got != tt.want {
			t.Errorf("%s: classified %v, want %v\nstderr:\n%s", tt.name, got, tt.want, tt.stderr)
		}
	}
}
