package bedrock_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/bedrock"
)

// newTask builds an llm task on provider bedrock whose Client calls url in
// region.
func newTask(t *testing.T, url, region string, cfg llm.Config) *llm.Task {
	t.Helper()
	client, err := bedrock.New(t.Context(), bedrock.Options{Region: region, Endpoint: url})
	if err != nil {
		t.Fatalf("bedrock.New: %v", err)
	}
	cfg.Provider, cfg.Bedrock = llm.ProviderBedrock, client
	tk, err := llm.New(cfg)
	if err != nil {
		t.Fatalf("llm.New: %v", err)
	}
	return tk
}

func item(fields map[string]any) task.Item { return task.Item{Idx: 3, Fields: fields} }

const fittingSchema = `{"type":"object","properties":{"es":{"type":"string"},"n":{"type":["integer","null"]}},"required":["es","n"],"additionalProperties":false}`

// awsTestCredentials gives the AWS SDK static credentials and a region
// through the environment, and keeps it away from this machine's shared
// files, profiles and instance metadata: nothing but the loopback mock is
// ever reached.
func awsTestCredentials(t *testing.T) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIAMOCKMOCKMOCKMOCK")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "mock-secret-access-key")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/no-config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/no-credentials")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// bedrockMock serves the mock's Bedrock dialect on loopback and returns
// its URL.
func bedrockMock(t *testing.T, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	srv := mock.New(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

func TestBedrockAnswerCarriesTextUsageCostAndStopReason(t *testing.T) {
	awsTestCredentials(t)
	srv, url := bedrockMock(t, mock.Config{Record: true})
	price := llm.Price{InputPerMTok: 1, OutputPerMTok: 2}
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelEcho,
		System: "Be brief.", Prompt: "Say {{.n}}", Prices: map[string]llm.Price{mock.ModelEcho: price}})
	res, err := tk.Run(t.Context(), item(map[string]any{"n": "hello there"}))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var out string
	if err := json.Unmarshal(res.Output, &out); err != nil || out != "Say hello there" {
		t.Errorf("output = %s, want the echoed prompt", res.Output)
	}
	if res.FinishReason != "end_turn" {
		t.Errorf("finish reason = %q, want end_turn", res.FinishReason)
	}
	if res.Usage.InputTokens <= 0 || res.Usage.OutputTokens <= 0 {
		t.Errorf("usage = %+v, want the answer's inputTokens and outputTokens", res.Usage)
	}
	if want := price.Cost(res.Usage); res.CostUSD != want || want == 0 {
		t.Errorf("cost = %v, want %v from the usage", res.CostUSD, want)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 {
		t.Fatalf("the mock saw %d requests, want 1 (the SDK's retries are off)", len(reqs))
	}
	r := reqs[0]
	if r.Path != "/model/mock-echo/converse" || r.Model != mock.ModelEcho {
		t.Errorf("request to %s for model %q, want /model/mock-echo/converse", r.Path, r.Model)
	}
	if len(r.Messages) != 2 || r.Messages[0].Role != "system" || r.Messages[0].Content != "Be brief." {
		t.Errorf("messages = %+v, want the system block and the prompt", r.Messages)
	}
}

func TestBedrockSchemaIsSentAsAForcedToolAndItsInputIsTheOutput(t *testing.T) {
	awsTestCredentials(t)
	_, url := bedrockMock(t, mock.Config{})
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelEcho,
		Prompt: "Translate hi", Output: llm.OutputJSON, Schema: json.RawMessage(fittingSchema)})
	if tk.Structured().Mode != llm.ModeTool {
		t.Fatalf("structured mode = %v, want a forced tool", tk.Structured())
	}
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var got map[string]any
	if err := json.Unmarshal(res.Output, &got); err != nil || got["es"] == nil {
		t.Errorf("output = %s, want the tool's input, shaped by the schema", res.Output)
	}
	if res.FinishReason != "end_turn" {
		t.Errorf("finish reason = %q, want the forced tool's call taken as a finished answer", res.FinishReason)
	}
}

// TestBedrockErrorsAndStopReasonsAreClassifiedTruthfully drives each of
// the mock's Bedrock faults through the real AWS SDK: the SDK decodes the
// mock's answer into its typed exception, and tenax classifies it as
// docs/providers.md says.
func TestBedrockErrorsAndStopReasonsAreClassifiedTruthfully(t *testing.T) {
	tests := []struct {
		name      string
		faults    mock.Faults
		model     string
		status    int
		exception string // x-amzn-ErrorType, and the SDK's ErrorCode
		typed     func(error) bool
		class     classify.Class
		fallback  string
		finish    string // for an answer's stop reason
		words     string
	}{
		{name: "throttling", faults: mock.Faults{RateLimit: 1}, status: 429, exception: "ThrottlingException",
			typed: as[*types.ThrottlingException], class: classify.Retryable},
		{name: "internal server", faults: mock.Faults{Server: 1}, status: 500, exception: "InternalServerException",
			typed: as[*types.InternalServerException], class: classify.Retryable},
		{name: "service unavailable", faults: mock.Faults{Overloaded: 1}, status: 503, exception: "ServiceUnavailableException",
			typed: as[*types.ServiceUnavailableException], class: classify.Retryable},
		{name: "model not ready", faults: mock.Faults{ModelNotReady: 1}, status: 429, exception: "ModelNotReadyException",
			typed: as[*types.ModelNotReadyException], class: classify.Retryable},
		{name: "model timeout", faults: mock.Faults{ModelTimeout: 1}, status: 408, exception: "ModelTimeoutException",
			typed: as[*types.ModelTimeoutException], class: classify.Retryable},
		{name: "access denied", faults: mock.Faults{Forbidden: 1}, status: 403, exception: "AccessDeniedException",
			typed: as[*types.AccessDeniedException], class: classify.Fatal},
		{name: "wrong model id", model: "anthropic.claude-nonexistent-v1:0", status: 404, exception: "ResourceNotFoundException",
			typed: as[*types.ResourceNotFoundException], class: classify.Fatal},
		{name: "unrecognized client", faults: mock.Faults{Auth: 1}, status: 403, exception: "UnrecognizedClientException",
			typed: isAPIError("UnrecognizedClientException"), class: classify.Fatal},
		{name: "validation", faults: mock.Faults{TooLarge: 1}, status: 413, exception: "ValidationException",
			typed: as[*types.ValidationException], class: classify.Item},
		{name: "input too long", faults: mock.Faults{ContextLength: 1}, status: 400, exception: "ValidationException",
			typed: as[*types.ValidationException], class: classify.Item, fallback: "context_window"},
		{name: "max tokens", faults: mock.Faults{Truncated: 1}, class: classify.Invalid, finish: "max_tokens", words: "the answer was cut off"},
		{name: "guardrail intervened", faults: mock.Faults{Refusal: 1}, class: classify.Item, fallback: "content_filter",
			finish: "guardrail_intervened", words: "Sorry, the model cannot answer this question."},
		{name: "content filtered", faults: mock.Faults{ContentFilter: 1}, class: classify.Item, fallback: "content_filter",
			finish: "content_filtered", words: "content filter"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			awsTestCredentials(t)
			srv, url := bedrockMock(t, mock.Config{Faults: tt.faults})
			model := tt.model
			if model == "" {
				model = mock.ModelEcho
			}
			tk := newTask(t, url, "eu-west-1", llm.Config{Model: model, Prompt: "Tell me about item {{.n}} in some detail", MaxTokens: 64})
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
			var e *llm.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want an *Error", err, err)
			}
			if e.Status != tt.status || e.Code != tt.exception || e.Provider != llm.ProviderBedrock {
				t.Errorf("error = status %d code %q provider %q, want %d %q bedrock", e.Status, e.Code, e.Provider, tt.status, tt.exception)
			}
			if e.Message == "" || e.ID == "" {
				t.Errorf("error message %q, request id %q: want the body's message and x-amzn-RequestId", e.Message, e.ID)
			}
			if !tt.typed(err) {
				t.Errorf("the SDK did not decode the mock's answer into its %s: %v", tt.exception, err)
			}
		})
	}
}

func TestBedrockThrottlingIsTheRateLimit(t *testing.T) {
	awsTestCredentials(t)
	_, url := bedrockMock(t, mock.Config{Faults: mock.Faults{RateLimit: 1}})
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelEcho, Prompt: "p"})
	_, err := tk.Run(t.Context(), item(nil))
	var sc classify.StatusCoder
	if !errors.As(err, &sc) || sc.HTTPStatus() != http.StatusTooManyRequests {
		t.Fatalf("err = %v, want status 429, which the engine's cooldown reads", err)
	}
	if d := classify.Classify(err); !strings.Contains(d.Reason, "ThrottlingException") {
		t.Errorf("reason = %q, want the exception named", d.Reason)
	}
}

func TestBedrockRefusesWhatConverseCannotTake(t *testing.T) {
	awsTestCredentials(t)
	client, err := bedrock.New(t.Context(), bedrock.Options{Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(1)
	for name, cfg := range map[string]llm.Config{
		"an api key":        {APIKey: "sk-1", Bedrock: client},
		"a seed":            {Seed: &seed, Bedrock: client},
		"a thinking budget": {ThinkingBudget: 2048, MaxTokens: 4096, Bedrock: client},
		"cache_prompt":      {CachePrompt: true, Bedrock: client},
		"no client":         {},
	} {
		cfg.Provider, cfg.Model, cfg.Prompt = llm.ProviderBedrock, "m", "p"
		if _, err := llm.New(cfg); err == nil {
			t.Errorf("New with %s for bedrock succeeded, want an error that says why", name)
		}
	}
}

func TestBedrockWithoutARegionSaysWhereToSetOne(t *testing.T) {
	awsTestCredentials(t)
	_, err := bedrock.New(t.Context(), bedrock.Options{})
	if err == nil || !strings.Contains(err.Error(), "region") {
		t.Fatalf("New without a region = %v, want an error naming the region", err)
	}
}

// as reports whether err's chain holds a T.
func as[T error](err error) bool {
	_, ok := errors.AsType[T](err)
	return ok
}

// isAPIError reports whether err's chain holds a smithy API error of code.
func isAPIError(code string) func(error) bool {
	return func(err error) bool {
		e, ok := errors.AsType[smithy.APIError](err)
		return ok && e.ErrorCode() == code
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

func TestBedrockModelIdsAndInferenceProfilesArePriced(t *testing.T) {
	for model, want := range map[string]float64{
		"anthropic.claude-3-5-haiku-20241022-v1:0":         0.80,
		"us.anthropic.claude-sonnet-4-20250514-v1:0":       3.00,
		"eu.anthropic.claude-haiku-4-5-20251001-v1:0":      1.00,
		"amazon.nova-lite-v1:0":                            0.06,
		"global.anthropic.claude-sonnet-4-5-20250929-v1:0": 3.00,
	} {
		p, ok := llm.LookupPrice(nil, model)
		if !ok || p.InputPerMTok != want {
			t.Errorf("LookupPrice(%q) = %+v, %v; want input at $%v per million tokens", model, p, ok, want)
		}
	}
	if _, ok := llm.LookupPrice(nil, "us.nonexistent-model-v1:0"); ok {
		t.Error("an unknown inference profile was priced")
	}
}

// TestTheMockChecksTheSigV4SignatureAsAWSDoes: a mock given credentials
// takes a call the SDK signed with the right secret for its region, over
// the loopback socket and over a model id with a ':' that the signature
// escapes twice; another secret is 403 InvalidSignatureException, an
// unknown key id 403 UnrecognizedClientException, another region's scope
// 403 InvalidSignatureException naming it: each fatal, as at AWS.
func TestTheMockChecksTheSigV4SignatureAsAWSDoes(t *testing.T) {
	awsTestCredentials(t)
	tests := []struct {
		name, keyID, secret, region, model string
		code                               string // "" for success
	}{
		{name: "right secret", keyID: "AKIAMOCKMOCKMOCKMOCK", secret: "mock-secret-access-key", region: "us-east-1", model: mock.ModelEcho},
		{name: "model id escaped twice", keyID: "AKIAMOCKMOCKMOCKMOCK", secret: "mock-secret-access-key", region: "us-east-1", model: "anthropic.claude:0"},
		{name: "tampered secret", keyID: "AKIAMOCKMOCKMOCKMOCK", secret: "mock-secret-access-kez", region: "us-east-1", model: mock.ModelEcho, code: "InvalidSignatureException"},
		{name: "unknown key id", keyID: "AKIAUNKNOWN000000000", secret: "mock-secret-access-key", region: "us-east-1", model: mock.ModelEcho, code: "UnrecognizedClientException"},
		{name: "another region", keyID: "AKIAMOCKMOCKMOCKMOCK", secret: "mock-secret-access-key", region: "eu-west-1", model: mock.ModelEcho, code: "InvalidSignatureException"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("AWS_ACCESS_KEY_ID", tc.keyID)
			t.Setenv("AWS_SECRET_ACCESS_KEY", tc.secret)
			_, url := bedrockMock(t, mock.Config{AWSRegion: "us-east-1",
				AWSCredentials: map[string]string{"AKIAMOCKMOCKMOCKMOCK": "mock-secret-access-key"}})
			tk := newTask(t, url, tc.region, llm.Config{Model: tc.model, Prompt: "Say {{.n}}"})
			_, err := tk.Run(t.Context(), item(map[string]any{"n": "hi"}))
			var le *llm.Error
			switch {
			case tc.code == "" && tc.model == mock.ModelEcho && err != nil:
				t.Fatalf("Run: %v; want the signed call answered", err)
			case tc.code == "" && tc.model != mock.ModelEcho:
				// The mock knows no such model: past the signature, its 404.
				if !errors.As(err, &le) || le.Code != "ResourceNotFoundException" {
					t.Fatalf("Run: %v; want the signature taken and the unknown model's 404", err)
				}
			case tc.code != "":
				if !errors.As(err, &le) || le.Code != tc.code || le.Status != 403 || classify.Classify(err).Class != classify.Fatal {
					t.Fatalf("Run: %v; want 403 %s, fatal", err, tc.code)
				}
			}
		})
	}
}
