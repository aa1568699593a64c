package llm

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/classify"
)

// TestAnErrorObjectInA200IsClassifiedByItsTypeNotReaskedAsEmpty: a 200
// whose body is an error object (as some gateways send a rate limit) was
// recorded as "empty answer" and re-asked, 6 calls an item, the
// provider's words lost. It is an error of its type's class now, its
// message kept, after one call.
func TestAnErrorObjectInA200IsClassifiedByItsTypeNotReaskedAsEmpty(t *testing.T) {
	for _, tc := range []struct {
		name, provider, body string
		want                 classify.Class
		words                string
	}{
		{"anthropic rate limit", ProviderAnthropic, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your rate limit"}}`, classify.Retryable, "200 rate_limit_error: Number of requests has exceeded your rate limit"},
		{"anthropic overloaded", ProviderAnthropic, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, classify.Retryable, "200 overloaded_error: Overloaded"},
		{"anthropic invalid request", ProviderAnthropic, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: text content blocks must be non-empty"}}`, classify.Item, "200 invalid_request_error: messages: text content blocks must be non-empty"},
		{"anthropic authentication", ProviderAnthropic, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`, classify.Fatal, "200 authentication_error: invalid x-api-key"},
		{"anthropic api error", ProviderAnthropic, `{"type":"error","error":{"type":"api_error","message":"Internal server error"}}`, classify.Retryable, "200 api_error: Internal server error"},
		{"openai rate limit", ProviderOpenAI, `{"error":{"message":"Rate limit reached for gpt-4o","type":"requests","code":"rate_limit_exceeded"}}`, classify.Retryable, "200 rate_limit_exceeded: Rate limit reached for gpt-4o"},
		{"openai quota", ProviderOpenAI, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, classify.Fatal, "200 insufficient_quota: You exceeded your current quota"},
		{"openai server error", ProviderOpenAI, `{"error":{"message":"The server had an error","type":"server_error","code":null}}`, classify.Retryable, "200 server_error: The server had an error"},
		{"a gateway's text", ProviderOpenAI, `{"error":"upstream quota exhausted"}`, classify.Retryable, "200: upstream quota exhausted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(tc.body))
			}))
			defer ts.Close()
			_, err := mustNew(t, Config{Provider: tc.provider, BaseURL: baseURL(tc.provider, ts.URL), APIKey: secretKey, Model: "m", Prompt: "hi"}).Run(t.Context(), item(nil))
			if _, ok := errors.AsType[*Error](err); !ok || !strings.Contains(err.Error(), tc.words) {
				t.Fatalf("err = %v; want an *Error saying %q", err, tc.words)
			}
			if d := classify.Classify(err); d.Class != tc.want {
				t.Errorf("classified %v; want %s", d, tc.want)
			}
			if n := calls.Load(); n != 1 {
				t.Errorf("one Run made %d calls; want 1", n)
			}
		})
	}
}

// TestAnAnswerWithAnErrorFieldBesideItsChoicesIsAnAnswer: only a body that
// holds an error and no answer is an error.
func TestAnAnswerWithAnErrorFieldBesideItsChoicesIsAnAnswer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"error":null,"choices":[{"index":0,"message":{"role":"assistant","content":"hello"},"finish_reason":"stop"}]}`))
	}))
	defer ts.Close()
	res, err := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: ts.URL + "/v1", APIKey: secretKey, Model: "m", Prompt: "hi"}).Run(t.Context(), item(nil))
	if err != nil || string(res.Output) != `"hello"` {
		t.Errorf("output %s, error %v; want \"hello\"", res.Output, err)
	}
}

// TestAnErrorMemberIsFoundInAnySpellingJSONDecodes: answerError skips its
// decode of a body where no spelling of "error" appears; encoding/json
// matches member names without regard to case and through \u escapes,
// so each of those spellings is still an error, and an answer without
// any is none.
func TestAnErrorMemberIsFoundInAnySpellingJSONDecodes(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		isError    bool
	}{
		{"lower case", `{"error":"upstream quota exhausted"}`, true},
		{"upper case", `{"ERROR":"upstream quota exhausted"}`, true},
		{"mixed case", `{"eRrOr":{"message":"Rate limit","code":"rate_limit_exceeded"}}`, true},
		{"escaped letter", `{"\u0065rror":"upstream quota exhausted"}`, true},
		{"escaped name", `{"\u0045\u0052\u0052\u004f\u0052":"upstream quota exhausted"}`, true},
		{"an answer", `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Bonjour"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`, false},
		{"an answer that says error", `{"choices":[{"message":{"content":"no Error here"}}],"error":null}`, false},
		{"no members", `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := answerError(ProviderOpenAI, &capture{status: http.StatusOK, header: http.Header{}}, []byte(tc.body), nil)
			if got := err != nil; got != tc.isError {
				t.Errorf("answerError(%s) = %v; want an error: %v", tc.body, err, tc.isError)
			}
		})
	}
}
