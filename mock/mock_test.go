package mock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

const testKey = "sk-test-0123456789abcdef"

// call is one request to the mock and what came back.
type call struct {
	status int
	header http.Header
	body   []byte
	err    error
}

// post sends a chat request in dialect d ("openai" or "anthropic") to base
// through client. msgs alternate user and assistant turns, starting with
// the user; system is sent the dialect's way.
func post(ctx context.Context, client *http.Client, base, d, model, key, system string, maxTokens int, msgs ...string) call {
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	req := map[string]any{"model": model}
	var list []message
	path := "/v1/chat/completions"
	if d == "anthropic" {
		path = "/v1/messages"
		if system != "" {
			req["system"] = system
		}
	} else if system != "" {
		list = append(list, message{"system", system})
	}
	for i, m := range msgs {
		role := "user"
		if i%2 == 1 {
			role = "assistant"
		}
		list = append(list, message{role, m})
	}
	req["messages"] = list
	if maxTokens > 0 {
		req["max_tokens"] = maxTokens
	}
	b, _ := json.Marshal(req)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, base+path, strings.NewReader(string(b)))
	if err != nil {
		return call{err: err}
	}
	if key != "" {
		if d == "anthropic" {
			hreq.Header.Set("x-api-key", key)
			hreq.Header.Set("anthropic-version", "2023-06-01")
		} else {
			hreq.Header.Set("Authorization", "Bearer "+key)
		}
	}
	resp, err := client.Do(hreq)
	if err != nil {
		return call{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return call{status: resp.StatusCode, header: resp.Header, body: body, err: err}
}

// inProcess posts through s's in-process transport.
func inProcess(ctx context.Context, s *Server, d, model string, msgs ...string) call {
	return post(ctx, s.Client(), "http://mock.invalid", d, model, testKey, "", 100, msgs...)
}

// content extracts the answer text of a successful body.
func content(t *testing.T, d string, body []byte) string {
	t.Helper()
	var v struct {
		Choices []struct {
			Message struct{ Content string }
		}
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("success body is not JSON: %v: %s", err, body)
	}
	if d == "anthropic" {
		if len(v.Content) != 1 || v.Content[0].Type != "text" {
			t.Fatalf("want one text block, got %s", body)
		}
		return v.Content[0].Text
	}
	if len(v.Choices) != 1 {
		t.Fatalf("want one choice, got %s", body)
	}
	return v.Choices[0].Message.Content
}

// errorFields reads an error body: (type, code) for OpenAI, (type, "")
// for Anthropic, failing the test if the body is not in the dialect's
// shape.
func errorFields(t *testing.T, d string, body []byte) (typ, code, message string) {
	t.Helper()
	if d == "anthropic" {
		var v struct {
			Type  string `json:"type"`
			Error *struct {
				Type    string `json:"type"`
				Message string `json:"message"`
			} `json:"error"`
			RequestID string `json:"request_id"`
		}
		if err := json.Unmarshal(body, &v); err != nil || v.Type != "error" || v.Error == nil || v.RequestID == "" {
			t.Fatalf("not an Anthropic error body (type, error, request_id): %s", body)
		}
		return v.Error.Type, "", v.Error.Message
	}
	var v struct {
		Error *struct {
			Message string          `json:"message"`
			Type    string          `json:"type"`
			Param   json.RawMessage `json:"param"`
			Code    *string         `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &v); err != nil || v.Error == nil || v.Error.Param == nil {
		t.Fatalf("not an OpenAI error body (error.message, type, param, code): %s", body)
	}
	if v.Error.Code != nil {
		code = *v.Error.Code
	}
	return v.Error.Type, code, v.Error.Message
}

func TestModelsAnswerInBothDialects(t *testing.T) {
	tests := []struct {
		dialect, model, prompt, want string
	}{
		{"openai", ModelEcho, "hello there", "hello there"},
		{"anthropic", ModelEcho, "hello there", "hello there"},
		{"openai", ModelJSON, "héllo", `{"text":"héllo","length":5}`},
		{"anthropic", ModelJSON, "héllo", `{"text":"héllo","length":5}`},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+"/"+tt.model, func(t *testing.T) {
			s := New(Config{})
			c := post(t.Context(), s.Client(), "http://mock.invalid", tt.dialect, tt.model, testKey, "be brief", 100, tt.prompt)
			if c.err != nil || c.status != http.StatusOK {
				t.Fatalf("got %d %v %s, want 200", c.status, c.err, c.body)
			}
			if got := content(t, tt.dialect, c.body); got != tt.want {
				t.Errorf("answer = %q, want %q", got, tt.want)
			}
			var v struct {
				ID, Model  string
				StopReason string `json:"stop_reason"`
				Choices    []struct {
					FinishReason string `json:"finish_reason"`
				}
				Usage map[string]int
			}
			_ = json.Unmarshal(c.body, &v)
			if v.ID == "" || v.Model != tt.model {
				t.Errorf("id = %q, model = %q; want an id and model %q", v.ID, v.Model, tt.model)
			}
			promptTokens := max((len([]rune(tt.prompt))+len("be brief"))/4, 1)
			answerTokens := max(len([]rune(tt.want))/4, 1)
			if tt.dialect == "openai" {
				if v.Choices[0].FinishReason != "stop" {
					t.Errorf("finish_reason = %q, want stop", v.Choices[0].FinishReason)
				}
				if v.Usage["prompt_tokens"] != promptTokens || v.Usage["completion_tokens"] != answerTokens || v.Usage["total_tokens"] != promptTokens+answerTokens {
					t.Errorf("usage = %v, want prompt %d completion %d", v.Usage, promptTokens, answerTokens)
				}
				if c.header.Get("x-request-id") == "" {
					t.Error("no x-request-id header")
				}
			} else {
				if v.StopReason != "end_turn" {
					t.Errorf("stop_reason = %q, want end_turn", v.StopReason)
				}
				if v.Usage["input_tokens"] != promptTokens || v.Usage["output_tokens"] != answerTokens {
					t.Errorf("usage = %v, want input %d output %d", v.Usage, promptTokens, answerTokens)
				}
				if c.header.Get("request-id") == "" {
					t.Error("no request-id header")
				}
			}
			if st := s.Stats(); st.Requests != 1 || st.Succeeded != 1 {
				t.Errorf("stats = %+v, want 1 request, 1 success", st)
			}
		})
	}
}

func TestReaskAnswersTheOriginalPrompt(t *testing.T) {
	s := New(Config{})
	c := inProcess(t.Context(), s, "openai", ModelJSON, "first question", `{"text": "fi`, "Your answer was not valid JSON; answer again.")
	if got, want := content(t, "openai", c.body), `{"text":"first question","length":14}`; got != want {
		t.Errorf("re-ask answered %q, want %q", got, want)
	}
}

func TestMaxTokensCutsTheAnswer(t *testing.T) {
	for _, d := range []string{"openai", "anthropic"} {
		t.Run(d, func(t *testing.T) {
			s := New(Config{})
			c := post(t.Context(), s.Client(), "http://mock.invalid", d, ModelEcho, testKey, "", 2, strings.Repeat("abcd", 10))
			if got := content(t, d, c.body); got != "abcdabcd" {
				t.Errorf("answer = %q, want the first 8 characters (2 tokens)", got)
			}
			want := map[string]string{"openai": `"finish_reason":"length"`, "anthropic": `"stop_reason":"max_tokens"`}[d]
			if !strings.Contains(string(c.body), want) {
				t.Errorf("body %s lacks %s", c.body, want)
			}
		})
	}
}

func TestErrorsOfRequestsTheMockRefuses(t *testing.T) {
	tests := []struct {
		name, dialect, model, key string
		maxTokens                 int
		status                    int
		typ, code                 string
	}{
		{"openai unknown model", "openai", "gpt-9", testKey, 10, 404, "invalid_request_error", "model_not_found"},
		{"anthropic unknown model", "anthropic", "claude-9", testKey, 10, 404, "not_found_error", ""},
		{"openai missing key", "openai", ModelEcho, "", 10, 401, "invalid_request_error", ""},
		{"anthropic missing key", "anthropic", ModelEcho, "", 10, 401, "authentication_error", ""},
		{"anthropic without max_tokens", "anthropic", ModelEcho, testKey, 0, 400, "invalid_request_error", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			c := post(t.Context(), s.Client(), "http://mock.invalid", tt.dialect, tt.model, tt.key, "", tt.maxTokens, "hi")
			if c.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", c.status, tt.status, c.body)
			}
			typ, code, msg := errorFields(t, tt.dialect, c.body)
			if typ != tt.typ || code != tt.code || msg == "" {
				t.Errorf("type, code = %q, %q (message %q); want %q, %q and a message", typ, code, msg, tt.typ, tt.code)
			}
		})
	}
}

func TestFaultsAnswerAsTheProvidersDo(t *testing.T) {
	tests := []struct {
		name       string
		dialect    string
		faults     Faults
		status     int // 0: a transport error
		typ, code  string
		retryAfter string
		check      func(t *testing.T, c call, st Stats)
	}{
		{name: "openai rate limit", dialect: "openai", faults: Faults{RateLimit: 1}, status: 429, typ: "requests", code: "rate_limit_exceeded", retryAfter: "1",
			check: func(t *testing.T, c call, st Stats) {
				if c.header.Get("retry-after-ms") != "1" || st.RateLimited != 1 {
					t.Errorf("retry-after-ms = %q, rate limited = %d; want 1 (a request refills in 60µs at the unreachable 1,000,000 RPM, at least 1ms) and 1", c.header.Get("retry-after-ms"), st.RateLimited)
				}
			}},
		{name: "anthropic rate limit", dialect: "anthropic", faults: Faults{RateLimit: 1}, status: 429, typ: "rate_limit_error", retryAfter: "1"},
		{name: "openai server error", dialect: "openai", faults: Faults{Server: 1}, status: 500, typ: "server_error",
			check: func(t *testing.T, _ call, st Stats) {
				if st.ServerErrors != 1 || st.Succeeded != 0 {
					t.Errorf("stats = %+v, want 1 server error, no success", st)
				}
			}},
		{name: "anthropic server error", dialect: "anthropic", faults: Faults{Server: 1}, status: 500, typ: "api_error"},
		{name: "openai overloaded", dialect: "openai", faults: Faults{Overloaded: 1}, status: 503, typ: "server_error"},
		{name: "anthropic overloaded", dialect: "anthropic", faults: Faults{Overloaded: 1}, status: 529, typ: "overloaded_error",
			check: func(t *testing.T, _ call, st Stats) {
				if st.Overloaded != 1 {
					t.Errorf("overloaded = %d, want 1", st.Overloaded)
				}
			}},
		{name: "openai auth", dialect: "openai", faults: Faults{Auth: 1}, status: 401, typ: "invalid_request_error", code: "invalid_api_key",
			check: func(t *testing.T, c call, st Stats) {
				if strings.Contains(string(c.body), testKey) || !strings.Contains(string(c.body), "cdef") {
					t.Errorf("401 body should show the key masked with its last 4 characters: %s", c.body)
				}
				if st.AuthErrors != 1 {
					t.Errorf("auth errors = %d, want 1", st.AuthErrors)
				}
			}},
		{name: "anthropic auth", dialect: "anthropic", faults: Faults{Auth: 1}, status: 401, typ: "authentication_error"},
		{name: "openai reset", dialect: "openai", faults: Faults{Reset: 1},
			check: func(t *testing.T, c call, st Stats) {
				var op *net.OpError
				if !errors.Is(c.err, syscall.ECONNRESET) || !errors.As(c.err, &op) {
					t.Errorf("err = %v, want a *net.OpError wrapping ECONNRESET", c.err)
				}
				if st.Resets != 1 {
					t.Errorf("resets = %d, want 1", st.Resets)
				}
			}},
		{name: "anthropic timeout", dialect: "anthropic", faults: Faults{Timeout: 1},
			check: func(t *testing.T, c call, st Stats) {
				if !errors.Is(c.err, context.DeadlineExceeded) {
					t.Errorf("err = %v, want the client's deadline", c.err)
				}
				if st.Timeouts != 1 {
					t.Errorf("timeouts = %d, want 1", st.Timeouts)
				}
			}},
		{name: "openai malformed", dialect: "openai", faults: Faults{Malformed: 1}, status: 200,
			check: func(t *testing.T, c call, st Stats) {
				if json.Valid(c.body) || !strings.HasPrefix(string(c.body), `{"choices":`) || !errors.Is(c.err, io.ErrUnexpectedEOF) {
					t.Errorf("want a completion body cut short with io.ErrUnexpectedEOF, got %v: %s", c.err, c.body)
				}
				if st.Malformed != 1 || st.Succeeded != 0 {
					t.Errorf("stats = %+v, want 1 malformed, no success", st)
				}
			}},
		{name: "anthropic malformed", dialect: "anthropic", faults: Faults{Malformed: 1}, status: 200,
			check: func(t *testing.T, c call, _ Stats) {
				if json.Valid(c.body) || !errors.Is(c.err, io.ErrUnexpectedEOF) {
					t.Errorf("want a truncated body, got %s", c.body)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Config{Faults: tt.faults, Latency: 10 * time.Millisecond})
				ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
				defer cancel()
				c := inProcess(ctx, s, tt.dialect, ModelEcho, "hi")
				if c.status != tt.status {
					t.Fatalf("status = %d (err %v), want %d: %s", c.status, c.err, tt.status, c.body)
				}
				if tt.typ != "" {
					typ, code, _ := errorFields(t, tt.dialect, c.body)
					if typ != tt.typ || code != tt.code {
						t.Errorf("type, code = %q, %q; want %q, %q", typ, code, tt.typ, tt.code)
					}
					id := map[string]string{"openai": "x-request-id", "anthropic": "request-id"}[tt.dialect]
					if c.header.Get(id) == "" {
						t.Errorf("error response lacks %s", id)
					}
				}
				if got := c.header.Get("Retry-After"); got != tt.retryAfter {
					t.Errorf("Retry-After = %q, want %q", got, tt.retryAfter)
				}
				if tt.check != nil {
					tt.check(t, c, s.Stats())
				}
			})
		})
	}
}

// TestSporadicRateLimitAsksForOneRequestsRefill checks that a RateLimit
// fault's hint agrees with the limit its headers announce: it used to be a
// flat second whatever the limit, next to headers saying room was left and
// the bucket would be full in 0s.
func TestSporadicRateLimitAsksForOneRequestsRefill(t *testing.T) {
	tests := []struct {
		dialect, rpm string
		rpmN         int
		retryAfter   string // whole seconds, rounded up
		ms           string // OpenAI's retry-after-ms; "" for Anthropic
		message      string // in OpenAI's message
	}{
		{"openai", "60", 60, "1", "1000", "Please try again in 1s."},
		{"openai", "6,000", 6000, "1", "10", "Please try again in 10ms."},
		{"openai", "600,000", 600_000, "1", "1", "Please try again in 1ms."},
		{"anthropic", "6,000", 6000, "1", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+" at "+tt.rpm+" rpm", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Config{Faults: Faults{RateLimit: 1}, RPM: tt.rpmN})
				c := inProcess(t.Context(), s, tt.dialect, ModelEcho, "hi")
				if c.status != http.StatusTooManyRequests {
					t.Fatalf("status = %d, want 429", c.status)
				}
				if got := c.header.Get("retry-after"); got != tt.retryAfter {
					t.Errorf("retry-after = %q, want %q", got, tt.retryAfter)
				}
				if got := c.header.Get("retry-after-ms"); got != tt.ms {
					t.Errorf("retry-after-ms = %q, want %q: one request refills in a minute / %s", got, tt.ms, tt.rpm)
				}
				if _, _, msg := errorFields(t, tt.dialect, c.body); !strings.Contains(msg, tt.message) {
					t.Errorf("message %q does not say %q", msg, tt.message)
				}
			})
		})
	}
}

func TestInvalidOutputIsPlausibleButWrong(t *testing.T) {
	s := New(Config{Faults: Faults{InvalidOutput: 1}})
	var answers []string
	for range 2 {
		answers = append(answers, content(t, "openai", inProcess(t.Context(), s, "openai", ModelJSON, "abcdef").body))
	}
	var truncated, missing bool
	for _, a := range answers {
		var v map[string]any
		switch err := json.Unmarshal([]byte(a), &v); {
		case err != nil && strings.HasPrefix(a, `{"text":"abcdef"`) && strings.HasSuffix(a, ",}"):
			truncated = true
		case err == nil && v["text"] == "abcdef" && v["length"] == nil:
			missing = true
		}
	}
	if !truncated || !missing {
		t.Errorf("answers %q: want one JSON with a trailing comma and one object missing \"length\"", answers)
	}
	if got := content(t, "openai", inProcess(t.Context(), s, "openai", ModelEcho, "abcdef").body); got == "abcdef" {
		t.Errorf("mock-echo invalid output = %q, want something other than the echo", got)
	}
	if st := s.Stats(); st.InvalidOutputs != 3 || st.Succeeded != 0 {
		t.Errorf("stats = %+v, want 3 invalid outputs and no success", st)
	}
}

// outcomes runs n requests against a fresh server and lists what each met.
func outcomes(t *testing.T, cfg Config, n int) []string {
	s := New(cfg)
	var out []string
	for range n {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		c := inProcess(ctx, s, "openai", ModelJSON, "same prompt")
		cancel()
		switch {
		case c.status == http.StatusOK && !json.Valid(c.body):
			out = append(out, "malformed")
		case c.err != nil:
			out = append(out, c.err.Error())
		case c.status == http.StatusOK:
			out = append(out, "200 "+content(t, "openai", c.body))
		default:
			out = append(out, strconv.Itoa(c.status))
		}
	}
	return out
}

func TestFaultsAreDeterministicForASeed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Seed: 42, Latency: time.Millisecond, LatencyMax: 50 * time.Millisecond, Faults: Faults{
			RateLimit: 0.1, Server: 0.1, Overloaded: 0.1, Timeout: 0.1, Reset: 0.1, Malformed: 0.1, InvalidOutput: 0.1, Auth: 0.1,
		}}
		first, second := outcomes(t, cfg, 60), outcomes(t, cfg, 60)
		if strings.Join(first, "\n") != strings.Join(second, "\n") {
			t.Fatalf("same seed, different faults:\n%q\n%q", first, second)
		}
		kinds := map[string]bool{}
		for _, o := range first {
			kinds[o] = true
		}
		if len(kinds) < 8 {
			t.Errorf("60 requests at 10%% per fault met only %d kinds of outcome: %q", len(kinds), first)
		}
		cfg.Seed = 43
		if other := outcomes(t, cfg, 60); strings.Join(first, "\n") == strings.Join(other, "\n") {
			t.Error("seeds 42 and 43 gave the same faults")
		}
	})
}

func TestRecordKeepsRequestsWithoutTheKey(t *testing.T) {
	s := New(Config{Record: true})
	post(t.Context(), s.Client(), "http://mock.invalid", "anthropic", ModelEcho, testKey, "sys", 10, "q", "a", "feedback")
	post(t.Context(), s.Client(), "http://mock.invalid", "openai", ModelEcho, testKey, "", 10, "q2")
	got := s.Requests()
	if len(got) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(got))
	}
	want := []Message{{"system", "sys"}, {"user", "q"}, {"assistant", "a"}, {"user", "feedback"}}
	if got[0].Path != "/v1/messages" || got[0].Model != ModelEcho || fmt.Sprint(got[0].Messages) != fmt.Sprint(want) {
		t.Errorf("recorded %+v, want path /v1/messages, model mock-echo, messages %v", got[0], want)
	}
	if fmt.Sprint(got[1].Messages) != fmt.Sprint([]Message{{"user", "q2"}}) {
		t.Errorf("recorded messages %v", got[1].Messages)
	}
	if strings.Contains(fmt.Sprintf("%+v", got), testKey) {
		t.Errorf("recorded requests contain the API key: %+v", got)
	}
	if got[0].Header.Get("X-Api-Key") != "REDACTED" || got[1].Header.Get("Authorization") != "REDACTED" {
		t.Errorf("headers not redacted: %v / %v", got[0].Header, got[1].Header)
	}
}

func TestResetOverARealSocketIsATCPReset(t *testing.T) {
	ts := httptest.NewServer(New(Config{Faults: Faults{Reset: 1}}))
	defer ts.Close()
	c := post(t.Context(), ts.Client(), ts.URL, "openai", ModelEcho, testKey, "", 10, "hi")
	if !errors.Is(c.err, syscall.ECONNRESET) {
		t.Errorf("err = %v, want ECONNRESET", c.err)
	}
}

func TestTimeoutOverARealSocketBlocksUntilTheClientGivesUp(t *testing.T) {
	s := New(Config{Faults: Faults{Timeout: 1}})
	ts := httptest.NewServer(s)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	c := post(ctx, ts.Client(), ts.URL, "openai", ModelEcho, testKey, "", 10, "hi")
	if !errors.Is(c.err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the client's deadline", c.err)
	}
	if st := s.Stats(); st.Timeouts != 1 {
		t.Errorf("timeouts = %d, want 1", st.Timeouts)
	}
}

func TestListenAndServePrintsBaseURLsAndStopsWithTheContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- ListenAndServe(ctx, "127.0.0.1:0", Config{}, pw) }()
	line, err := bufio.NewReader(pr).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var openaiURL, anthropicURL string
	if _, err := fmt.Sscanf(line, "mock provider listening: OpenAI base URL %s Anthropic base URL %s", &openaiURL, &anthropicURL); err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	openaiURL = strings.TrimSuffix(openaiURL, ",")
	if openaiURL != anthropicURL+"/v1" {
		t.Errorf("OpenAI base %q, Anthropic base %q: want the same server, /v1 for OpenAI", openaiURL, anthropicURL)
	}
	if c := post(ctx, http.DefaultClient, anthropicURL, "anthropic", ModelEcho, testKey, "", 10, "hi"); c.status != 200 {
		t.Errorf("status %d (%v), want 200", c.status, c.err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("ListenAndServe after cancel = %v, want nil", err)
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"zero", Config{}, ""},
		{"all faults summing to 1", Config{Faults: Faults{RateLimit: 0.5, Server: 0.25, Auth: 0.25}}, ""},
		{"negative fraction", Config{Faults: Faults{Server: -0.1}}, "fault server is -0.1"},
		{"fraction above 1", Config{Faults: Faults{Reset: 1.5}}, "fault reset is 1.5"},
		{"sum above 1", Config{Faults: Faults{Server: 0.6, Malformed: 0.6}}, "sum to 1.2"},
		{"negative rpm", Config{RPM: -1}, "rpm and tpm"},
		{"negative latency", Config{Latency: -time.Second}, "latency"},
		{"negative context window", Config{ContextWindow: -1}, "context window -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.Validate()
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Validate() = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestAnswersScriptTheModelInOrderThenRepeatTheLast(t *testing.T) {
	s := New(Config{Answers: []string{"first", "second"}})
	var got []string
	for _, d := range []string{"openai", "anthropic", "openai"} {
		got = append(got, content(t, d, inProcess(t.Context(), s, d, ModelEcho, "anything").body))
	}
	if want := []string{"first", "second", "second"}; !slices.Equal(got, want) {
		t.Errorf("scripted answers %q; want %q", got, want)
	}
}

// TestContextWindowIsTheConfiguredOne: a server told a context window
// refuses prompts past it with each dialect's context-length 400 naming
// it, and serves those within it: one mock per route rehearses a
// context-window fallback.
func TestContextWindowIsTheConfiguredOne(t *testing.T) {
	s := New(Config{ContextWindow: 300})
	ctx := context.Background()
	long := strings.Repeat("word ", 400)
	for _, tt := range []struct{ dialect, code, msg string }{
		{"openai", "context_length_exceeded", "maximum context length is 300 tokens"},
		{"anthropic", "", "tokens \\u003e 300 maximum"},
	} {
		c := post(ctx, s.Client(), "http://mock", tt.dialect, "mock-echo", testKey, "", 10, long)
		if c.err != nil || c.status != 400 || !strings.Contains(string(c.body), tt.msg) || !strings.Contains(string(c.body), tt.code) {
			t.Errorf("%s, prompt past the window: %d %s (%v); want 400 saying %q", tt.dialect, c.status, c.body, c.err, tt.msg)
		}
		if c := post(ctx, s.Client(), "http://mock", tt.dialect, "mock-echo", testKey, "", 10, "short"); c.err != nil || c.status != 200 {
			t.Errorf("%s, short prompt: %d %s (%v); want 200", tt.dialect, c.status, c.body, c.err)
		}
	}
}
