package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/auth"
	"google.golang.org/genai"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
)

// mockKey is the Gemini API key the tests send; the mock takes any.
const mockKey = "AIzaMockMockMockMockMockMockMockMockMoc"

// googleTestEnv keeps the SDK away from this machine's Google settings:
// no key, project, location, base URL or credentials file but the test's.
func googleTestEnv(t *testing.T) {
	t.Helper()
	for _, name := range []string{"GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION",
		"GOOGLE_CLOUD_REGION", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_USE_ENTERPRISE", "GOOGLE_GEMINI_BASE_URL",
		"GOOGLE_VERTEX_BASE_URL", "GOOGLE_CLOUD_QUOTA_PROJECT"} {
		t.Setenv(name, "")
	}
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", t.TempDir()+"/none.json")
}

// geminiMock serves the mock on loopback and returns it and its URL.
func geminiMock(t *testing.T, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	srv := mock.New(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// newTask builds an llm task on provider (gemini or vertex) whose Client
// calls url.
func newTask(t *testing.T, provider, url string, cfg llm.Config) *llm.Task {
	t.Helper()
	opts := gemini.Options{Endpoint: url, APIKey: mockKey}
	if provider == llm.ProviderVertex {
		opts = gemini.Options{Endpoint: url, Vertex: true, Project: "mock-project", Location: "us-central1", Credentials: staticToken("ya29.mock-token")}
	}
	client, err := gemini.New(t.Context(), opts)
	if err != nil {
		t.Fatalf("gemini.New: %v", err)
	}
	cfg.Provider, cfg.Gemini = provider, client
	tk, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return tk
}

// staticToken is Google credentials that hand out one access token, as
// a test's stand-in for the application default credentials.
func staticToken(token string) *auth.Credentials {
	return auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: tokenProvider(token)})
}

type tokenProvider string

func (p tokenProvider) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: string(p), Type: "Bearer", Expiry: time.Now().Add(time.Hour)}, nil
}

func item(fields map[string]any) task.Item { return task.Item{Idx: 3, Fields: fields} }

func TestGeminiAnswerCarriesTextUsageCostAndFinishReason(t *testing.T) {
	for _, tt := range []struct {
		provider, path, auth string
	}{
		{llm.ProviderGemini, "/v1beta/models/mock-echo:generateContent", "X-Goog-Api-Key"},
		{llm.ProviderVertex, "/v1/projects/mock-project/locations/us-central1/publishers/google/models/mock-echo:generateContent", "Authorization"},
	} {
		t.Run(tt.provider, func(t *testing.T) {
			googleTestEnv(t)
			srv, url := geminiMock(t, mock.Config{Record: true})
			price := llm.Price{InputPerMTok: 1, OutputPerMTok: 2}
			tk := newTask(t, tt.provider, url, llm.Config{Model: mock.ModelEcho, System: "Be brief.", Prompt: "Say {{.n}}",
				Prices: map[string]llm.Price{mock.ModelEcho: price}})
			res, err := tk.Run(t.Context(), item(map[string]any{"n": "hello there"}))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			var out string
			if err := json.Unmarshal(res.Output, &out); err != nil || out != "Say hello there" {
				t.Errorf("output = %s, want the echoed prompt", res.Output)
			}
			if res.FinishReason != "STOP" {
				t.Errorf("finish reason = %q, want STOP", res.FinishReason)
			}
			if res.Usage.InputTokens <= 0 || res.Usage.OutputTokens <= 0 {
				t.Errorf("usage = %+v, want promptTokenCount and candidatesTokenCount", res.Usage)
			}
			if want := price.Cost(res.Usage); res.CostUSD != want || want == 0 {
				t.Errorf("cost = %v, want %v from the usage", res.CostUSD, want)
			}
			reqs := srv.Requests()
			if len(reqs) != 1 {
				t.Fatalf("the mock saw %d requests, want 1 (the SDK's retries are off)", len(reqs))
			}
			r := reqs[0]
			if r.Path != tt.path || r.Model != mock.ModelEcho {
				t.Errorf("request to %s for model %q, want %s", r.Path, r.Model, tt.path)
			}
			if r.Header.Get(tt.auth) == "" {
				t.Errorf("the request had no %s header: %v", tt.auth, r.Header)
			}
			if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "Be brief." {
				t.Errorf("messages = %+v, want the system instruction and the prompt", r.Messages)
			}
		})
	}
}

const fittingSchema = `{"type":"object","properties":{"es":{"type":"string"},"n":{"type":["integer","null"]}},"required":["es","n"],"additionalProperties":false}`

func TestGeminiSchemaIsSentAsResponseJSONSchema(t *testing.T) {
	googleTestEnv(t)
	_, url := geminiMock(t, mock.Config{})
	tk := newTask(t, llm.ProviderGemini, url, llm.Config{Model: mock.ModelEcho,
		Prompt: "Translate hi", Output: llm.OutputJSON, Schema: json.RawMessage(fittingSchema)})
	if tk.Structured().Mode != llm.ModeJSONSchema {
		t.Fatalf("structured mode = %v, want responseJsonSchema", tk.Structured())
	}
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Output, &got); err != nil || got["es"] == nil {
		t.Errorf("output = %s, want JSON shaped by the schema", res.Output)
	}
}

func TestGeminiJSONWithoutASchemaIsAskedByMimeType(t *testing.T) {
	googleTestEnv(t)
	_, url := geminiMock(t, mock.Config{})
	tk := newTask(t, llm.ProviderGemini, url, llm.Config{Model: mock.ModelEcho, Prompt: "Translate hi", Output: llm.OutputJSON})
	if tk.Structured().Mode != llm.ModeJSONObject {
		t.Fatalf("structured mode = %v, want responseMimeType application/json", tk.Structured())
	}
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !json.Valid(res.Output) || !strings.Contains(string(res.Output), "Translate hi") {
		t.Errorf("output = %s, want the mock's JSON object", res.Output)
	}
}

// TestGeminiErrorsAndFinishReasonsAreClassifiedTruthfully drives each of
// the mock's Gemini faults through the real genai SDK, and checks tenax's
// class, fallback kind, code and retry hint as docs/providers.md says.
func TestGeminiErrorsAndFinishReasonsAreClassifiedTruthfully(t *testing.T) {
	tests := []struct {
		name     string
		faults   mock.Faults
		model    string
		status   int
		code     string // what classify reads
		class    classify.Class
		fallback string
		hint     bool   // a RetryInfo's retryDelay
		finish   string // for an answer's finish reason
		words    string
	}{
		{name: "per-minute quota", faults: mock.Faults{RateLimit: 1}, status: 429, code: "RESOURCE_EXHAUSTED", class: classify.Retryable, hint: true},
		{name: "per-day quota", faults: mock.Faults{Quota: 1}, status: 429, code: llm.GeminiDailyQuota, class: classify.Fatal, hint: true},
		{name: "internal", faults: mock.Faults{Server: 1}, status: 500, code: "INTERNAL", class: classify.Retryable},
		{name: "unavailable", faults: mock.Faults{Overloaded: 1}, status: 503, code: "UNAVAILABLE", class: classify.Retryable},
		{name: "deadline exceeded", faults: mock.Faults{ModelTimeout: 1}, status: 504, code: "DEADLINE_EXCEEDED", class: classify.Retryable},
		{name: "billing", faults: mock.Faults{PaymentRequired: 1}, status: 400, code: "FAILED_PRECONDITION", class: classify.Fatal},
		{name: "permission denied", faults: mock.Faults{Forbidden: 1}, status: 403, code: "PERMISSION_DENIED", class: classify.Fatal},
		{name: "key not valid", faults: mock.Faults{Auth: 1}, status: 400, code: "API_KEY_INVALID", class: classify.Fatal},
		{name: "unknown model", model: "gemini-nonexistent", status: 404, code: "NOT_FOUND", class: classify.Fatal},
		{name: "payload too large", faults: mock.Faults{TooLarge: 1}, status: 400, code: "INVALID_ARGUMENT", class: classify.Item},
		{name: "input token count", faults: mock.Faults{ContextLength: 1}, status: 400, code: "INVALID_ARGUMENT", class: classify.Item, fallback: "context_window"},
		{name: "max tokens", faults: mock.Faults{Truncated: 1}, class: classify.Invalid, finish: "MAX_TOKENS", words: "the answer was cut off"},
		{name: "safety", faults: mock.Faults{ContentFilter: 1}, class: classify.Item, fallback: "content_filter",
			finish: "SAFETY", words: "HARM_CATEGORY_DANGEROUS_CONTENT probability HIGH (blocked)"},
		{name: "prompt blocked", faults: mock.Faults{Refusal: 1}, class: classify.Item, fallback: "content_filter",
			finish: "PROMPT_BLOCKED", words: "promptFeedback.blockReason PROHIBITED_CONTENT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			googleTestEnv(t)
			srv, url := geminiMock(t, mock.Config{Faults: tt.faults})
			model := tt.model
			if model == "" {
				model = mock.ModelEcho
			}
			tk := newTask(t, llm.ProviderGemini, url, llm.Config{Model: model, Prompt: "Tell me about item {{.n}} in some detail", MaxTokens: 64})
			res, err := tk.Run(t.Context(), item(map[string]any{"n": 7}))
			if err == nil {
				t.Fatalf("the fault's call succeeded with %s", res.Output)
			}
			if n := srv.Stats().Requests; n != 1 {
				t.Errorf("the mock saw %d requests, want 1: the SDK must not retry", n)
			}
			if d := classify.Classify(err); d.Class != tt.class {
				t.Errorf("classified %v, want %v: %v", d, tt.class, err)
			}
			if got := fallbackKind(err); got != tt.fallback {
				t.Errorf("fallback kind = %q, want %q", got, tt.fallback)
			}
			if tt.finish != "" {
				if res.FinishReason != tt.finish {
					t.Errorf("finish reason = %q, want %q", res.FinishReason, tt.finish)
				}
				if !strings.Contains(err.Error(), tt.words) {
					t.Errorf("err = %q, want the words %q", err, tt.words)
				}
				return
			}
			e, ok := errors.AsType[*llm.Error](err)
			if !ok {
				t.Fatalf("err = %v (%T), want an *llm.Error", err, err)
			}
			if e.Status != tt.status || e.ProviderCode() != tt.code || e.Provider != llm.ProviderGemini {
				t.Errorf("error = status %d code %q provider %q, want %d %q gemini", e.Status, e.ProviderCode(), e.Provider, tt.status, tt.code)
			}
			if e.Message == "" {
				t.Error("the error has no message, want google.rpc.Status's")
			}
			if (e.Hint > 0) != tt.hint {
				t.Errorf("retry hint = %v, want one: %v", e.Hint, tt.hint)
			}
			if _, ok := errors.AsType[genai.APIError](err); !ok {
				t.Errorf("the SDK did not decode the mock's body into its APIError: %v", err)
			}
		})
	}
}

// fallbackKind is the route fallback err calls for, "" for none.
func fallbackKind(err error) string {
	if e, ok := errors.AsType[interface {
		error
		FallbackKind() string
	}](err); ok {
		return e.FallbackKind()
	}
	return ""
}

func TestGeminiRefusesWhatGenerateContentCannotTake(t *testing.T) {
	googleTestEnv(t)
	client, err := gemini.New(t.Context(), gemini.Options{APIKey: mockKey})
	if err != nil {
		t.Fatal(err)
	}
	hot, wide := 2.5, int64(1)<<40
	for name, cfg := range map[string]llm.Config{
		"a thinking budget":    {ThinkingBudget: 2048, MaxTokens: 4096, Gemini: client},
		"cache_prompt":         {CachePrompt: true, Gemini: client},
		"a temperature over 2": {Temperature: &hot, Gemini: client},
		"a 64-bit seed":        {Seed: &wide, Gemini: client},
		"no client":            {},
	} {
		cfg.Provider, cfg.Model, cfg.Prompt = llm.ProviderGemini, "m", "p"
		if _, err := llm.New(cfg); err == nil {
			t.Errorf("New with %s for gemini succeeded, want an error that says why", name)
		}
	}
	vcfg := llm.Config{Provider: llm.ProviderVertex, Model: "m", Prompt: "p", APIKey: "k", Gemini: client}
	if _, err := llm.New(vcfg); err == nil {
		t.Error("New of a vertex task with an api_key succeeded, want an error naming its credentials")
	}
}

func TestGeminiClientSaysWhatIsMissing(t *testing.T) {
	googleTestEnv(t)
	for name, tt := range map[string]struct {
		opts gemini.Options
		want string
	}{
		"a key":                {gemini.Options{}, "GEMINI_API_KEY"},
		"vertex's project":     {gemini.Options{Vertex: true, Location: "us-central1"}, "project"},
		"vertex with a key":    {gemini.Options{Vertex: true, APIKey: mockKey, Project: "p", Location: "l"}, "not an API key"},
		"vertex's credentials": {gemini.Options{Vertex: true, Project: "p", Location: "global"}, "application default credentials"},
	} {
		_, err := gemini.New(t.Context(), tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New without %s = %v, want an error naming %q", name, err, tt.want)
		}
	}
}

func TestGeminiModelsArePriced(t *testing.T) {
	for model, want := range map[string]float64{
		"gemini-2.5-flash":                 0.30,
		"gemini-2.5-pro":                   1.25,
		"gemini-2.5-flash-lite":            0.10,
		"gemini-2.0-flash-001":             0.10,
		"gemini-2.5-flash-preview-09-2025": 0.30,
	} {
		p, ok := llm.LookupPrice(nil, model)
		if !ok || p.InputPerMTok != want {
			t.Errorf("LookupPrice(%q) = %+v, %v; want input at $%v per million tokens", model, p, ok, want)
		}
	}
}

func TestGeminiThoughtsAndCachedTokensAreCountedAndPriced(t *testing.T) {
	googleTestEnv(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"thinking…","thought":true},{"text":"hola"}]},"finishReason":"STOP"}],
"usageMetadata":{"promptTokenCount":1000,"cachedContentTokenCount":400,"candidatesTokenCount":10,"thoughtsTokenCount":90,"totalTokenCount":1100}}`))
	}))
	t.Cleanup(ts.Close)
	price := llm.Price{InputPerMTok: 1, OutputPerMTok: 10, CachedInputPerMTok: 0.25}
	tk := newTask(t, llm.ProviderGemini, ts.URL, llm.Config{Model: "gemini-2.5-flash", Prompt: "p", Prices: map[string]llm.Price{"gemini-2.5-flash": price}})
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if string(res.Output) != `"hola"` {
		t.Errorf("output = %s, want the answer without its thought", res.Output)
	}
	want := task.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 100, ReasoningTokens: 90}
	if res.Usage != want {
		t.Errorf("usage = %+v, want %+v: thoughts are output, cached tokens inside the input", res.Usage, want)
	}
	if cost := (600*1 + 400*0.25 + 100*10) / 1e6; res.CostUSD != cost {
		t.Errorf("cost = %v, want %v", res.CostUSD, cost)
	}
}

// hostRecorder passes requests to next and records each one's URL.
type hostRecorder struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []string
}

func (h *hostRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.urls = append(h.urls, r.URL.Scheme+"://"+r.URL.Host+r.URL.Path)
	h.mu.Unlock()
	return h.next.RoundTrip(r)
}

// TestVertexCallsGoToTheirLocationsHost: with no endpoint set, a Vertex
// client calls its location's regional host with the location in the
// path, and the global location Vertex's global host. The requests are
// served in-process by the mock (no network).
func TestVertexCallsGoToTheirLocationsHost(t *testing.T) {
	for _, tt := range []struct{ location, want string }{
		{"europe-west4", "https://europe-west4-aiplatform.googleapis.com/v1/projects/mock-project/locations/europe-west4/publishers/google/models/mock-echo:generateContent"},
		{"us-central1", "https://us-central1-aiplatform.googleapis.com/v1/projects/mock-project/locations/us-central1/publishers/google/models/mock-echo:generateContent"},
		{"global", "https://aiplatform.googleapis.com/v1/projects/mock-project/locations/global/publishers/google/models/mock-echo:generateContent"},
	} {
		t.Run(tt.location, func(t *testing.T) {
			googleTestEnv(t)
			rec := &hostRecorder{next: mock.New(mock.Config{}).Transport()}
			client, err := gemini.New(t.Context(), gemini.Options{Vertex: true, Project: "mock-project", Location: tt.location, Credentials: staticToken("ya29.mock-token")})
			if err != nil {
				t.Fatalf("gemini.New: %v", err)
			}
			tk, err := llm.New(llm.Config{Provider: llm.ProviderVertex, Gemini: client, Model: mock.ModelEcho, Prompt: "Say {{.n}}",
				HTTPClient: &http.Client{Transport: rec}})
			if err != nil {
				t.Fatalf("llm.New: %v", err)
			}
			if _, err := tk.Run(t.Context(), item(map[string]any{"n": "hi"})); err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(rec.urls) != 1 || rec.urls[0] != tt.want {
				t.Errorf("requests to %v, want one to %s", rec.urls, tt.want)
			}
		})
	}
}

// TestVertexCallWithoutATokenIsUnauthenticatedAndFatal: a Vertex call
// whose credentials gave no token is Vertex AI's 401 UNAUTHENTICATED (the
// mock answers as Google does), fatal.
func TestVertexCallWithoutATokenIsUnauthenticatedAndFatal(t *testing.T) {
	googleTestEnv(t)
	_, url := geminiMock(t, mock.Config{})
	client, err := gemini.New(t.Context(), gemini.Options{Endpoint: url, Vertex: true, Project: "mock-project", Location: "us-central1", Credentials: staticToken("")})
	if err != nil {
		t.Fatalf("gemini.New: %v", err)
	}
	tk, err := llm.New(llm.Config{Provider: llm.ProviderVertex, Gemini: client, Model: mock.ModelEcho, Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Run(t.Context(), item(nil))
	e, ok := errors.AsType[*llm.Error](err)
	if !ok || e.Status != 401 || e.ProviderCode() != "UNAUTHENTICATED" {
		t.Fatalf("err = %v; want a 401 UNAUTHENTICATED *llm.Error", err)
	}
	if c := classify.Classify(err).Class; c != classify.Fatal {
		t.Errorf("classified %v, want fatal", c)
	}
}
