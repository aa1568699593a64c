package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
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
	// DefaultAnthropicMaxTokens is Anthropic's max_tokens (which the API
	// requires) when Config.MaxTokens is 0.
	DefaultAnthropicMaxTokens = 1024
	// MockBaseURL is provider mock's base URL when Config.BaseURL is "";
	// only an in-process transport can reach it.
	MockBaseURL = "http://mock.invalid/v1"
	// MockAPIKey is provider mock's key when Config.APIKey is "".
	MockAPIKey = "mock-key"

	openAIBaseURL    = "https://api.openai.com/v1/"
	anthropicBaseURL = "https://api.anthropic.com/"
)

// Config describes an LLM task. Provider, Model and Prompt are required
// (Model defaults to mock-echo for provider mock).
type Config struct {
	// Provider is "openai" (any OpenAI-compatible server), "anthropic" or
	// "mock".
	Provider string
	// BaseURL is the API's base URL; "" means the provider's own
	// (https://api.openai.com/v1, https://api.anthropic.com, MockBaseURL).
	BaseURL string
	// APIKey authenticates the calls. "" means $OPENAI_API_KEY or
	// $ANTHROPIC_API_KEY, and MockAPIKey for provider mock. It never
	// appears in errors, results or cache keys.
	APIKey string
	// Model is the model to call.
	Model string
	// System and Prompt are text/template templates rendered with the
	// item's fields; a field the template names but the item lacks is an
	// error (missingkey=error). System is optional.
	System, Prompt string
	// MaxTokens caps the answer; 0 means the provider's default
	// (DefaultAnthropicMaxTokens for Anthropic, which requires one).
	MaxTokens int
	// Temperature is sent when set.
	Temperature *float64
	// Output is "text" (the default) or "json".
	Output string
	// Timeout bounds one attempt; 0 means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient sends the requests; nil means a plain http.Client. For
	// provider mock without a BaseURL, nil means a fresh in-process mock
	// with no faults; pass mock.Server.Client() to choose its faults.
	HTTPClient *http.Client
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
}

// Task calls an LLM once per attempt. It is safe for concurrent use; its
// configuration is fixed when New builds it.
type Task struct {
	cfg       Config // with defaults applied
	wire      string // the wire format: ProviderOpenAI or ProviderAnthropic
	system    *task.Template
	prompt    *task.Template
	price     Price
	priced    bool
	maxTokens int // as sent; 0 for none
	send      func(ctx context.Context, msgs []Message, c *capture) (reply, error)
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
	usage   task.Usage
}

// New checks cfg, parses its templates and builds the provider's client.
func New(cfg Config) (*Task, error) {
	t := &Task{}
	switch cfg.Provider {
	case ProviderOpenAI:
		t.wire = ProviderOpenAI
		cfg.BaseURL = cmpOr(cfg.BaseURL, openAIBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, os.Getenv("OPENAI_API_KEY"))
	case ProviderAnthropic:
		t.wire = ProviderAnthropic
		cfg.BaseURL = cmpOr(cfg.BaseURL, anthropicBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, os.Getenv("ANTHROPIC_API_KEY"))
	case ProviderMock:
		t.wire = ProviderOpenAI
		if cfg.HTTPClient == nil && cfg.BaseURL == "" {
			cfg.HTTPClient = mock.New(mock.Config{}).Client()
		}
		cfg.BaseURL = cmpOr(cfg.BaseURL, MockBaseURL)
		cfg.APIKey = cmpOr(cfg.APIKey, MockAPIKey)
		cfg.Model = cmpOr(cfg.Model, mock.ModelEcho)
	default:
		return nil, fmt.Errorf("llm: unknown provider %q (want openai, anthropic or mock)", cfg.Provider)
	}
	if cfg.Model == "" {
		return nil, errors.New("llm: model is required")
	}
	if cfg.APIKey == "" {
		env := map[string]string{ProviderOpenAI: "OPENAI_API_KEY", ProviderAnthropic: "ANTHROPIC_API_KEY"}[cfg.Provider]
		return nil, fmt.Errorf("llm: no API key for %s: set api_key or $%s", cfg.Provider, env)
	}
	if strings.TrimSpace(cfg.Prompt) == "" {
		return nil, errors.New("llm: prompt is required")
	}
	cfg.Output = cmpOr(cfg.Output, OutputText)
	if cfg.Output != OutputText && cfg.Output != OutputJSON {
		return nil, fmt.Errorf("llm: unknown output %q (want text or json)", cfg.Output)
	}
	if cfg.MaxTokens < 0 {
		return nil, fmt.Errorf("llm: max_tokens is %d, want a positive number or 0 for the default", cfg.MaxTokens)
	}
	if t := cfg.Temperature; t != nil && (math.IsNaN(*t) || *t < 0 || math.IsInf(*t, 0)) {
		return nil, fmt.Errorf("llm: temperature is %v, want a number from 0", *t)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("llm: timeout is %v, want a positive duration or 0 for the default", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	var err error
	if t.prompt, err = parseTemplate("prompt", cfg.Prompt); err != nil {
		return nil, err
	}
	if cfg.System != "" {
		if t.system, err = parseTemplate("system", cfg.System); err != nil {
			return nil, err
		}
	}
	t.maxTokens = cfg.MaxTokens
	if t.wire == ProviderAnthropic && t.maxTokens == 0 {
		t.maxTokens = DefaultAnthropicMaxTokens
	}
	t.price, t.priced = LookupPrice(cfg.Prices, cfg.Model)
	t.cfg = cfg
	if t.wire == ProviderAnthropic {
		t.send = t.anthropicSender()
	} else {
		t.send = t.openAISender()
	}
	return t, nil
}

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
	if t.system != nil {
		s, err := render(t.system, item)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, Message{Role: "system", Content: s})
	}
	p, err := render(t.prompt, item)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, Message{Role: "user", Content: p})
	if fb := item.Feedback; fb != nil {
		msgs = append(msgs,
			Message{Role: "assistant", Content: fb.PreviousOutput},
			Message{Role: "user", Content: fb.Message})
	}
	return msgs, nil
}

// render renders a prompt template over item; its errors are marked
// classify.Item.
func render(tmpl *task.Template, item task.Item) (string, error) {
	s, err := tmpl.Render(item)
	if err != nil {
		return "", fmt.Errorf("llm: item %d: %w", item.Idx, err)
	}
	return s, nil
}

// EstimateTokens is what a call for item may cost in tokens before it is
// made, for a tokens-per-minute limiter: the prompt's characters / 4 plus
// the answer's cap. A template that cannot render counts only the cap.
func (t *Task) EstimateTokens(item task.Item) int {
	msgs, err := t.Messages(item)
	if err != nil {
		return max(t.maxTokens, 1)
	}
	runes := 0
	for _, m := range msgs {
		runes += utf8.RuneCountInString(m.Content)
	}
	return max(runes/4+t.maxTokens, 1)
}

// Cached reports whether Run would serve item from the response cache,
// making no call: the engine lets such items past the rate limiters and
// cooldowns, which exist for calls.
func (t *Task) Cached(item task.Item) bool {
	if t.cfg.Cache == nil {
		return false
	}
	msgs, err := t.Messages(item)
	if err != nil {
		return false
	}
	_, ok, err := t.cfg.Cache.Get(CacheKey(t.call(msgs)))
	return err == nil && ok
}

// Run makes one call for item, or serves it from the cache.
//
// Errors: a template that cannot render is marked classify.Item; a
// provider's error response is an *Error; a transport failure or the
// attempt's timeout is returned wrapped, so net errors, ECONNRESET and
// context.DeadlineExceeded stay reachable with errors.Is and errors.As; a
// success response that cannot be decoded is marked classify.Retryable;
// an answer that is empty, a refusal, or not JSON when Output is json is a
// *task.OutputError marked classify.Invalid, returned with a Result that
// carries the attempt's usage and cost.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	msgs, err := t.Messages(item)
	if err != nil {
		return task.Result{}, err
	}
	var key string
	if t.cfg.Cache != nil {
		key = CacheKey(t.call(msgs))
		// A cache that cannot be read is a miss: the call is made.
		if out, ok, err := t.cfg.Cache.Get(key); err == nil && ok {
			return task.Result{Output: out, CacheHit: true, CacheKey: key}, nil
		}
	}

	actx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	var c capture
	rep, err := t.send(actx, msgs, &c)
	if t.cfg.OnRateLimit != nil && c.header != nil {
		if rl, ok := ParseRateLimit(t.wire, c.header, time.Now()); ok {
			rl.Provider = t.cfg.Provider
			t.cfg.OnRateLimit(rl)
		}
	}
	if err != nil {
		return task.Result{}, t.redact(t.wrap(ctx, actx, err, &c))
	}

	res := task.Result{Usage: rep.usage}
	if t.priced {
		res.CostUSD = float64(rep.usage.InputTokens)*t.price.InputPerMTok/1e6 +
			float64(rep.usage.OutputTokens)*t.price.OutputPerMTok/1e6
	}
	out, err := t.output(rep)
	if err != nil {
		return res, err
	}
	res.Output = out
	if t.cfg.Cache != nil && t.cfg.Cache.Put(key, out) == nil {
		res.CacheKey = key
	}
	return res, nil
}

// call is what the cache key of msgs is made of.
func (t *Task) call(msgs []Message) Call {
	return Call{
		Provider:    t.cfg.Provider,
		BaseURL:     t.cfg.BaseURL,
		Model:       t.cfg.Model,
		Messages:    msgs,
		MaxTokens:   t.maxTokens,
		Temperature: t.cfg.Temperature,
		Output:      t.cfg.Output,
	}
}

// errEmpty is the OutputError reason of an answer with no text.
var errEmpty = errors.New("empty answer")

// output turns an answer into the item's output. An unusable answer is a
// *task.OutputError marked classify.Invalid, for the heal loop.
func (t *Task) output(rep reply) (json.RawMessage, error) {
	if rep.content == "" {
		if rep.refusal != "" {
			return nil, invalid(rep.refusal, fmt.Errorf("the model refused: %s", rep.refusal))
		}
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
	switch {
	case c.status >= 400:
		return newError(p, c, err, t.cfg.APIKey)
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

// redact hides the API key should any part of err's text show it.
func (t *Task) redact(err error) error {
	if t.cfg.APIKey == "" || !strings.Contains(err.Error(), t.cfg.APIKey) {
		return err
	}
	return &redactedError{err: err, key: t.cfg.APIKey}
}

// redactedError is an error whose text had the API key in it.
type redactedError struct {
	err error
	key string
}

func (e *redactedError) Error() string { return strings.ReplaceAll(e.err.Error(), e.key, "[redacted]") }
func (e *redactedError) Unwrap() error { return e.err }
