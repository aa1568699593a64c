package llm

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

// bearer is an AnthropicVertex.Authorize that sends a fixed token.
func bearer(token string) func(*http.Request) error {
	return func(r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+token)
		return nil
	}
}

func claudeOnVertex(t *testing.T, baseURL, location string) *Task {
	t.Helper()
	return mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: baseURL, Model: "claude-sonnet-4-5@20250929", Prompt: "p",
		Vertex: &AnthropicVertex{Project: "my-proj", Location: location, Authorize: bearer("ya29.test")}})
}

func TestClaudeOnVertexMovesTheModelIntoThePathWithGoogleCredentials(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-be-sent")
	p := newProvider(t, func(int, map[string]any) (int, string) {
		return 200, anthropicAnswer(text("hola"), "end_turn", nil, `{"input_tokens":1000000,"output_tokens":0}`)
	})
	res, err := claudeOnVertex(t, p.srv.URL, "us-east5").Run(t.Context(), item(nil))
	if err != nil {
		t.Fatal(err)
	}
	req := p.last(t)
	if want := "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/claude-sonnet-4-5@20250929:rawPredict"; req.path != want {
		t.Errorf("path = %s, want %s", req.path, want)
	}
	if req.body["anthropic_version"] != VertexAnthropicVersion {
		t.Errorf("anthropic_version = %v, want %s", req.body["anthropic_version"], VertexAnthropicVersion)
	}
	if _, ok := req.body["model"]; ok {
		t.Errorf("the body still names the model: %v", req.body)
	}
	if req.body["messages"] == nil || req.body["max_tokens"] == nil {
		t.Errorf("the body lost the Messages fields: %v", req.body)
	}
	if got := req.header.Get("Authorization"); got != "Bearer ya29.test" {
		t.Errorf("Authorization = %q, want the Google token", got)
	}
	for _, h := range []string{"X-Api-Key", "Anthropic-Version"} {
		if v := req.header.Get(h); v != "" {
			t.Errorf("%s = %q sent to Vertex AI, want none", h, v)
		}
	}
	if string(res.Output) != `"hola"` {
		t.Errorf("output = %s", res.Output)
	}
	// A Vertex model id is priced as Anthropic's model: $3 a million input tokens.
	if res.CostUSD != 3 {
		t.Errorf("cost = %v, want 3 (claude-sonnet-4-5's price)", res.CostUSD)
	}
}

func TestClaudeOnVertexErrorsAreClassifiedAsAnthropics(t *testing.T) {
	tests := []struct {
		name    string
		status  int
		header  map[string]string
		body    string
		class   classify.Class
		hint    time.Duration
		context bool
	}{
		{"rate limit", 429, map[string]string{"Retry-After": "7"},
			`{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit"}}`, classify.Retryable, 7 * time.Second, false},
		{"overloaded", 529, nil, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, classify.Retryable, 0, false},
		{"no token", 401, nil, `{"error":{"code":401,"message":"Request is missing required authentication credential.","status":"UNAUTHENTICATED"}}`, classify.Fatal, 0, false},
		{"permission", 403, nil, `{"error":{"code":403,"message":"Permission 'aiplatform.endpoints.predict' denied","status":"PERMISSION_DENIED"}}`, classify.Fatal, 0, false},
		{"bad request", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"messages: at least one message is required"}}`, classify.Item, 0, false},
		{"context window", 400, nil, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 210000 tokens > 200000 maximum"}}`, classify.Item, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				for k, v := range tt.header {
					w.Header().Set(k, v)
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			t.Cleanup(srv.Close)
			_, err := claudeOnVertex(t, srv.URL, "europe-west1").Run(t.Context(), item(nil))
			var e *Error
			if !errors.As(err, &e) || e.Status != tt.status {
				t.Fatalf("err = %v, want an llm.Error of status %d", err, tt.status)
			}
			if d := classify.Classify(err); d.Class != tt.class {
				t.Errorf("classified %v, want %v", d, tt.class)
			}
			if e.Hint != tt.hint {
				t.Errorf("retry hint = %v, want %v", e.Hint, tt.hint)
			}
			if got := e.FallbackKind() == fallbackContextWindow; got != tt.context {
				t.Errorf("context window fallback = %v, want %v", got, tt.context)
			}
		})
	}
}

func TestClaudeOnVertexCallsGoToTheirLocationsHost(t *testing.T) {
	for location, want := range map[string]string{
		"us-east5":     "https://us-east5-aiplatform.googleapis.com/",
		"europe-west1": "https://europe-west1-aiplatform.googleapis.com/",
		"global":       "https://aiplatform.googleapis.com/",
		"us":           "https://aiplatform.us.rep.googleapis.com/",
		"eu":           "https://aiplatform.eu.rep.googleapis.com/",
	} {
		if got := VertexBaseURL(location); got != want {
			t.Errorf("VertexBaseURL(%s) = %s, want %s", location, got, want)
		}
		if tk := claudeOnVertex(t, "", location); tk.endpoint != want {
			t.Errorf("a task in %s calls %s, want %s", location, tk.endpoint, want)
		}
	}
}

func TestClaudeOnVertexStreamIsStreamRawPredict(t *testing.T) {
	var path string
	v := &AnthropicVertex{Project: "p", Location: "global", Authorize: bearer("t")}
	req := httptest.NewRequest(http.MethodPost, "http://x/v1/messages", strings.NewReader(`{"model":"claude-haiku-4-5@20251001","stream":true,"max_tokens":1}`))
	_, err := v.middleware(req, func(r *http.Request) (*http.Response, error) { path = r.URL.Path; return nil, nil })
	if err != nil || path != "/v1/projects/p/locations/global/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict" {
		t.Errorf("path = %s, %v; want streamRawPredict", path, err)
	}
}

func TestClaudeOnVertexConfigSaysWhatIsMissing(t *testing.T) {
	auth := bearer("t")
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no project", Config{Vertex: &AnthropicVertex{Location: "us-east5", Authorize: auth}}, "needs a project"},
		{"no location", Config{Vertex: &AnthropicVertex{Project: "p", Authorize: auth}}, "needs a location"},
		{"no credentials", Config{Vertex: &AnthropicVertex{Project: "p", Location: "us-east5"}}, "needs Google credentials"},
		{"an api key", Config{APIKey: "sk-ant", Vertex: &AnthropicVertex{Project: "p", Location: "us-east5", Authorize: auth}}, "not an api_key"},
		{"another provider", Config{Provider: ProviderOpenAI, APIKey: "k", Vertex: &AnthropicVertex{Project: "p", Location: "us-east5", Authorize: auth}}, "provider anthropic only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Provider, cfg.Model, cfg.Prompt = cmpOr(cfg.Provider, ProviderAnthropic), "claude-sonnet-4-5@20250929", "p"
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error saying %q", err, tt.want)
			}
		})
	}
}
