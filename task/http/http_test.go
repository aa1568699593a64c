package http

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// StatusError speaks every signal interface that applies to it.
var (
	_ classify.StatusCoder   = (*StatusError)(nil)
	_ classify.StderrCarrier = (*StatusError)(nil)
	_ classify.ShouldRetrier = (*StatusError)(nil)
	_ classify.RequestIDer   = (*StatusError)(nil)
	_ retry.Hinter           = (*StatusError)(nil)
)

func mustNew(t *testing.T, cfg Config) *Task {
	t.Helper()
	tk, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tk
}

// respond returns a server answering every request with status, headers
// and body.
func respond(t *testing.T, status int, header map[string]string, body string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunNon2xxIsStatusError(t *testing.T) {
	tests := []struct {
		name        string
		status      int
		header      map[string]string
		body        string
		hint        time.Duration
		shouldRetry *bool
		requestID   string
		message     string
	}{
		{"rate limited with a hint", 429, map[string]string{"Retry-After": "7", "X-Request-Id": "req_1"}, `{"error":"slow down"}`, 7 * time.Second, nil, "req_1", `http: 429 Too Many Requests: {"error":"slow down"}`},
		{"overloaded, do not retry", 503, map[string]string{"X-Should-Retry": "false", "Request-Id": "req_2"}, "busy\nsecond line", 0, new(false), "req_2", "http: 503 Service Unavailable: busy"},
		{"bad request, retry anyway", 400, map[string]string{"X-Should-Retry": "true", "Retry-After-Ms": "250.5"}, "", 250500 * time.Microsecond, new(true), "", "http: 400 Bad Request"},
		{"not modified", 304, nil, "", 0, nil, "", "http: 304 Not Modified"},
		{"unknown status", 599, nil, "odd", 0, nil, "", "http: 599: odd"},
		// A proxy's HTML page was recorded as "<!DOCTYPE html>", its first line.
		{"a proxy's HTML page is recorded by its text", 502, map[string]string{"Content-Type": "text/html; charset=utf-8"},
			"<!DOCTYPE html>\n<html><head><title>502 Bad Gateway</title><style>h1{color:red}</style></head>\n<body><h1>Bad Gateway</h1><p>upstream connect error &amp; reset</p><hr><center>nginx</center></body></html>\n",
			0, nil, "", "http: 502 Bad Gateway: 502 Bad Gateway Bad Gateway upstream connect error & reset nginx"},
		{"a page without its content type too", 503, nil, "<html><body><p>Service down for maintenance</p></body></html>", 0, nil, "", "http: 503 Service Unavailable: Service down for maintenance"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := respond(t, tt.status, tt.header, tt.body)
			_, err := mustNew(t, Config{URL: srv.URL}).Run(t.Context(), task.Item{})
			se, ok := errors.AsType[*StatusError](err)
			if !ok {
				t.Fatalf("error %v (%T) is not a *StatusError", err, err)
			}
			if se.HTTPStatus() != tt.status || se.Status != tt.status {
				t.Errorf("status %d, want %d", se.HTTPStatus(), tt.status)
			}
			if se.Stderr() != tt.body {
				t.Errorf("Stderr() = %q, want the body %q", se.Stderr(), tt.body)
			}
			if se.RetryAfter() != tt.hint {
				t.Errorf("RetryAfter() = %v, want %v", se.RetryAfter(), tt.hint)
			}
			retry, ok := se.ShouldRetry()
			if ok != (tt.shouldRetry != nil) || ok && retry != *tt.shouldRetry {
				t.Errorf("ShouldRetry() = %v, %v; want %v", retry, ok, tt.shouldRetry)
			}
			if se.RequestID() != tt.requestID {
				t.Errorf("RequestID() = %q, want %q", se.RequestID(), tt.requestID)
			}
			if err.Error() != tt.message {
				t.Errorf("Error() = %q, want %q", err, tt.message)
			}
		})
	}
}

func TestRunCapsTheErrorBody(t *testing.T) {
	big := strings.Repeat("e", MaxErrorBody+1000)
	srv := respond(t, 500, nil, big)
	_, err := mustNew(t, Config{URL: srv.URL}).Run(t.Context(), task.Item{})
	se, ok := errors.AsType[*StatusError](err)
	if !ok {
		t.Fatalf("error %v is not a *StatusError", err)
	}
	if len(se.Body) != MaxErrorBody {
		t.Errorf("body kept %d bytes, want the cap %d", len(se.Body), MaxErrorBody)
	}
	if len(err.Error()) > 300 {
		t.Errorf("Error() is %d bytes long; the first line should be cut", len(err.Error()))
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	date := func(t time.Time) string { return t.Format(nethttp.TimeFormat) }
	tests := []struct {
		name   string
		header map[string]string
		want   time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "30"}, 30 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "1.5"}, 1500 * time.Millisecond},
		{"seconds with spaces", map[string]string{"Retry-After": " 2 "}, 2 * time.Second},
		{"milliseconds", map[string]string{"Retry-After-Ms": "1200"}, 1200 * time.Millisecond},
		{"fractional milliseconds", map[string]string{"Retry-After-Ms": "0.25"}, 250 * time.Microsecond},
		{"milliseconds win over seconds", map[string]string{"Retry-After-Ms": "100", "Retry-After": "9"}, 100 * time.Millisecond},
		{"bad milliseconds fall back to seconds", map[string]string{"Retry-After-Ms": "soon", "Retry-After": "9"}, 9 * time.Second},
		{"date from now", map[string]string{"Retry-After": date(now.Add(90 * time.Second))}, 90 * time.Second},
		{"date from the response's Date", map[string]string{"Retry-After": date(now.Add(time.Hour + 5*time.Second)), "Date": date(now.Add(time.Hour))}, 5 * time.Second},
		{"RFC 850 date", map[string]string{"Retry-After": now.Add(time.Minute).Format(time.RFC850)}, time.Minute},
		{"past date", map[string]string{"Retry-After": date(now.Add(-time.Minute))}, 0},
		{"negative seconds", map[string]string{"Retry-After": "-5"}, 0},
		{"NaN", map[string]string{"Retry-After-Ms": "NaN"}, 0},
		{"garbage", map[string]string{"Retry-After": "tomorrow-ish"}, 0},
		{"huge saturates", map[string]string{"Retry-After": "1e30"}, time.Duration(1<<63 - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := nethttp.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			if got := parseRetryAfter(h, now); got != tt.want {
				t.Errorf("parseRetryAfter(%v) = %v, want %v", tt.header, got, tt.want)
			}
		})
	}
}

func TestShouldRetryHeader(t *testing.T) {
	tests := []struct {
		value  string
		retry  bool
		advice bool
	}{
		{"true", true, true},
		{"TRUE", true, true},
		{"false", false, true},
		{" false ", false, true},
		{"", false, false},
		{"maybe", false, false},
		{"1", false, false},
	}
	for _, tt := range tests {
		resp := &nethttp.Response{StatusCode: 500, Header: nethttp.Header{}}
		if tt.value != "" {
			resp.Header.Set("X-Should-Retry", tt.value)
		}
		retry, ok := newStatusError(resp, nil, time.Time{}).ShouldRetry()
		if retry != tt.retry || ok != tt.advice {
			t.Errorf("x-should-retry %q: ShouldRetry() = %v, %v; want %v, %v", tt.value, retry, ok, tt.retry, tt.advice)
		}
	}
}

// echoServer answers with the request it received, as JSON.
func echoServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		body, _ := io.ReadAll(r.Body)
		json.NewEncoder(w).Encode(map[string]string{
			"method": r.Method,
			"path":   r.URL.Path,
			"query":  r.URL.RawQuery,
			"host":   r.Host,
			"auth":   r.Header.Get("Authorization"),
			"type":   r.Header.Get("Content-Type"),
			"body":   string(body),
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunRendersTemplates(t *testing.T) {
	srv := echoServer(t)
	tk := mustNew(t, Config{
		URL:     srv.URL + "/items/{{.id}}?q={{.q | urlquery}}&idx={{.idx}}",
		Headers: map[string]string{"Authorization": "Bearer {{.token}}", "Content-Type": "application/json", "Host": "api.example"},
		Body:    `{"text": {{json .text}}, "feedback": {{json .feedback}}}`,
		Output:  OutputJSON,
	})
	item := task.Item{Idx: 4, ID: "a1", Fields: map[string]any{"q": "a b&c", "token": "t0k", "text": "say \"hi\"\n"},
		Feedback: &task.Feedback{Message: "too short", PreviousOutput: "hi"}}
	res, err := tk.Run(t.Context(), item)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got map[string]string
	if err := json.Unmarshal(res.Output, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"method": "POST", // Body set, no Method
		"path":   "/items/a1",
		"query":  "q=a+b%26c&idx=4",
		"host":   "api.example",
		"auth":   "Bearer t0k",
		"type":   "application/json",
		"body":   `{"text": "say \"hi\"\n", "feedback": "too short"}`,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("server saw %s %q, want %q", k, got[k], v)
		}
	}
}

func TestRunMethod(t *testing.T) {
	srv := echoServer(t)
	for _, tt := range []struct{ method, body, want string }{
		{"", "", "GET"},
		{"", "x", "POST"},
		{"put", "x", "PUT"},
		{"DELETE", "", "DELETE"},
	} {
		res, err := mustNew(t, Config{Method: tt.method, URL: srv.URL, Body: tt.body, Output: OutputJSON}).Run(t.Context(), task.Item{})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		var got map[string]string
		_ = json.Unmarshal(res.Output, &got)
		if got["method"] != tt.want {
			t.Errorf("method %q with body %q sent %s, want %s", tt.method, tt.body, got["method"], tt.want)
		}
	}
}

func TestRunTemplateErrorsAreItemErrors(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string // in the message
	}{
		{"url field missing", Config{URL: "http://127.0.0.1/{{.nope}}"}, "nope"},
		{"body field missing", Config{URL: "http://127.0.0.1/", Body: "{{.nope}}"}, "nope"},
		{"header field missing", Config{URL: "http://127.0.0.1/", Headers: map[string]string{"X-A": "{{.nope}}"}}, "nope"},
		{"url does not parse", Config{URL: "http://127.0.0.1/{{.bad}}"}, "invalid"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := mustNew(t, tt.cfg).Run(t.Context(), task.Item{Fields: map[string]any{"bad": "%zz"}})
			ce, ok := errors.AsType[*classify.Error](err)
			if !ok || ce.Class != classify.Item {
				t.Fatalf("error %v is not marked item", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not mention %q", err, tt.want)
			}
		})
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no url", Config{}, "url is empty"},
		{"bad url template", Config{URL: "{{.x"}, "url"},
		{"bad body template", Config{URL: "http://x", Body: "{{end}}"}, "body"},
		{"bad header template", Config{URL: "http://x", Headers: map[string]string{"Authorization": "{{nofunc}}"}}, "headers[Authorization]"},
		{"bad header name", Config{URL: "http://x", Headers: map[string]string{"X A": "v"}}, `"X A"`},
		{"bad method", Config{URL: "http://x", Method: "GET /"}, `invalid method "GET /"`},
		{"bad output", Config{URL: "http://x", Output: "xml"}, `output "xml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error = %v, want one containing %q", err, tt.want)
			}
		})
	}
}

func TestRunOutput(t *testing.T) {
	tests := []struct {
		name    string
		output  string
		body    string
		want    string
		invalid bool
	}{
		{"text is the body byte for byte", OutputText, "line <1>\n", `"line <1>\n"`, false},
		{"text empty", "", "", `""`, false},
		{"json compacted", OutputJSON, "{ \"a\" : [ 1 ] }\n", `{"a":[1]}`, false},
		{"json not json", OutputJSON, "<html>", "", true},
		{"json empty", OutputJSON, "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := respond(t, 200, nil, tt.body)
			res, err := mustNew(t, Config{URL: srv.URL, Output: tt.output}).Run(t.Context(), task.Item{})
			if tt.invalid {
				oe, ok := errors.AsType[*task.OutputError](err)
				if !ok {
					t.Fatalf("error %v (output %s): want a *task.OutputError", err, res.Output)
				}
				if oe.Output != tt.body {
					t.Errorf("OutputError.Output = %q, want the body %q", oe.Output, tt.body)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Output) != tt.want {
				t.Errorf("output %s, want %s", res.Output, tt.want)
			}
		})
	}
}

// resetServer accepts requests and resets their connections.
func resetServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		conn, _, err := w.(nethttp.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		conn.(*net.TCPConn).SetLinger(0) // close sends RST
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestRunConnectionResetIsReachable(t *testing.T) {
	srv := resetServer(t)
	_, err := mustNew(t, Config{URL: srv.URL}).Run(t.Context(), task.Item{})
	if err == nil {
		t.Fatal("Run succeeded against a server that resets")
	}
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("error %v: neither syscall.ECONNRESET nor EOF is reachable with errors.Is", err)
	}
	if _, ok := errors.AsType[*StatusError](err); ok {
		t.Errorf("a reset became a *StatusError: %v", err)
	}
}

// The default client is net/http's: it makes at most 10 requests, so it
// follows 9 redirects and refuses the 10th.
func TestRunDefaultClientStopsRedirectChains(t *testing.T) {
	var srv *httptest.Server
	srv = httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		var n int
		fmt.Sscan(strings.TrimPrefix(r.URL.Path, "/"), &n)
		if n == 0 {
			io.WriteString(w, "arrived")
			return
		}
		nethttp.Redirect(w, r, fmt.Sprintf("%s/%d", srv.URL, n-1), nethttp.StatusFound)
	}))
	t.Cleanup(srv.Close)
	tk := mustNew(t, Config{URL: srv.URL + "/{{.hops}}"})
	if _, err := tk.Run(t.Context(), task.Item{Fields: map[string]any{"hops": 9}}); err != nil {
		t.Errorf("9 redirects: %v", err)
	}
	if _, err := tk.Run(t.Context(), task.Item{Fields: map[string]any{"hops": 10}}); err == nil || !strings.Contains(err.Error(), "stopped after 10 redirects") {
		t.Errorf("10 redirects: error %v, want the client to stop", err)
	}
}

// roundTripFunc is an http.RoundTripper from a function, for tests that
// need no network.
type roundTripFunc func(*nethttp.Request) (*nethttp.Response, error)

func (f roundTripFunc) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) { return f(r) }

// hang is a transport whose requests never get an answer.
var hang = roundTripFunc(func(r *nethttp.Request) (*nethttp.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
})

func TestRunTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := mustNew(t, Config{URL: "http://api.example/", Timeout: 30 * time.Second, Client: &nethttp.Client{Transport: hang}})
		start := time.Now()
		_, err := tk.Run(t.Context(), task.Item{})
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v does not match context.DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 30*time.Second {
			t.Errorf("gave up after %v, want the 30s timeout", took)
		}
	})
}

func TestRunCanceled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		_, err := mustNew(t, Config{URL: "http://api.example/", Client: &nethttp.Client{Transport: hang}}).Run(ctx, task.Item{})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("error %v does not match context.Canceled", err)
		}
	})
}

func TestClassifierReadsTheCarriedSignals(t *testing.T) {
	tests := []struct {
		name   string
		status int
		header map[string]string
		body   string
		want   classify.Class
	}{
		{"429 rate limit", 429, map[string]string{"Retry-After": "1"}, "", classify.Retryable},
		{"401", 401, nil, "", classify.Fatal},
		{"400", 400, nil, "", classify.Item},
		{"503", 503, nil, "", classify.Retryable},
		{"503 with x-should-retry false", 503, map[string]string{"X-Should-Retry": "false"}, "", classify.Item},
		{"409 with x-should-retry true", 409, map[string]string{"X-Should-Retry": "true"}, "", classify.Retryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := respond(t, tt.status, tt.header, tt.body)
			_, err := mustNew(t, Config{URL: srv.URL}).Run(t.Context(), task.Item{})
			if d := classify.Classify(err); d.Class != tt.want {
				t.Errorf("%v classified %v, want %v", err, d, tt.want)
			}
		})
	}
	t.Run("connection reset", func(t *testing.T) {
		_, err := mustNew(t, Config{URL: resetServer(t).URL}).Run(t.Context(), task.Item{})
		if d := classify.Classify(err); d.Class != classify.Retryable {
			t.Errorf("%v classified %v, want retryable", err, d)
		}
	})
}

func TestRedirectToAnotherHostDropsTheSpecsHeadersAndReferer(t *testing.T) {
	var mu sync.Mutex
	var seen []nethttp.Header
	other := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Clone())
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	defer other.Close()
	first := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		switch r.URL.Path {
		case "/away":
			nethttp.Redirect(w, r, other.URL+"/landing", nethttp.StatusFound)
		case "/here":
			nethttp.Redirect(w, r, "/landed", nethttp.StatusFound)
		default:
			mu.Lock()
			seen = append(seen, r.Header.Clone())
			mu.Unlock()
			_, _ = io.WriteString(w, "ok")
		}
	}))
	defer first.Close()

	for _, tt := range []struct {
		path     string
		wantKept bool
	}{{"/away", false}, {"/here", true}} {
		seen = nil
		tk, err := New(Config{URL: first.URL + tt.path + "?cred=secret-cred-123", Headers: map[string]string{"X-Api-Key": "secret-key-456", "Accept": "text/plain"}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tk.Run(t.Context(), task.Item{}); err != nil {
			t.Fatalf("%s: %v", tt.path, err)
		}
		if len(seen) != 1 {
			t.Fatalf("%s: the landing page was hit %d times, want 1", tt.path, len(seen))
		}
		h := seen[0]
		kept := h.Get("X-Api-Key") == "secret-key-456"
		if kept != tt.wantKept {
			t.Errorf("%s: X-Api-Key reached the landing host: %v, want %v", tt.path, kept, tt.wantKept)
		}
		if !tt.wantKept && (strings.Contains(h.Get("Referer"), "secret-cred-123") || h.Get("Accept") != "") {
			t.Errorf("%s: the other host received %v; want neither the Referer with the query nor the spec's headers", tt.path, h)
		}
	}
}
