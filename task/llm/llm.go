package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// The providers a Config may name.
const (
	// ProviderOpenAI is OpenAI's chat completions API, or any server that
	// speaks it (set BaseURL).
	ProviderOpenAI = "openai"
	// ProviderAnthropic is Anthropic's messages API.
	ProviderAnthropic = "anthropic"
	// ProviderMock is the simulated provider of package mock, spoken to in
	// OpenAI's wire format.
	ProviderMock = "mock"
)

// The output modes a Config may name.
const (
	// OutputText makes the answer's text the output, as a JSON string.
	OutputText = "text"
	// OutputJSON requires the answer to be JSON (a ```json fence is
	// stripped) and makes that JSON the output.
	OutputJSON = "json"
)

// Defaults of Config fields left zero.
const (
	// DefaultTimeout is the per-attempt timeout when Config.Timeout is 0.
	DefaultTimeout = 2 * time.Minute
	// DefaultMaxTokens is max_tokens when Config.MaxTokens is 0, for models
	// that answer without reasoning first.
	DefaultMaxTokens = 1024
	// DefaultAnthropicMaxTokens is Anthropic's max_tokens (which the API
	// requires) when Config.MaxTokens is 0 and thinking is off.
	DefaultAnthropicMaxTokens = DefaultMaxTokens
	// DefaultReasoningMaxTokens is max_completion_tokens for OpenAI's
	// reasoning models (o1, o3, o4, gpt-5) when Config.MaxTokens is 0:
	// their hidden reasoning counts against it, and 1024 can be spent on
	// reasoning alone, leaving an empty answer that is re-asked at full
	// cost.
	DefaultReasoningMaxTokens = 16384
	// MinThinkingBudget is the least budget Anthropic accepts for
	// extended thinking.
	MinThinkingBudget = 1024
	// MockBaseURL is provider mock's base URL when Config.BaseURL is "";
	// only an in-process transport can reach it.
	MockBaseURL = "http://mock.invalid/v1"
	// MockAPIKey is provider mock's key when Config.APIKey is "".
	MockAPIKey = "mock-key"
	// DefaultAzureAPIVersion is Azure OpenAI's api-version when
	// Config.APIVersion is "".
	DefaultAzureAPIVersion = "2024-10-21"

	openAIBaseURL    = "https://api.openai.com/v1/"
	anthropicBaseURL = "https://api.anthropic.com/"
)

// ProviderAzure is Azure OpenAI: OpenAI's wire format at a resource's
// endpoint (BaseURL), the deployment named by Model, an api-version query
// parameter, and an api-key header (or an Entra ID bearer token).
const ProviderAzure = "azure"

// Config describes an LLM task. Provider, Model and Prompt are required
// (Model defaults to mock-echo for provider mock).
type Config struct {
	// Provider is "openai" (any OpenAI-compatible server), "anthropic",
	// "azure", "bedrock", "gemini", "vertex" or "mock".
	Provider string
	// BaseURL is the API's base URL; "" means the provider's own
	// (https://api.openai.com/v1, https://api.anthropic.com, MockBaseURL).
	// Its query (a gateway's ?key=…) is sent with every request, and its
	// values are hidden in errors like the API key.
	// For azure it is the resource's endpoint
	// (https://NAME.openai.azure.com), required.
	BaseURL string
	// APIKey authenticates the calls. "" means $OPENAI_API_KEY,
	// $ANTHROPIC_API_KEY or $AZURE_OPENAI_API_KEY, and MockAPIKey for
	// provider mock. It never appears in errors, results or cache keys.
	APIKey string
	// AzureADToken is an Entra ID (Azure AD) access token sent as a bearer
	// token instead of an api-key; "" means $AZURE_OPENAI_AD_TOKEN when no
	// key is set. Azure only.
	AzureADToken string
	// APIVersion is Azure's api-version; "" means DefaultAzureAPIVersion.
	APIVersion string
	// Bedrock makes provider bedrock's calls (package task/llm/bedrock's
	// Client, which holds the region, the endpoint and the credentials);
	// required for bedrock, ignored otherwise. BaseURL is not read for
	// bedrock: the Client has its endpoint.
	Bedrock Converser
	// Gemini makes provider gemini's and vertex's calls (package
	// task/llm/gemini's Client, which holds the backend, the endpoint and
	// the credentials); required for them, ignored otherwise. BaseURL is
	// not read for them: the Client has its endpoint. APIKey, for gemini,
	// is only redacted from errors: the Client sends its own.
	Gemini Generator
	// Vertex, for provider anthropic, sends the calls to Claude on Google
	// Cloud's Vertex AI (its project, location and Google credentials)
	// instead of Anthropic's API; nil for Anthropic's API. BaseURL then
	// defaults to the location's host (VertexBaseURL) and APIKey must be
	// "": $ANTHROPIC_API_KEY is not read.
	Vertex *AnthropicVertex
	// Model is the model to call; for azure, the deployment's name.
	Model string
	// System and Prompt are text/template templates rendered with the
	// item's fields; a field the template names but the item lacks is an
	// error (missingkey=error). System is optional.
	System, Prompt string
	// MaxTokens caps the answer, reasoning and thinking included; 0 means
	// DefaultMaxTokens, DefaultReasoningMaxTokens for OpenAI's reasoning
	// models, ThinkingBudget+DefaultMaxTokens with thinking on.
	MaxTokens int
	// MaxTokensCeiling lets the re-ask of an answer cut off at MaxTokens
	// double max_tokens at each such re-ask, up to this ceiling; 0 never
	// raises it.
	MaxTokensCeiling int
	// Temperature and TopP are sent when set.
	Temperature, TopP *float64
	// Stop lists stop sequences (OpenAI allows 4).
	Stop []string
	// Seed asks OpenAI for repeatable sampling; Anthropic has none.
	Seed *int64
	// ReasoningEffort is OpenAI's reasoning_effort ("minimal", "low",
	// "medium", "high") or Anthropic's output_config.effort ("low",
	// "medium", "high").
	ReasoningEffort string
	// ThinkingBudget turns on Anthropic's extended thinking with this many
	// tokens (at least MinThinkingBudget, less than MaxTokens). Thinking
	// blocks are kept out of the output; their tokens count in the usage.
	ThinkingBudget int
	// CachePrompt marks the system prompt for Anthropic's prompt cache
	// (cache_control ephemeral). OpenAI caches long prompts by itself.
	CachePrompt bool
	// Headers are added to every request (an OpenAI-compatible gateway's
	// own headers). They cannot replace the authentication headers.
	Headers map[string]string
	// ExtraBody adds fields to the top level of every request body, for
	// servers with options of their own (vLLM's guided_json, Ollama's
	// options). A field the task also sets is replaced.
	ExtraBody map[string]any
	// Output is "text" (the default) or "json".
	Output string
	// Schema is the JSON Schema the output must match
	// (validate.json_schema), sent to the provider as structured output
	// when the provider can take it (see Structured). The output is
	// validated locally all the same.
	Schema json.RawMessage
	// NoHeal says the heal loop is off: an answer cut off at max_tokens is
	// then an item failure rather than invalid output to re-ask.
	NoHeal bool
	// Timeout bounds one attempt, the whole read of the answer included;
	// 0 means DefaultTimeout.
	Timeout time.Duration
	// MaxAnswerBytes bounds a successful response's body, counted after
	// decompression: a longer one fails the attempt with a
	// *task.AnswerTooLargeError marked classify.Item, read no further
	// than the bound. 0 means task.DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// HTTPClient sends the requests; nil means a client whose transport
	// keeps Connections idle connections per host and speaks HTTP/2 where
	// the provider offers it. For provider mock without a BaseURL, nil
	// means a fresh in-process mock with no faults; pass
	// mock.Server.Client() to choose its faults.
	HTTPClient *http.Client
	// ExactTokens counts each prompt to an OpenAI model with the model's
	// tokenizer (tiktoken, built in) for the call's estimate: exact, but
	// about 0.15 ms of CPU for a prompt of 50 tokens, as much again as the
	// rest of the call. Off, prompts are estimated by kinds of characters
	// (within 10% of the tokenizer for English and Chinese). Either is
	// scaled to the prompt tokens the provider reports. A job turns it on
	// when tokens_per_minute, budget.max_tokens or
	// batch.max_enqueued_tokens run on the estimates.
	ExactTokens bool
	// Connections is the most calls the task will have in flight at once
	// (a job's concurrency.max): the client New builds when HTTPClient is
	// nil keeps that many idle connections per host and opens no more,
	// further calls waiting for one. 0 means DefaultConnections idle and
	// no cap.
	Connections int
	// Prices extends or overrides the built-in price table (see
	// DefaultPrices), keyed by model name or model name prefix.
	Prices map[string]Price
	// OnRateLimit, when set, receives the rate limit headers of every
	// response, success or error. It is called from Run's goroutine and
	// must be safe for concurrent use.
	OnRateLimit func(RateLimit)
	// Cache, when set, serves repeated calls without calling the
	// provider and keeps every good output.
	Cache Cache
	// Store sends each agent step (Next with tags: NextStored) with
	// store: true and the step's tags as metadata, so that the provider
	// keeps the answer and Stored finds it again: OpenAI's stored chat
	// completions, on providers openai and azure. It keeps the items'
	// conversations at the provider, so it is off unless asked for; New
	// refuses it on other providers.
	Store bool
}

// Task calls an LLM once per attempt. It is safe for concurrent use; its
// configuration is fixed when New builds it.
type Task struct {
	cfg        Config     // with defaults applied
	wire       string     // the wire format: ProviderOpenAI, ProviderAnthropic or ProviderBedrock
	endpoint   string     // cfg.BaseURL without its query
	query      url.Values // cfg.BaseURL's query, sent with every request
	secrets    []string   // what errors must never show: see redact
	system     *task.Template
	prompt     *task.Template
	price      Price
	priced     bool
	maxTokens  int // as sent before any raise; 0 for none
	structured Structured
	schema     schemaDoc // the decoded Schema, nil without one
	extra      map[string]any
	counter    tokenCounter
	scale      *tokenScale
	chat       *chatRequest     // the OpenAI wire's fixed request fields
	messages   *messagesRequest // the Anthropic wire's fixed request fields
	send       func(ctx context.Context, c *call, cap *capture) (reply, error)
}

// Message is one message of a conversation.
type Message struct {
	Role    string `json:"role"` // system, user or assistant
	Content string `json:"content"`
}

// reply is what a provider's answer says, in either wire format.
type reply struct {
	content string
	refusal string
	finish  string // the provider's finish_reason or stop_reason
	filter  string // Azure's content filter verdict, when it filtered
	usage   task.Usage
	calls   []agent.Call // the tool calls of an agent step's answer
	// toolAnswer: content is the output tool's input (ModeTool).
	toolAnswer bool
}

// New checks cfg, parses its templates and builds the provider's client.
//
// Long: provider, transport and SDK options wired in one place, a case per provider.
func New(cfg Config) (*Task, error) {
	t := &Task{}
	switch cfg.Provider {
	case ProviderOpenAI:
		t.wire = ProviderOpenAI
		cfg.BaseURL = cmpOr(cfg.BaseURL, openAIBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, os.Getenv("OPENAI_API_KEY"))
	case ProviderAzure:
		t.wire = ProviderOpenAI
		if cfg.BaseURL == "" {
			return nil, errors.New("llm: azure needs base_url: the resource's endpoint, https://NAME.openai.azure.com")
		}
		cfg.APIVersion = cmpOr(cfg.APIVersion, DefaultAzureAPIVersion)
		if cfg.APIKey == "" && cfg.AzureADToken == "" {
			cfg.APIKey = os.Getenv("AZURE_OPENAI_API_KEY")
			if cfg.APIKey == "" {
				cfg.AzureADToken = os.Getenv("AZURE_OPENAI_AD_TOKEN")
			}
		}
		if cfg.APIKey != "" && cfg.AzureADToken != "" {
			return nil, errors.New("llm: azure takes an api_key or an Entra ID token, not both")
		}
	case ProviderAnthropic:
		t.wire = ProviderAnthropic
		if v := cfg.Vertex; v != nil {
			if err := v.check(); err != nil {
				return nil, err
			}
			if cfg.APIKey != "" {
				return nil, errors.New("llm: Claude on Vertex AI authenticates with Google credentials, not an api_key")
			}
			cfg.BaseURL = cmpOr(cfg.BaseURL, VertexBaseURL(v.Location))
			break
		}
		cfg.BaseURL = cmpOr(cfg.BaseURL, anthropicBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, os.Getenv("ANTHROPIC_API_KEY"))
	case ProviderBedrock:
		t.wire = ProviderBedrock
	case ProviderGemini:
		t.wire = ProviderGemini
		cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("GOOGLE_API_KEY"), os.Getenv("GEMINI_API_KEY"))
	case ProviderVertex:
		t.wire = ProviderGemini
	case ProviderMock:
		t.wire = ProviderOpenAI
		if cfg.HTTPClient == nil && cfg.BaseURL == "" {
			cfg.HTTPClient = mock.New(mock.Config{}).Client()
		}
		cfg.BaseURL = cmpOr(cfg.BaseURL, MockBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, MockAPIKey)
		cfg.Model = cmpOr(cfg.Model, mock.ModelEcho)
	default:
		return nil, fmt.Errorf("llm: unknown provider %q (want openai, anthropic, azure, bedrock, gemini, vertex or mock)", cfg.Provider)
	}
	// The SDKs resolve request paths against the base URL and drop its
	// query: a gateway's ?gwtoken=… is sent as a query of every request
	// instead, and kept out of the cache key.
	u, err := url.Parse(cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("llm: base_url: %w", err)
	}
	t.query = u.Query()
	u.RawQuery, u.ForceQuery = "", false
	t.endpoint = u.String()
	t.secrets = []string{cfg.APIKey, cfg.AzureADToken}
	for _, values := range t.query {
		for _, v := range values {
			if len(v) >= minQuerySecret {
				t.secrets = append(t.secrets, v, url.QueryEscape(v))
			}
		}
	}
	if cfg.Provider != ProviderAzure && cfg.AzureADToken != "" {
		return nil, errors.New("llm: an Entra ID token is for provider azure only")
	}
	if cfg.Provider != ProviderAnthropic && cfg.Vertex != nil {
		return nil, errors.New("llm: Config.Vertex is Claude on Vertex AI, for provider anthropic only (Gemini on Vertex AI is provider vertex)")
	}
	if cfg.Model == "" {
		return nil, errors.New("llm: model is required")
	}
	if cfg.APIKey == "" && cfg.AzureADToken == "" && t.wire != ProviderBedrock && t.wire != ProviderGemini && cfg.Vertex == nil {
		env := map[string]string{ProviderOpenAI: "$OPENAI_API_KEY", ProviderAnthropic: "$ANTHROPIC_API_KEY",
			ProviderAzure: "$AZURE_OPENAI_API_KEY or $AZURE_OPENAI_AD_TOKEN"}[cfg.Provider]
		return nil, fmt.Errorf("llm: no API key for %s: set api_key or %s", cfg.Provider, env)
	}
	if strings.TrimSpace(cfg.Prompt) == "" {
		return nil, errors.New("llm: prompt is required")
	}
	cfg.Output = cmpOr(cfg.Output, OutputText)
	if cfg.Output != OutputText && cfg.Output != OutputJSON {
		return nil, fmt.Errorf("llm: unknown output %q (want text or json)", cfg.Output)
	}
	if err := checkSampling(cfg, t.wire); err != nil {
		return nil, err
	}
	if err := checkStore(cfg); err != nil {
		return nil, err
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: timeout is %v, want a positive duration or 0 for the default", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.MaxAnswerBytes < 0 {
		return nil, fmt.Errorf("llm: max_answer_bytes is %d, want a positive number or 0 for the default", cfg.MaxAnswerBytes)
	}
	cfg.MaxAnswerBytes = cmp.Or(cfg.MaxAnswerBytes, task.DefaultMaxAnswerBytes)
	if cfg.Connections < 0 {
		return nil, fmt.Errorf("llm: connections is %d, want a positive number or 0 for the default", cfg.Connections)
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{
			Transport:     newTransport(cmp.Or(cfg.Connections, DefaultConnections), cfg.Connections),
			CheckRedirect: credentialGuard(cfg.Headers),
		}
	}
	if t.prompt, err = parseTemplate("prompt", cfg.Prompt); err != nil {
		return nil, err
	}
	if cfg.System != "" {
		if t.system, err = parseTemplate("system", cfg.System); err != nil {
			return nil, err
		}
	}
	t.maxTokens = defaultMaxTokens(cfg, t.wire)
	if cfg.ThinkingBudget > 0 && cfg.ThinkingBudget >= t.maxTokens {
		return nil, fmt.Errorf("llm: thinking budget %d must be less than max_tokens %d, which holds the thinking and the answer", cfg.ThinkingBudget, t.maxTokens)
	}
	if len(cfg.Schema) > 0 {
		if t.schema, err = decodeSchema(cfg.Schema); err != nil {
			return nil, err
		}
	}
	t.structured = chooseStructured(cfg, t.wire, t.schema)
	t.extra = callExtra(cfg, t.structured)
	t.price, t.priced = LookupPrice(cfg.Prices, cfg.Model)
	t.counter = newTokenCounter(t.wire, cfg.Model, cfg.ExactTokens)
	t.scale = &tokenScale{}
	t.cfg = cfg
	switch t.wire {
	case ProviderBedrock:
		t.send = t.bedrockSender()
	case ProviderGemini:
		t.send = t.geminiSender()
	case ProviderAnthropic:
		if t.messages, err = t.newMessagesRequest(); err != nil {
			return nil, err
		}
		t.send = t.anthropicSender()
	default:
		if t.chat, err = t.newChatRequest(); err != nil {
			return nil, err
		}
		t.send = t.openAISender()
	}
	return t, nil
}

// credentialGuard returns a CheckRedirect that follows at most 10
// redirects and, when one leaves the first request's host, drops the
// credentials and the spec's headers: net/http itself drops only
// Authorization and cookies, so Anthropic's x-api-key, Azure's api-key and
// a gateway header filled from ${TOKEN} would reach the other host.
func credentialGuard(headers map[string]string) func(*http.Request, []*http.Request) error {
	names := []string{"X-Api-Key", "Api-Key", "Authorization", "Referer"}
	for name := range headers {
		names = append(names, name)
	}
	return func(req *http.Request, via []*http.Request) error {
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		if !strings.EqualFold(req.URL.Host, via[0].URL.Host) {
			for _, name := range names {
				req.Header.Del(name)
			}
		}
		return nil
	}
}

// checkSampling checks the sampling and reasoning settings against what
// the wire format accepts.
func checkSampling(cfg Config, wire string) error {
	if cfg.MaxTokens < 0 {
		return fmt.Errorf("llm: max_tokens is %d, want a positive number or 0 for the default", cfg.MaxTokens)
	}
	if cfg.MaxTokensCeiling < 0 || cfg.MaxTokensCeiling > 0 && cfg.MaxTokensCeiling < cfg.MaxTokens {
		return fmt.Errorf("llm: max_tokens_ceiling %d is below max_tokens %d", cfg.MaxTokensCeiling, cfg.MaxTokens)
	}
	for name, v := range map[string]*float64{"temperature": cfg.Temperature, "top_p": cfg.TopP} {
		if v != nil && (math.IsNaN(*v) || *v < 0 || math.IsInf(*v, 0)) {
			return fmt.Errorf("llm: %s is %v, want a number from 0", name, *v)
		}
	}
	if cfg.TopP != nil && *cfg.TopP > 1 {
		return fmt.Errorf("llm: top_p is %v, want a number from 0 to 1", *cfg.TopP)
	}
	for i, s := range cfg.Stop {
		if s == "" {
			return fmt.Errorf("llm: stop[%d] is empty", i)
		}
	}
	switch wire {
	case ProviderBedrock:
		return checkBedrockSampling(cfg)
	case ProviderGemini:
		return checkGeminiSampling(cfg)
	case ProviderAnthropic:
		if cfg.Seed != nil {
			return errors.New("llm: anthropic has no seed")
		}
		if e := cfg.ReasoningEffort; e != "" && e != "low" && e != "medium" && e != "high" {
			return fmt.Errorf("llm: reasoning_effort %q: anthropic's effort is low, medium or high", e)
		}
		if cfg.ThinkingBudget != 0 && cfg.ThinkingBudget < MinThinkingBudget {
			return fmt.Errorf("llm: thinking budget %d is below anthropic's minimum of %d", cfg.ThinkingBudget, MinThinkingBudget)
		}
		if cfg.ThinkingBudget > 0 && (cfg.Temperature != nil && *cfg.Temperature != 1 || cfg.TopP != nil && *cfg.TopP < 0.95) {
			return errors.New("llm: extended thinking takes no temperature (other than 1) and no top_p below 0.95")
		}
	default:
		if cfg.ThinkingBudget != 0 {
			return errors.New("llm: a thinking budget is anthropic's; OpenAI reasoning models take reasoning_effort")
		}
		if cfg.CachePrompt {
			return errors.New("llm: cache_prompt is anthropic's; OpenAI caches long prompts by itself")
		}
		switch cfg.ReasoningEffort {
		case "", "none", "minimal", "low", "medium", "high", "xhigh":
		default:
			return fmt.Errorf("llm: reasoning_effort %q: want minimal, low, medium or high", cfg.ReasoningEffort)
		}
	}
	return nil
}

// defaultMaxTokens is max_tokens as sent when no re-ask raised it: the
// configured one, else a default that leaves room for the answer after
// reasoning or thinking. 0 (OpenAI wire, nothing set) sends none.
func defaultMaxTokens(cfg Config, wire string) int {
	switch {
	case cfg.MaxTokens > 0:
		return cfg.MaxTokens
	case cfg.ThinkingBudget > 0:
		return cfg.ThinkingBudget + DefaultMaxTokens
	case wire == ProviderOpenAI && reasoningModel(cfg.Model):
		return DefaultReasoningMaxTokens
	}
	return DefaultMaxTokens
}

// callExtra is what shapes the answer beyond Call's own fields, for the
// cache key; nil when nothing does, so keys made before these settings
// existed stay valid.
func callExtra(cfg Config, st Structured) map[string]any {
	m := map[string]any{}
	if cfg.TopP != nil {
		m["top_p"] = strconv.FormatFloat(*cfg.TopP, 'g', -1, 64)
	}
	if len(cfg.Stop) > 0 {
		m["stop"] = cfg.Stop
	}
	if cfg.Seed != nil {
		m["seed"] = *cfg.Seed
	}
	if cfg.ReasoningEffort != "" {
		m["reasoning_effort"] = cfg.ReasoningEffort
	}
	if cfg.ThinkingBudget > 0 {
		m["thinking_budget"] = cfg.ThinkingBudget
	}
	if len(cfg.ExtraBody) > 0 {
		m["extra_body"] = cfg.ExtraBody
	}
	if st.Mode != ModeText && st.Mode != ModeJSONObject {
		m["structured"] = st.Mode
		m["schema"] = json.RawMessage(cfg.Schema)
	}
	if len(m) == 0 {
		return nil
	}
	return m
}

// Structured says how the Task asks the provider for JSON, and why.
func (t *Task) Structured() Structured { return t.structured }

// MaxTokens returns max_tokens as first sent (a re-ask of a cut-off answer
// may raise it up to Config.MaxTokensCeiling).
func (t *Task) MaxTokens() int { return t.maxTokens }

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func parseTemplate(name, text string) (*task.Template, error) {
	tmpl, err := task.ParseTemplate(name, text)
	if err != nil {
		return nil, fmt.Errorf("llm: %w", err)
	}
	return tmpl, nil
}

// Messages returns the conversation Run sends for item: the system prompt
// (when configured) and the user prompt, and on a heal re-ask the
// previous answer and the feedback, never earlier attempts. A template
// that cannot render for the item gives an error marked classify.Item.
func (t *Task) Messages(item task.Item) ([]Message, error) {
	n := 1
	if t.system != nil {
		n++
	}
	if item.Feedback != nil {
		n += 2
	}
	msgs := make([]Message, 0, n)
	data := task.TemplateData(item)
	var sb strings.Builder
	if t.system != nil {
		s, err := t.system.Execute(&sb, data)
		if err != nil {
			return nil, fmt.Errorf("llm: item %d: %w", item.Idx, err)
		}
		msgs = append(msgs, Message{Role: "system", Content: s})
	}
	p, err := t.prompt.Execute(&sb, data)
	if err != nil {
		return nil, fmt.Errorf("llm: item %d: %w", item.Idx, err)
	}
	msgs = append(msgs, Message{Role: "user", Content: p})
	if fb := item.Feedback; fb != nil {
		msgs = append(msgs,
			Message{Role: "assistant", Content: fb.PreviousOutput},
			Message{Role: "user", Content: fb.Message})
	}
	return msgs, nil
}

// call is one attempt made ready: its conversation rendered, its
// max_tokens chosen, its tokens estimated and its cache key computed, once.
type call struct {
	msgs      []Message
	maxTokens int
	prompt    int // the prompt's tokens as counted, before scaling
	tokens    int
	key       string
	agent     *agentTurns // an agent step's tools and steps so far; nil otherwise
	// tags are a stored call's metadata (Config.Store); nil for none.
	tags map[string]string
}

// prepare renders and estimates the call for item, and keys it when there
// is a cache. It is the only place a prompt is rendered.
func (t *Task) prepare(item task.Item) (*call, error) {
	msgs, err := t.Messages(item)
	if err != nil {
		return nil, err
	}
	c := &call{msgs: msgs, maxTokens: t.maxTokensFor(item)}
	c.prompt = t.counter.count(msgs)
	c.tokens = max(t.scale.apply(c.prompt)+c.maxTokens, 1)
	if t.cfg.Cache != nil {
		c.key = CacheKey(t.callKey(msgs, c.maxTokens))
	}
	return c, nil
}

// maxTokensFor is max_tokens for item's attempt: doubled at each re-ask
// whose feedback says the answer was cut off, up to the ceiling.
func (t *Task) maxTokensFor(item task.Item) int {
	n := t.maxTokens
	fb := item.Feedback
	if fb == nil || t.cfg.MaxTokensCeiling <= n || n == 0 || !strings.Contains(fb.Message, truncatedPhrase) {
		return n
	}
	for range min(max(fb.Attempt, 1), 16) {
		n *= 2
		if n >= t.cfg.MaxTokensCeiling {
			return t.cfg.MaxTokensCeiling
		}
	}
	return n
}

// EstimateTokens is what a call for item may cost in tokens before it is
// made, for a tokens-per-minute limiter and a token budget: the prompt's
// tokens (counted with the model's tokenizer for OpenAI's models,
// estimated for others, and scaled to the usage the provider has reported
// so far) plus the answer's cap. A template that cannot render counts
// only the cap.
// Prepare gives the same estimate without rendering twice.
func (t *Task) EstimateTokens(item task.Item) int {
	c, err := t.prepare(item)
	if err != nil {
		return max(t.maxTokens, 1)
	}
	return c.tokens
}

// EstimateCost is what a call for item may cost in US dollars before it
// is made, for routing by cost (engine.RoutingCost): the prompt's
// estimated tokens at the model's input price plus max_tokens at its
// output price. known is false when the model has no price (neither the
// built-in table nor Config.Prices names it).
func (t *Task) EstimateCost(item task.Item) (usd float64, known bool) {
	if !t.priced {
		return 0, false
	}
	u := task.Usage{OutputTokens: int64(t.maxTokensFor(item))}
	if c, err := t.prepare(item); err == nil {
		u.InputTokens, u.OutputTokens = int64(t.scale.apply(c.prompt)), int64(c.maxTokens)
	}
	return t.price.Cost(u), true
}

// Cached reports whether Run would serve item from the response cache,
// making no call: the engine lets such items past the rate limiters and
// cooldowns, which exist for calls. Prepare says the same without
// rendering twice.
func (t *Task) Cached(item task.Item) bool {
	if t.cfg.Cache == nil {
		return false
	}
	c, err := t.prepare(item)
	if err != nil {
		return false
	}
	_, ok := t.lookup(c)
	return ok
}

// lookup returns the cached output of c; a cache that cannot be read is a
// miss.
func (t *Task) lookup(c *call) (json.RawMessage, bool) {
	if t.cfg.Cache == nil {
		return nil, false
	}
	out, ok, err := t.cfg.Cache.Get(c.key)
	return out, err == nil && ok
}

// Prepare readies one attempt for item: the prompt rendered, the tokens
// estimated and the cache consulted, once (task.Preparer). Run of the
// result makes the call, or serves the cached output.
func (t *Task) Prepare(_ context.Context, item task.Item) (task.Prepared, error) {
	c, err := t.prepare(item)
	if err != nil {
		return task.Prepared{}, err
	}
	if out, ok := t.lookup(c); ok {
		res := task.Result{Output: out, CacheHit: true, CacheKey: c.key}
		return task.Prepared{Tokens: c.tokens, Cached: true, Run: func(context.Context) (task.Result, error) { return res, nil }}, nil
	}
	return task.Prepared{Tokens: c.tokens, Run: func(ctx context.Context) (task.Result, error) { return t.do(ctx, c) }}, nil
}

// Run makes one call for item, or serves it from the cache.
//
// Errors: a template that cannot render is marked classify.Item; a
// provider's error response is an *Error; a transport failure or the
// attempt's timeout is returned wrapped, so net errors, ECONNRESET and
// context.DeadlineExceeded stay reachable with errors.Is and errors.As; a
// success response that cannot be decoded is marked classify.Retryable.
// An answer the provider refused or filtered is a *StopError marked
// classify.Item; one cut off at max_tokens is a *StopError inside a
// *task.OutputError marked classify.Invalid (classify.Item with NoHeal);
// one that is empty or not JSON when Output is json is a *task.OutputError
// marked classify.Invalid; an Anthropic turn still paused (pause_turn)
// after it was sent back to be continued is a *StopError marked
// classify.Retryable. Those come with a Result that carries the
// attempt's usage, cost and finish reason.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	c, err := t.prepare(item)
	if err != nil {
		return task.Result{}, err
	}
	if out, ok := t.lookup(c); ok {
		return task.Result{Output: out, CacheHit: true, CacheKey: c.key}, nil
	}
	return t.do(ctx, c)
}

// do makes the call c.
func (t *Task) do(ctx context.Context, c *call) (task.Result, error) {
	rep, res, err := t.exchange(ctx, c)
	if err != nil {
		return res, err
	}
	out, err := t.output(rep, c.maxTokens)
	if err != nil {
		if t.cfg.Cache != nil {
			res.CacheKey = c.key // the question's, for a heal to be remembered under
		}
		return res, err
	}
	res.Output = out
	if t.cfg.Cache != nil && t.cfg.Cache.Put(c.key, out) == nil {
		res.CacheKey = c.key
	}
	return res, nil
}

// exchange sends c and reads the answer: its reply, and the Result of
// its usage, cost, finish reason and quota, on failure too.
func (t *Task) exchange(ctx context.Context, c *call) (reply, task.Result, error) {
	actx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	cp := capture{maxAnswer: t.cfg.MaxAnswerBytes}
	rep, err := t.send(actx, c, &cp)
	var quota *task.Quota
	if cp.header != nil {
		if rl, ok := ParseRateLimit(t.wire, cp.header, time.Now()); ok {
			rl.Provider = t.cfg.Provider
			if t.cfg.OnRateLimit != nil {
				t.cfg.OnRateLimit(rl)
			}
			quota = &task.Quota{
				RequestsLimit: rl.RequestsLimit, RequestsRemaining: rl.RequestsRemaining, RequestsReset: rl.RequestsReset,
				TokensLimit: rl.TokensLimit, TokensRemaining: rl.TokensRemaining, TokensReset: rl.TokensReset,
				RetryAfter: rl.RetryAfter,
			}
		}
	}
	if err != nil {
		return reply{}, task.Result{Quota: quota}, t.redact(t.wrap(ctx, actx, err, &cp))
	}

	if rep.usage.Impossible == "" {
		t.scale.observe(c.prompt, rep.usage.InputTokens)
	}
	rep.usage = possibleUsage(rep.usage, int64(t.scale.apply(c.prompt)), int64(c.maxTokens))
	res := task.Result{Usage: rep.usage, FinishReason: rep.finish, Quota: quota}
	if t.priced {
		res.CostUSD = t.price.Cost(rep.usage)
	}
	return rep, res, nil
}

// callKey is what the cache key of msgs is made of.
func (t *Task) callKey(msgs []Message, maxTokens int) Call {
	return Call{
		Provider:    t.cfg.Provider,
		BaseURL:     t.endpoint,
		Model:       t.cfg.Model,
		Messages:    msgs,
		MaxTokens:   maxTokens,
		Temperature: t.cfg.Temperature,
		Output:      t.cfg.Output,
		Extra:       t.extra,
	}
}

// errEmpty is the OutputError reason of an answer with no text.
var errEmpty = errors.New("empty answer")

// output turns an answer into the item's output, or says why it is not
// one: refused or filtered (item), cut off (invalid, or item without the
// heal loop), empty or not JSON (invalid).
func (t *Task) output(rep reply, maxTokens int) (json.RawMessage, error) {
	switch kind := stopKind(rep); kind {
	case stopRefused, stopFiltered:
		words := rep.refusal
		if words == "" {
			words = strings.TrimSpace(rep.content)
		}
		e := &StopError{Provider: t.cfg.Provider, FinishReason: rep.finish, Kind: kind, Words: words, ContentFilter: rep.filter}
		return nil, classify.WithClass(e, classify.Item, kind)
	case stopPaused:
		e := &StopError{Provider: t.cfg.Provider, FinishReason: rep.finish, Kind: kind}
		return nil, classify.WithClass(e, classify.Retryable, "paused turn")
	case stopTruncated:
		e := &StopError{Provider: t.cfg.Provider, FinishReason: rep.finish, Kind: kind, MaxTokens: maxTokens}
		if t.cfg.NoHeal {
			return nil, classify.WithClass(e, classify.Item, kind)
		}
		return nil, invalid(rep.content, e)
	}
	if rep.content == "" {
		return nil, invalid("", errEmpty)
	}
	if t.cfg.Output == OutputText {
		b, err := json.Marshal(rep.content)
		if err != nil {
			return nil, invalid(rep.content, err)
		}
		return b, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, []byte(stripFence(rep.content))); err != nil {
		return nil, invalid(rep.content, fmt.Errorf("answer is not JSON: %w", err))
	}
	return buf.Bytes(), nil
}

func invalid(output string, err error) error {
	return classify.WithClass(&task.OutputError{Output: output, Err: err}, classify.Invalid, "invalid output")
}

// stripFence removes a Markdown code fence (```json … ```) around s.
func stripFence(s string) string {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "```") {
		return s
	}
	nl := strings.IndexByte(s, '\n')
	if nl < 0 {
		return s
	}
	body := strings.TrimSpace(s[nl+1:])
	body, _ = strings.CutSuffix(body, "```")
	return body
}

// wrap turns a failed call's error into what Run returns. ctx is the
// caller's context, actx the attempt's.
func (t *Task) wrap(ctx, actx context.Context, err error, c *capture) error {
	p := t.cfg.Provider
	if tooLarge, ok := errors.AsType[*task.AnswerTooLargeError](err); ok && c.status < 400 {
		// The SDK's "error reading response body" says less than this.
		return fmt.Errorf("llm %s: %w", p, task.TooLarge(tooLarge.What, tooLarge.Limit))
	}
	if _, ok := errors.AsType[*Error](err); ok && c.status < 400 {
		return err // an error object in a 200's body, classified by its type
	}
	switch {
	case c.status >= 400:
		e := newError(p, c, err, t.secrets)
		switch t.wire {
		case ProviderBedrock:
			bedrockDetail(e, err, c.header)
		case ProviderGemini:
			geminiDetail(e, []byte(e.Body))
		}
		return e
	case ctx.Err() != nil:
		return fmt.Errorf("llm %s: %w", p, err)
	case actx.Err() != nil:
		return fmt.Errorf("llm %s: no answer within %v: %w", p, t.cfg.Timeout, err)
	case c.status != 0:
		return classify.WithClass(
			fmt.Errorf("llm %s: malformed response (status %d%s): %w", p, c.status, requestSuffix(requestID(c.header, nil)), err),
			classify.Retryable, "malformed response")
	}
	return fmt.Errorf("llm %s: %w", p, err)
}

// redact hides the API key, the Entra token and the values of the base
// URL's query (a gateway's token) should any part of err's text show
// them: the SDKs' errors quote the request's URL.
func (t *Task) redact(err error) error {
	for _, secret := range t.secrets {
		if secret != "" && strings.Contains(err.Error(), secret) {
			err = &redactedError{err: err, key: secret}
		}
	}
	return err
}

// minQuerySecret is the shortest base URL query value redact hides: a
// flag like ?v=1 is no secret, and hiding it would mangle the text.
const minQuerySecret = 4

// redactedError is an error whose text had the API key in it.
type redactedError struct {
	err error
	key string
}

func (e *redactedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.key, "[redacted]") }
func (e *redactedError) Unwrap() error { return e.err }
