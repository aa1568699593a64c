package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
)

const secretKey = "sk-secret-test-key-0123456789"

func item(fields map[string]any) task.Item { return task.Item{Idx: 3, Fields: fields} }

func mustNew(t testing.TB, cfg Config) *Task {
	t.Helper()
	tk, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tk
}

// baseURL is the base URL a provider needs to reach a mock server at url.
func baseURL(provider, url string) string {
	if provider == ProviderAnthropic {
		return url
	}
	return url + "/v1"
}

func TestRunAgainstTheMockInBothWireFormatsAndInProcess(t *testing.T) {
	tests := []struct {
		provider, model, output string
		want                    string
	}{
		{ProviderOpenAI, mock.ModelEcho, OutputText, `"Say hi to Ana"`},
		{ProviderOpenAI, mock.ModelJSON, OutputJSON, `{"text":"Say hi to Ana","length":13}`},
		{ProviderAnthropic, mock.ModelEcho, OutputText, `"Say hi to Ana"`},
		{ProviderAnthropic, mock.ModelJSON, OutputJSON, `{"text":"Say hi to Ana","length":13}`},
		{ProviderMock, mock.ModelEcho, OutputText, `"Say hi to Ana"`},
		{ProviderMock, mock.ModelJSON, OutputJSON, `{"text":"Say hi to Ana","length":13}`},
	}
	for _, tt := range tests {
		t.Run(tt.provider+"/"+tt.model, func(t *testing.T) {
			srv := mock.New(mock.Config{Record: true})
			cfg := Config{Provider: tt.provider, APIKey: secretKey, Model: tt.model, System: "You are terse.",
				Prompt: "Say hi to {{.name}}", Output: tt.output, MaxTokens: 50}
			if tt.provider == ProviderMock {
				cfg.HTTPClient = srv.Client()
			} else {
				ts := httptest.NewServer(srv)
				defer ts.Close()
				cfg.BaseURL = baseURL(tt.provider, ts.URL)
			}
			res, err := mustNew(t, cfg).Run(t.Context(), item(map[string]any{"name": "Ana"}))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Output) != tt.want {
				t.Errorf("output = %s, want %s", res.Output, tt.want)
			}
			system := "You are terse."
			if tt.output == OutputJSON && tt.provider != ProviderAnthropic {
				// json_object mode, and no message says JSON.
				system += "\n\n" + jsonInstruction
			}
			wantIn := int64(len(system+"Say hi to Ana") / 4)
			if res.Usage.InputTokens != wantIn || res.Usage.OutputTokens < 1 || res.CostUSD != 0 || res.CacheHit || res.CacheKey != "" {
				t.Errorf("result = %+v, want %d input tokens, output tokens, cost 0, no cache", res, wantIn)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("mock saw %d requests, want 1", len(reqs))
			}
			want := "[{system " + system + "} {user Say hi to Ana}]"
			if got := fmt.Sprint(reqs[0].Messages); got != want {
				t.Errorf("messages = %s, want %s", got, want)
			}
		})
	}
}

func TestReaskSendsThePreviousAnswerAndFeedbackOnly(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			srv := mock.New(mock.Config{Record: true})
			ts := httptest.NewServer(srv)
			defer ts.Close()
			tk := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, ts.URL), APIKey: secretKey,
				Model: mock.ModelJSON, Prompt: "{{.q}}", Output: OutputJSON})
			it := item(map[string]any{"q": "question"})
			it.Feedback = &task.Feedback{PreviousOutput: `{"text": "qu`, Message: "unexpected end of JSON input; answer with one JSON object", Attempt: 2}
			res, err := tk.Run(t.Context(), it)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if string(res.Output) != `{"text":"question","length":8}` {
				t.Errorf("output = %s, want the answer to the original question", res.Output)
			}
			want := `[{user question} {assistant {"text": "qu} {user unexpected end of JSON input; answer with one JSON object}]`
			if got := fmt.Sprint(srv.Requests()[0].Messages); got != want {
				t.Errorf("messages = %s\nwant       %s", got, want)
			}
		})
	}
}

func TestOutput(t *testing.T) {
	tests := []struct {
		name, output, content, refusal string
		want                           string // "" when an OutputError is expected
		wantErr                        string
	}{
		{"text", OutputText, "hola \"amigo\"\n", "", `"hola \"amigo\"\n"`, ""},
		{"json object", OutputJSON, `{"es": "gato"}`, "", `{"es":"gato"}`, ""},
		{"json in a json fence", OutputJSON, "```json\n{\"es\": \"gato\"}\n```", "", `{"es":"gato"}`, ""},
		{"json in a bare fence", OutputJSON, "```\n[1, 2]\n```\n", "", `[1,2]`, ""},
		{"truncated json", OutputJSON, `{"es": "ga`, "", "", "unexpected end of JSON input"},
		{"prose instead of json", OutputJSON, `Sure! {"es": "gato"}`, "", "", "invalid character 'S'"},
		{"empty text", OutputText, "", "", "", "empty answer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := &Task{cfg: Config{Output: tt.output}}
			out, err := tk.output(reply{content: tt.content, refusal: tt.refusal}, 100)
			if tt.wantErr == "" {
				if err != nil || string(out) != tt.want {
					t.Errorf("output = %s, %v; want %s", out, err, tt.want)
				}
				return
			}
			var oe *task.OutputError
			if !errors.As(err, &oe) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want a *task.OutputError containing %q", err, tt.wantErr)
			}
			if oe.Output != tt.content+tt.refusal {
				t.Errorf("OutputError.Output = %q, want the answer %q", oe.Output, tt.content+tt.refusal)
			}
		})
	}
}

func TestInvalidOutputFromTheMockIsAnOutputErrorWithUsage(t *testing.T) {
	srv := mock.New(mock.Config{Faults: mock.Faults{InvalidOutput: 1}})
	tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Model: mock.ModelJSON, Prompt: "abcdefgh", Output: OutputJSON})
	res, err := tk.Run(t.Context(), item(nil))
	var oe *task.OutputError
	if !errors.As(err, &oe) {
		t.Fatalf("err = %v, want *task.OutputError", err)
	}
	if res.Usage.Total() == 0 {
		t.Error("the failed attempt's usage is lost")
	}
	if d := classify.Classify(err); d.Class != classify.Invalid {
		t.Errorf("classified %v, want invalid", d)
	}
}

// errorServer answers every request with status, headers and body.
func errorServer(t *testing.T, status int, headers map[string]string, body string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(ts.Close)
	return ts
}

func TestProviderErrorsCarryTheirSignals(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name     string
		provider string
		status   int
		headers  map[string]string
		body     string

		typ, code, message, requestID string
		hint                          time.Duration
		shouldRetry                   *bool
		class                         classify.Class
	}{
		{name: "openai invalid api key", provider: ProviderOpenAI, status: 401,
			headers: map[string]string{"x-request-id": "req_401"},
			body:    `{"error": {"message": "Incorrect API key provided: sk-abc***wxyz. You can find your API key at https://platform.openai.com/account/api-keys.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`,
			typ:     "invalid_request_error", code: "invalid_api_key", message: "Incorrect API key provided", requestID: "req_401", class: classify.Fatal},
		{name: "openai rate limit with retry-after", provider: ProviderOpenAI, status: 429,
			headers: map[string]string{"x-request-id": "req_123", "retry-after": "7"},
			body:    `{"error": {"message": "Rate limit reached for gpt-4o-mini in organization org-x on requests per min (RPM): Limit 500, Used 500, Requested 1.", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`,
			typ:     "requests", code: "rate_limit_exceeded", message: "Rate limit reached", requestID: "req_123", hint: 7 * time.Second, class: classify.Retryable},
		{name: "openai rate limit with retry-after-ms winning", provider: ProviderOpenAI, status: 429,
			headers: map[string]string{"retry-after": "7", "retry-after-ms": "1500"},
			body:    `{"error": {"message": "Rate limit reached for requests", "type": "requests", "param": null, "code": "rate_limit_exceeded"}}`,
			typ:     "requests", code: "rate_limit_exceeded", message: "Rate limit reached", hint: 1500 * time.Millisecond, class: classify.Retryable},
		{name: "openai insufficient quota", provider: ProviderOpenAI, status: 429,
			body: `{"error": {"message": "You exceeded your current quota, please check your plan and billing details.", "type": "insufficient_quota", "param": null, "code": "insufficient_quota"}}`,
			typ:  "insufficient_quota", code: "insufficient_quota", message: "You exceeded your current quota", class: classify.Fatal},
		{name: "openai context length", provider: ProviderOpenAI, status: 400,
			body: `{"error": {"message": "This model's maximum context length is 128000 tokens.", "type": "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}`,
			typ:  "invalid_request_error", code: "context_length_exceeded", message: "maximum context length", class: classify.Item},
		{name: "openai model not found", provider: ProviderOpenAI, status: 404,
			body: `{"error": {"message": "The model ` + "`gpt-9`" + ` does not exist or you do not have access to it.", "type": "invalid_request_error", "param": null, "code": "model_not_found"}}`,
			typ:  "invalid_request_error", code: "model_not_found", message: "does not exist", class: classify.Fatal},
		{name: "openai 500", provider: ProviderOpenAI, status: 500,
			body: `{"error": {"message": "The server had an error while processing your request. Sorry about that!", "type": "server_error", "param": null, "code": null}}`,
			typ:  "server_error", message: "The server had an error", class: classify.Retryable},
		{name: "openai 503 html from a proxy", provider: ProviderOpenAI, status: 503,
			body: `<html><body>503 Service Unavailable</body></html>`, class: classify.Retryable},
		{name: "openai 500 with x-should-retry false", provider: ProviderOpenAI, status: 500,
			headers: map[string]string{"x-should-retry": "false"},
			body:    `{"error": {"message": "boom", "type": "server_error", "param": null, "code": null}}`,
			typ:     "server_error", message: "boom", shouldRetry: &no, class: classify.Item},
		{name: "openai 400 with x-should-retry true", provider: ProviderOpenAI, status: 400,
			headers: map[string]string{"x-should-retry": "true"},
			body:    `{"error": {"message": "try later", "type": "invalid_request_error", "param": null, "code": null}}`,
			typ:     "invalid_request_error", message: "try later", shouldRetry: &yes, class: classify.Retryable},
		{name: "anthropic overloaded", provider: ProviderAnthropic, status: 529,
			headers: map[string]string{"request-id": "req_011CS"},
			body:    `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}, "request_id": "req_011CS"}`,
			typ:     "overloaded_error", message: "Overloaded", requestID: "req_011CS", class: classify.Retryable},
		{name: "anthropic rate limit", provider: ProviderAnthropic, status: 429,
			headers: map[string]string{"retry-after": "30"},
			body:    `{"type": "error", "error": {"type": "rate_limit_error", "message": "This request would exceed the rate limit for your organization."}, "request_id": "req_body"}`,
			typ:     "rate_limit_error", message: "would exceed the rate limit", requestID: "req_body", hint: 30 * time.Second, class: classify.Retryable},
		{name: "anthropic billing", provider: ProviderAnthropic, status: 402,
			body: `{"type": "error", "error": {"type": "billing_error", "message": "There is an issue with your account's billing."}}`,
			typ:  "billing_error", message: "billing", class: classify.Fatal},
		{name: "anthropic credit balance too low, as the API answers it", provider: ProviderAnthropic, status: 400,
			headers: map[string]string{"request-id": "req_011CZ47RMLnx1JoJXRrzzSde"},
			body:    `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."},"request_id":"req_011CZ47RMLnx1JoJXRrzzSde"}`,
			typ:     "invalid_request_error", message: "credit balance is too low", requestID: "req_011CZ47RMLnx1JoJXRrzzSde", class: classify.Fatal},
		{name: "anthropic invalid request", provider: ProviderAnthropic, status: 400,
			body: `{"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: 100000 > 8192, which is the maximum allowed"}}`,
			typ:  "invalid_request_error", message: "max_tokens", class: classify.Item},
		{name: "anthropic authentication", provider: ProviderAnthropic, status: 401,
			body: `{"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}`,
			typ:  "authentication_error", message: "invalid x-api-key", class: classify.Fatal},
		{name: "anthropic 500 with x-should-retry true", provider: ProviderAnthropic, status: 500,
			headers: map[string]string{"x-should-retry": "true"},
			body:    `{"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}`,
			typ:     "api_error", message: "Internal server error", shouldRetry: &yes, class: classify.Retryable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := errorServer(t, tt.status, tt.headers, tt.body)
			tk := mustNew(t, Config{Provider: tt.provider, BaseURL: baseURL(tt.provider, ts.URL), APIKey: secretKey, Model: "some-model", Prompt: "hi"})
			_, err := tk.Run(t.Context(), item(nil))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *llm.Error", err, err)
			}
			if e.Provider != tt.provider || e.Status != tt.status || e.Type != tt.typ || e.Code != tt.code || !strings.Contains(e.Message, tt.message) {
				t.Errorf("Error = {provider %q status %d type %q code %q message %q}, want {%q %d %q %q containing %q}",
					e.Provider, e.Status, e.Type, e.Code, e.Message, tt.provider, tt.status, tt.typ, tt.code, tt.message)
			}
			if e.RequestID() != tt.requestID || e.RetryAfter() != tt.hint {
				t.Errorf("request id %q, retry after %v; want %q, %v", e.RequestID(), e.RetryAfter(), tt.requestID, tt.hint)
			}
			if retry, ok := e.ShouldRetry(); ok != (tt.shouldRetry != nil) || ok && retry != *tt.shouldRetry {
				t.Errorf("ShouldRetry() = %v, %v; want %v", retry, ok, tt.shouldRetry)
			}
			if e.Stderr() != tt.body || e.HTTPStatus() != tt.status {
				t.Errorf("Stderr() = %q, HTTPStatus() = %d; want the body and %d", e.Stderr(), e.HTTPStatus(), tt.status)
			}
			if tt.code == "" && e.ProviderCode() != tt.typ {
				t.Errorf("ProviderCode() = %q, want the type %q when there is no code", e.ProviderCode(), tt.typ)
			}
			if e.Unwrap() == nil {
				t.Error("Unwrap() = nil, want the SDK's error")
			}
			if d := classify.Classify(err); d.Class != tt.class {
				t.Errorf("classified %v, want %v", d, tt.class)
			}
		})
	}
}

func TestErrorMessageNamesStatusCodeMessageAndRequest(t *testing.T) {
	e := &Error{Status: 429, Type: "requests", Code: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4o", ID: "req_123"}
	if got, want := e.Error(), "429 rate_limit_exceeded: Rate limit reached for gpt-4o (request req_123)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	e = &Error{Status: 503}
	if got, want := e.Error(), "503: service unavailable"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestOneRunReachesTheServerOnce(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		faults   mock.Faults
	}{
		{"openai 500", ProviderOpenAI, mock.Faults{Server: 1}},
		{"openai 429", ProviderOpenAI, mock.Faults{RateLimit: 1}},
		{"openai 503", ProviderOpenAI, mock.Faults{Overloaded: 1}},
		{"openai reset", ProviderOpenAI, mock.Faults{Reset: 1}},
		{"anthropic 500", ProviderAnthropic, mock.Faults{Server: 1}},
		{"anthropic 529", ProviderAnthropic, mock.Faults{Overloaded: 1}},
		{"anthropic 429", ProviderAnthropic, mock.Faults{RateLimit: 1}},
		{"anthropic reset", ProviderAnthropic, mock.Faults{Reset: 1}},
		{"mock 500", ProviderMock, mock.Faults{Server: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := mock.New(mock.Config{Faults: tt.faults})
			cfg := Config{Provider: tt.provider, APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi"}
			if tt.provider == ProviderMock {
				cfg.HTTPClient = srv.Client()
			} else {
				ts := httptest.NewServer(srv)
				defer ts.Close()
				cfg.BaseURL = baseURL(tt.provider, ts.URL)
			}
			if _, err := mustNew(t, cfg).Run(t.Context(), item(nil)); err == nil {
				t.Fatal("Run succeeded against a failing server")
			}
			if n := srv.Stats().Requests; n != 1 {
				t.Errorf("the server saw %d requests for one Run, want 1: the SDK retried", n)
			}
		})
	}
}

func TestTransportFailuresStayReachable(t *testing.T) {
	t.Run("reset", func(t *testing.T) {
		srv := mock.New(mock.Config{Faults: mock.Faults{Reset: 1}})
		_, err := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Prompt: "hi"}).Run(t.Context(), item(nil))
		var op *net.OpError
		if !errors.Is(err, syscall.ECONNRESET) || !errors.As(err, &op) {
			t.Errorf("err = %v, want ECONNRESET in a *net.OpError", err)
		}
		if d := classify.Classify(err); d.Class != classify.Retryable {
			t.Errorf("classified %v, want retryable", d)
		}
	})
	t.Run("reset over a real socket", func(t *testing.T) {
		ts := httptest.NewServer(mock.New(mock.Config{Faults: mock.Faults{Reset: 1}}))
		defer ts.Close()
		_, err := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: ts.URL, APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi"}).Run(t.Context(), item(nil))
		if !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("err = %v, want ECONNRESET", err)
		}
	})
	t.Run("attempt timeout", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := mock.New(mock.Config{Faults: mock.Faults{Timeout: 1}})
			tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Prompt: "hi", Timeout: 30 * time.Second})
			start := time.Now()
			_, err := tk.Run(t.Context(), item(nil))
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 30s") {
				t.Errorf("err = %v, want the attempt's deadline", err)
			}
			if waited := time.Since(start); waited != 30*time.Second {
				t.Errorf("gave up after %v, want the 30s timeout", waited)
			}
			if d := classify.Classify(err); d.Class != classify.Retryable {
				t.Errorf("classified %v, want retryable", d)
			}
		})
	})
	t.Run("canceled run", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			srv := mock.New(mock.Config{Latency: time.Minute})
			tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Prompt: "hi"})
			ctx, cancel := context.WithCancel(t.Context())
			time.AfterFunc(time.Second, cancel)
			_, err := tk.Run(ctx, item(nil))
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if d := classify.Classify(err); d.Class != classify.Canceled {
				t.Errorf("classified %v, want canceled", d)
			}
		})
	})
}

func TestMalformedResponseIsRetryable(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			ts := httptest.NewServer(mock.New(mock.Config{Faults: mock.Faults{Malformed: 1}}))
			defer ts.Close()
			_, err := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, ts.URL), APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi"}).Run(t.Context(), item(nil))
			if err == nil || !strings.Contains(err.Error(), "malformed response") {
				t.Fatalf("err = %v, want a malformed response", err)
			}
			if d := classify.Classify(err); d.Class != classify.Retryable {
				t.Errorf("classified %v, want retryable", d)
			}
		})
	}
}

func TestTemplateErrorsAreItemErrors(t *testing.T) {
	tk := mustNew(t, Config{Provider: ProviderMock, Prompt: "Translate {{.word}}"})
	_, err := tk.Run(t.Context(), item(map[string]any{"other": 1}))
	if err == nil || !strings.Contains(err.Error(), `map has no entry for key "word"`) || !strings.Contains(err.Error(), "item 3") {
		t.Fatalf("err = %v, want the missing key named, for item 3", err)
	}
	if d := classify.Classify(err); d.Class != classify.Item {
		t.Errorf("classified %v, want item", d)
	}
}

func TestTheAPIKeyNeverLeaks(t *testing.T) {
	// A hostile or careless server echoes the key in its error body.
	ts := errorServer(t, 401, map[string]string{"x-request-id": "req_leak"},
		`{"error": {"message": "Incorrect API key provided: `+secretKey+`.", "type": "invalid_request_error", "param": null, "code": "invalid_api_key"}}`)
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			_, err := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, ts.URL), APIKey: secretKey, Model: "m", Prompt: "hi"}).Run(t.Context(), item(nil))
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want *llm.Error", err)
			}
			for what, s := range map[string]string{"Error()": err.Error(), "Body": e.Body, "Message": e.Message, "%+v": fmt.Sprintf("%+v", e)} {
				if strings.Contains(s, secretKey) {
					t.Errorf("%s contains the API key: %s", what, s)
				}
			}
		})
	}
	t.Run("mock faults and records", func(t *testing.T) {
		srv := mock.New(mock.Config{Record: true, Faults: mock.Faults{Auth: 0.5}, Seed: 1})
		ts := httptest.NewServer(srv)
		defer ts.Close()
		cache := newMemCache()
		for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
			tk := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, ts.URL), APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi {{.n}}", Cache: cache})
			for i := range 6 {
				res, err := tk.Run(t.Context(), item(map[string]any{"n": i}))
				if err != nil && strings.Contains(err.Error(), secretKey) {
					t.Errorf("error contains the API key: %v", err)
				}
				if strings.Contains(string(res.Output)+res.CacheKey, secretKey) {
					t.Errorf("result contains the API key: %+v", res)
				}
			}
		}
		if got := fmt.Sprintf("%+v", srv.Requests()); strings.Contains(got, secretKey) {
			t.Errorf("recorded requests contain the API key: %s", got)
		}
		if got := fmt.Sprint(cache.entries); strings.Contains(got, secretKey) {
			t.Errorf("cache contains the API key: %s", got)
		}
	})
}

// memCache is an in-memory Cache that counts its calls.
type memCache struct {
	mu      sync.Mutex
	entries map[string][]byte
	puts    int
}

func newMemCache() *memCache { return &memCache{entries: map[string][]byte{}} }

func (c *memCache) Get(key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.entries[key]
	return v, ok, nil
}

func (c *memCache) Put(key string, value []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = value
	c.puts++
	return nil
}

func TestCacheServesRepeatedCallsWithoutCalling(t *testing.T) {
	srv := mock.New(mock.Config{})
	cache := newMemCache()
	tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Model: mock.ModelJSON, Prompt: "{{.w}}", Output: OutputJSON, Cache: cache})
	first, err := tk.Run(t.Context(), item(map[string]any{"w": "gato"}))
	if err != nil || first.CacheHit || first.CacheKey == "" || len(first.CacheKey) != 64 {
		t.Fatalf("first run = %+v, %v; want a miss with a hex sha256 cache key", first, err)
	}
	second, err := tk.Run(t.Context(), item(map[string]any{"w": "gato"}))
	if err != nil || !second.CacheHit || second.CacheKey != first.CacheKey || string(second.Output) != string(first.Output) {
		t.Fatalf("second run = %+v, %v; want a hit with the first output and key", second, err)
	}
	if n := srv.Stats().Requests; n != 1 {
		t.Errorf("the provider saw %d requests, want 1: the hit made a call", n)
	}
	reask := item(map[string]any{"w": "gato"})
	reask.Feedback = &task.Feedback{PreviousOutput: string(first.Output), Message: "wrong"}
	third, err := tk.Run(t.Context(), reask)
	if err != nil || third.CacheHit || third.CacheKey == first.CacheKey {
		t.Errorf("re-ask = %+v, %v; want a miss under another key", third, err)
	}
}

func TestCacheKeepsOnlyOutputsThatParse(t *testing.T) {
	// The mock's invalid outputs alternate: truncated JSON first, then an
	// object missing a field.
	srv := mock.New(mock.Config{Faults: mock.Faults{InvalidOutput: 1}})
	cache := newMemCache()
	tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Model: mock.ModelJSON, Prompt: "abcdefgh", Output: OutputJSON, Cache: cache})
	res, err := tk.Run(t.Context(), item(nil))
	// The question's key comes back all the same: an answer healed after
	// it is remembered under it (docs/heal.md, "A heal is remembered").
	if err == nil || cache.puts != 0 || len(res.CacheKey) != 64 {
		t.Fatalf("truncated JSON: err %v, %d puts, key %q; want an error, nothing cached, and the question's key", err, cache.puts, res.CacheKey)
	}
	// JSON that parses is cached; only the validator can tell it is wrong,
	// and the engine rejects the entry by the key the Result carries.
	res, err = tk.Run(t.Context(), item(nil))
	if err != nil || cache.puts != 1 || res.CacheKey == "" {
		t.Errorf("JSON missing a field: err %v, %d puts, key %q; want it cached under the key returned", err, cache.puts, res.CacheKey)
	}
}

func TestCacheKey(t *testing.T) {
	temp := 0.2
	base := Call{Provider: "openai", BaseURL: "https://api.openai.com/v1/", Model: "gpt-4o-mini",
		Messages: []Message{{"user", "hi"}}, MaxTokens: 100, Output: "json"}
	key := CacheKey(base)
	if key != CacheKey(base) {
		t.Fatal("CacheKey is not stable")
	}
	changes := map[string]func(c *Call){
		"provider":    func(c *Call) { c.Provider = "mock" },
		"base url":    func(c *Call) { c.BaseURL = "http://localhost/v1" },
		"model":       func(c *Call) { c.Model = "gpt-4o" },
		"messages":    func(c *Call) { c.Messages = []Message{{"user", "hi!"}} },
		"role":        func(c *Call) { c.Messages = []Message{{"system", "hi"}} },
		"max tokens":  func(c *Call) { c.MaxTokens = 101 },
		"temperature": func(c *Call) { c.Temperature = &temp },
		"output":      func(c *Call) { c.Output = "text" },
	}
	for name, change := range changes {
		c := base
		change(&c)
		if CacheKey(c) == key {
			t.Errorf("changing the %s kept the key", name)
		}
	}
	a := mustNew(t, Config{Provider: ProviderOpenAI, APIKey: "key-one", Model: "gpt-4o-mini", Prompt: "hi"})
	b := mustNew(t, Config{Provider: ProviderOpenAI, APIKey: "key-two", Model: "gpt-4o-mini", Prompt: "hi"})
	ma, _ := a.Messages(item(nil))
	if CacheKey(a.callKey(ma, 10)) != CacheKey(b.callKey(ma, 10)) {
		t.Error("the API key changes the cache key")
	}
}

func TestRateLimitHeadersReachOnRateLimit(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic, ProviderMock} {
		t.Run(provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := mock.New(mock.Config{RPM: 2, TPM: 1000})
				var got []RateLimit
				tk := mustNew(t, Config{Provider: provider, BaseURL: baseURLFor(provider),
					HTTPClient: srv.Client(), APIKey: secretKey, Model: mock.ModelEcho, Prompt: "12345678", MaxTokens: 10,
					OnRateLimit: func(rl RateLimit) { got = append(got, rl) }})
				for range 3 {
					_, _ = tk.Run(t.Context(), item(nil))
				}
				if len(got) != 3 {
					t.Fatalf("OnRateLimit called %d times, want 3 (success and 429 alike)", len(got))
				}
				// The mock refills continuously: 2 of 2 requests a minute
				// are back in a minute; OpenAI's 2 × (2 prompt + 10
				// max_tokens) tokens in 1.44s; Anthropic's tightest
				// bucket is output tokens, 2 × 10 reserved less the 8 the
				// first answer did not use, back in 0.72s (its header
				// rounds up to the second).
				want := RateLimit{Provider: provider, RequestsLimit: 2, RequestsRemaining: 0, TokensLimit: 1000, TokensRemaining: 1000 - 24,
					RequestsReset: time.Minute, TokensReset: 1440 * time.Millisecond}
				if provider == ProviderAnthropic {
					want.TokensRemaining, want.TokensReset = 1000-12, time.Second
				}
				if got[1] != want {
					t.Errorf("second response: %+v\nwant %+v", got[1], want)
				}
				if got[2].RequestsRemaining != 0 {
					t.Errorf("the 429's remaining requests = %d, want 0", got[2].RequestsRemaining)
				}
			})
		})
	}
}

// TestRateLimitHeadersComeBackOnTheResult: each attempt's Result carries
// its response's rate-limit headers, a 429's beside its error, so the
// engine learns them from what the call returns. They reached it only
// through Config.OnRateLimit, a sink the job patched with the engine after
// building both.
func TestRateLimitHeadersComeBackOnTheResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := mock.New(mock.Config{RPM: 2, TPM: 1000})
		tk := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: baseURLFor(ProviderOpenAI),
			HTTPClient: srv.Client(), APIKey: secretKey, Model: mock.ModelEcho, Prompt: "12345678", MaxTokens: 10})
		var quotas []*task.Quota
		var errs []error
		for range 3 {
			res, err := tk.Run(t.Context(), item(nil))
			quotas, errs = append(quotas, res.Quota), append(errs, err)
		}
		for i, q := range quotas {
			if q == nil {
				t.Fatalf("attempt %d (error %v) returned no quota", i+1, errs[i])
			}
		}
		if errs[2] == nil {
			t.Fatal("the third call within the mock's 2 rpm succeeded, want a 429")
		}
		if q := quotas[1]; q.RequestsLimit != 2 || q.RequestsRemaining != 0 || q.RequestsReset != time.Minute || q.TokensLimit != 1000 {
			t.Errorf("second response's quota %+v, want 2 requests a minute, none left, reset in a minute, 1000 tokens", *q)
		}
		if quotas[2].RequestsRemaining != 0 {
			t.Errorf("the 429's remaining requests = %d, want 0", quotas[2].RequestsRemaining)
		}
	})
}

// baseURLFor is the in-process base URL for provider.
func baseURLFor(provider string) string {
	if provider == ProviderMock {
		return ""
	}
	return baseURL(provider, "http://mock.invalid")
}

func TestParseRateLimit(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	tests := []struct {
		name   string
		wire   string
		header map[string]string
		want   RateLimit
		ok     bool
	}{
		{"openai full", ProviderOpenAI, map[string]string{
			"x-ratelimit-limit-requests": "5000", "x-ratelimit-remaining-requests": "4999", "x-ratelimit-reset-requests": "12ms",
			"x-ratelimit-limit-tokens": "2000000", "x-ratelimit-remaining-tokens": "1999000", "x-ratelimit-reset-tokens": "6m0s",
		}, RateLimit{RequestsLimit: 5000, RequestsRemaining: 4999, RequestsReset: 12 * time.Millisecond,
			TokensLimit: 2000000, TokensRemaining: 1999000, TokensReset: 6 * time.Minute}, true},
		{"openai compound reset", ProviderOpenAI, map[string]string{"x-ratelimit-reset-tokens": "1h2m3.5s"},
			RateLimit{RequestsLimit: -1, RequestsRemaining: -1, TokensLimit: -1, TokensRemaining: -1, TokensReset: time.Hour + 2*time.Minute + 3500*time.Millisecond}, true},
		{"openai one second", ProviderOpenAI, map[string]string{"x-ratelimit-reset-requests": "1s", "x-ratelimit-remaining-requests": "0"},
			RateLimit{RequestsLimit: -1, RequestsRemaining: 0, TokensLimit: -1, TokensRemaining: -1, RequestsReset: time.Second}, true},
		{"openai bare seconds", ProviderOpenAI, map[string]string{"x-ratelimit-reset-requests": "2.5"},
			RateLimit{RequestsLimit: -1, RequestsRemaining: -1, TokensLimit: -1, TokensRemaining: -1, RequestsReset: 2500 * time.Millisecond}, true},
		{"openai garbage", ProviderOpenAI, map[string]string{"x-ratelimit-limit-requests": "lots", "x-ratelimit-reset-requests": "soon"},
			RateLimit{RequestsLimit: -1, RequestsRemaining: -1, TokensLimit: -1, TokensRemaining: -1}, true},
		{"openai 429 with its retry hint", ProviderOpenAI, map[string]string{"x-ratelimit-limit-requests": "3", "x-ratelimit-remaining-requests": "0", "retry-after-ms": "2500", "retry-after": "3"},
			RateLimit{RequestsLimit: 3, RequestsRemaining: 0, TokensLimit: -1, TokensRemaining: -1, RetryAfter: 2500 * time.Millisecond}, true},
		{"none", ProviderOpenAI, map[string]string{"anthropic-ratelimit-requests-limit": "50"}, RateLimit{}, false},
		{"anthropic full", ProviderAnthropic, map[string]string{
			"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49", "anthropic-ratelimit-requests-reset": "2025-01-02T03:04:35Z",
			"anthropic-ratelimit-tokens-limit": "40000", "anthropic-ratelimit-tokens-remaining": "39000", "anthropic-ratelimit-tokens-reset": "2025-01-02T03:05:05+00:00",
		}, RateLimit{RequestsLimit: 50, RequestsRemaining: 49, RequestsReset: 30 * time.Second,
			TokensLimit: 40000, TokensRemaining: 39000, TokensReset: time.Minute}, true},
		{"anthropic reset in the past", ProviderAnthropic, map[string]string{"anthropic-ratelimit-requests-reset": "2025-01-02T03:00:00Z"},
			RateLimit{RequestsLimit: -1, RequestsRemaining: -1, TokensLimit: -1, TokensRemaining: -1}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.header {
				h.Set(k, v)
			}
			got, ok := ParseRateLimit(tt.wire, h, now)
			if ok != tt.ok || ok && got != tt.want {
				t.Errorf("ParseRateLimit = %+v, %v\nwant            %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestLookupPrice(t *testing.T) {
	extra := map[string]Price{"gpt-4o": {InputPerMTok: 1, OutputPerMTok: 2}, "my-model": {InputPerMTok: 3, OutputPerMTok: 4}}
	tests := []struct {
		model string
		extra map[string]Price
		want  Price
		ok    bool
	}{
		{"gpt-4o-mini", nil, Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, true},
		{"gpt-4o-mini-2024-07-18", nil, Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, true},
		{"gpt-4o-2024-08-06", nil, Price{InputPerMTok: 2.50, OutputPerMTok: 10}, true},
		{"gpt-4.1-nano", nil, Price{InputPerMTok: 0.10, OutputPerMTok: 0.40}, true},
		{"claude-sonnet-4-20250514", nil, Price{InputPerMTok: 3, OutputPerMTok: 15}, true},
		{"claude-opus-4-1-20250805", nil, Price{InputPerMTok: 15, OutputPerMTok: 75}, true},
		{"claude-3-5-haiku-latest", nil, Price{InputPerMTok: 0.80, OutputPerMTok: 4}, true},
		{"mock-echo", nil, Price{}, true},
		{"gpt-4oo", nil, Price{}, false},
		{"llama3", nil, Price{}, false},
		{"gpt-4o", extra, Price{InputPerMTok: 1, OutputPerMTok: 2}, true},
		{"gpt-4o-mini", extra, Price{InputPerMTok: 0.15, OutputPerMTok: 0.60}, true}, // the longer built-in key wins
		{"my-model-v2", extra, Price{InputPerMTok: 3, OutputPerMTok: 4}, true},
	}
	for _, tt := range tests {
		got, ok := LookupPrice(tt.extra, tt.model)
		if got.InputPerMTok != tt.want.InputPerMTok || got.OutputPerMTok != tt.want.OutputPerMTok || ok != tt.ok {
			t.Errorf("LookupPrice(%v, %q) = %v, %v; want %v, %v", tt.extra, tt.model, got, ok, tt.want, tt.ok)
		}
	}
}

func TestCostFromUsageAndPrice(t *testing.T) {
	srv := mock.New(mock.Config{})
	tk := mustNew(t, Config{Provider: ProviderMock, HTTPClient: srv.Client(), Prompt: strings.Repeat("a", 400),
		Prices: map[string]Price{"mock-echo": {InputPerMTok: 1e6, OutputPerMTok: 2e6}}})
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Usage != (task.Usage{InputTokens: 100, OutputTokens: 100}) || res.CostUSD != 300 {
		t.Errorf("usage %+v, cost %v; want 100/100 tokens costing 100×1 + 100×2 = 300", res.Usage, res.CostUSD)
	}
}

func TestEstimateTokens(t *testing.T) {
	// A conversation's framing: the answer's priming, and per message its
	// own tokens and its role's.
	frame := func(messages int) int { return tokensPerReply + messages*(tokensPerMessage+1) }
	tests := []struct {
		name string
		cfg  Config
		it   task.Item
		want int
	}{
		{"prompt and cap", Config{Provider: ProviderMock, System: "12345678", Prompt: "{{.t}}", MaxTokens: 100}, item(map[string]any{"t": "abcdabcd"}), frame(2) + 1 + 1 + 100},
		{"anthropic default cap", Config{Provider: ProviderAnthropic, APIKey: "k", Model: "claude-sonnet-4", Prompt: "abcd"}, item(nil), frame(1) + 1 + 1024},
		{"re-ask counts feedback", Config{Provider: ProviderMock, Prompt: "abcd", MaxTokens: 1}, task.Item{Feedback: &task.Feedback{PreviousOutput: "abcd", Message: "abcd"}}, frame(3) + 3 + 1},
		{"openai counts with its tokenizer", Config{Provider: ProviderOpenAI, APIKey: "k", Model: "gpt-4o-mini", Prompt: "Hello, world!", MaxTokens: 10, ExactTokens: true}, item(nil), frame(1) + 4 + 10},
		{"openai estimates unless told", Config{Provider: ProviderOpenAI, APIKey: "k", Model: "gpt-4o-mini", Prompt: "Hello, world!", MaxTokens: 10}, item(nil), frame(1) + 4 + 10},
		{"openai reasoning model leaves room", Config{Provider: ProviderOpenAI, APIKey: "k", Model: "o3-mini", Prompt: "abcd"}, item(nil), frame(1) + 1 + DefaultReasoningMaxTokens},
		{"anthropic thinking leaves room", Config{Provider: ProviderAnthropic, APIKey: "k", Model: "claude-sonnet-4-5", Prompt: "abcd", ThinkingBudget: 2000}, item(nil), frame(1) + 1 + 2000 + DefaultMaxTokens},
		{"unrenderable counts the cap", Config{Provider: ProviderMock, Prompt: "{{.missing}}", MaxTokens: 7}, item(nil), 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustNew(t, tt.cfg).EstimateTokens(tt.it); got != tt.want {
				t.Errorf("EstimateTokens = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestNewRejectsBadConfigs(t *testing.T) {
	nan := 0.0
	nan /= nan
	tests := []struct {
		name    string
		cfg     Config
		wantErr string
	}{
		{"unknown provider", Config{Provider: "cohere", Model: "m", APIKey: "k", Prompt: "p"}, `unknown provider "cohere"`},
		{"no model", Config{Provider: ProviderOpenAI, APIKey: "k", Prompt: "p"}, "model is required"},
		{"no prompt", Config{Provider: ProviderMock}, "prompt is required"},
		{"bad template", Config{Provider: ProviderMock, Prompt: "{{.x"}, "prompt template"},
		{"bad system template", Config{Provider: ProviderMock, Prompt: "p", System: "{{end}}"}, "system template"},
		{"bad output", Config{Provider: ProviderMock, Prompt: "p", Output: "yaml"}, `unknown output "yaml"`},
		{"negative max tokens", Config{Provider: ProviderMock, Prompt: "p", MaxTokens: -1}, "max_tokens"},
		{"NaN temperature", Config{Provider: ProviderMock, Prompt: "p", Temperature: &nan}, "temperature"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("New = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
	t.Run("no key", func(t *testing.T) {
		t.Setenv("ANTHROPIC_API_KEY", "")
		_, err := New(Config{Provider: ProviderAnthropic, Model: "claude-sonnet-4", Prompt: "p"})
		if err == nil || !strings.Contains(err.Error(), "$ANTHROPIC_API_KEY") {
			t.Errorf("New = %v, want the missing key and its variable named", err)
		}
	})
	t.Run("key from the environment", func(t *testing.T) {
		t.Setenv("OPENAI_API_KEY", "from-env")
		tk, err := New(Config{Provider: ProviderOpenAI, Model: "gpt-4o", Prompt: "p"})
		if err != nil || tk.cfg.APIKey != "from-env" {
			t.Errorf("New = %v; want the key of $OPENAI_API_KEY", err)
		}
	})
}

func TestJSONModeIsRequestedFromOpenAIWire(t *testing.T) {
	var body map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","created":1,"model":"o3-mini","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`))
	}))
	defer ts.Close()
	temp := 0.5
	tk := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: ts.URL, APIKey: "k", Model: "o3-mini", Prompt: "p", Output: OutputJSON, MaxTokens: 9, Temperature: &temp})
	if _, err := tk.Run(t.Context(), item(nil)); err != nil {
		t.Fatal(err)
	}
	rf, _ := body["response_format"].(map[string]any)
	if rf["type"] != "json_object" || body["max_completion_tokens"] != 9.0 || body["max_tokens"] != nil || body["temperature"] != 0.5 {
		t.Errorf("request = %v, want json_object, max_completion_tokens 9 for a reasoning model, temperature 0.5", body)
	}
	// OpenAI refuses json_object with 400 unless a message says "json":
	// when none does, the system prompt asks for JSON.
	tk = mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: ts.URL, APIKey: "k", Model: "o3-mini", Prompt: "p", Output: OutputJSON})
	body = nil
	if _, err := tk.Run(t.Context(), item(nil)); err != nil {
		t.Fatal(err)
	}
	rf, _ = body["response_format"].(map[string]any)
	if msgs, _ := json.Marshal(body["messages"]); rf["type"] != "json_object" || !strings.Contains(string(msgs), jsonInstruction) {
		t.Errorf("request = %v: json_object needs the word JSON in a message, which the system prompt must then add", body)
	}
}

func TestTheMocksEmptyWalletIsFatalLikeAnthropics(t *testing.T) {
	// The mock's quota fault sent a 400 billing_error, which the API does
	// not send: the real 400 invalid_request_error was classified item.
	srv := mock.New(mock.Config{Faults: mock.Faults{Quota: 1}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	cfg := Config{Provider: ProviderAnthropic, BaseURL: baseURL(ProviderAnthropic, ts.URL), APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi"}
	_, err := mustNew(t, cfg).Run(t.Context(), item(nil))
	var e *Error
	if !errors.As(err, &e) || e.Status != 400 || e.Type != "invalid_request_error" {
		t.Fatalf("err = %v, want Anthropic's 400 invalid_request_error", err)
	}
	if d := classify.Classify(err); d.Class != classify.Fatal {
		t.Errorf("classified %v, want fatal: no item passes an empty wallet", d)
	}
}

func TestProviderAzureCanBeRehearsedAgainstTheMock(t *testing.T) {
	// The mock had no Azure route: provider azure got 404 on
	// /openai/deployments/{name}/chat/completions and could not be
	// rehearsed.
	srv := mock.New(mock.Config{Record: true})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tk := mustNew(t, Config{Provider: ProviderAzure, BaseURL: ts.URL, APIKey: secretKey, Model: mock.ModelEcho, Prompt: "Say hi to {{.name}}"})
	res, err := tk.Run(t.Context(), item(map[string]any{"name": "Ana"}))
	if err != nil {
		t.Fatalf("Run against the mock's Azure route: %v", err)
	}
	if string(res.Output) != `"Say hi to Ana"` || res.Usage.Total() == 0 {
		t.Errorf("output %s, usage %+v; want the echo and its usage", res.Output, res.Usage)
	}
	if got := srv.Requests(); len(got) != 1 || got[0].Path != "/openai/deployments/"+mock.ModelEcho+"/chat/completions" || got[0].Header.Get("Api-Key") != "REDACTED" {
		t.Errorf("recorded %+v, want one request on the deployment's path with its api-key", got)
	}
	t.Run("unknown deployment", func(t *testing.T) {
		tk := mustNew(t, Config{Provider: ProviderAzure, BaseURL: ts.URL, APIKey: secretKey, Model: "gpt-4o-prod", Prompt: "hi"})
		_, err := tk.Run(t.Context(), item(nil))
		var e *Error
		if !errors.As(err, &e) || e.Status != 404 || e.Code != "DeploymentNotFound" {
			t.Fatalf("err = %v, want Azure's 404 DeploymentNotFound", err)
		}
	})
}

func TestTheMocksAnthropicRefusalCarriesStopDetails(t *testing.T) {
	// The mock's refusals carried no stop_details, which tenax's own
	// Anthropic path reads for the refusal's words.
	srv := mock.New(mock.Config{Faults: mock.Faults{Refusal: 1}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: ts.URL, APIKey: secretKey, Model: mock.ModelEcho, Prompt: "hi"})
	_, err := tk.Run(t.Context(), item(nil))
	var se *StopError
	if !errors.As(err, &se) || se.Kind != stopRefused || !strings.Contains(se.Words, "declines") {
		t.Fatalf("err = %v, want a refusal whose words are stop_details.explanation", err)
	}
}
