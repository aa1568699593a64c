package llm

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	aparam "github.com/anthropics/anthropic-sdk-go/packages/param"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/azure"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"

	"github.com/tenaxhq/tenax/task"
)

// maxErrorBody caps how much of an error response is kept.
const maxErrorBody = 64 << 10

// capture keeps what the SDKs do not hand back on every path: the
// response's status and headers, and an error response's body. It is the
// SDKs' middleware for one call, and bounds a successful response's body
// at maxAnswer bytes (0: task.DefaultMaxAnswerBytes).
type capture struct {
	status    int
	header    http.Header
	body      []byte
	maxAnswer int64
}

func (c *capture) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	// The SDKs wrap the body, already in memory, in a reader net/http
	// cannot see into, so it would write the headers and the body in two
	// syscalls; GetBody's reader it recognises, and sends in one.
	if req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			req.Body = body
		}
	}
	res, err := next(req)
	if res == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
	if res.StatusCode < 400 && res.Body != nil {
		// The SDKs read a successful body whole into memory. net/http has
		// already undone its gzip here, so the bound counts what would be
		// held, and a small bomb stops at it.
		res.Body = boundedBody{Reader: task.LimitAnswer(res.Body, cmp.Or(c.maxAnswer, task.DefaultMaxAnswerBytes), "answer"), Closer: res.Body}
	}
	if res.StatusCode >= 400 && res.Body != nil {
		b, rerr := io.ReadAll(io.LimitReader(res.Body, maxErrorBody))
		_ = res.Body.Close()
		c.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
		if err == nil && rerr != nil {
			err = rerr
		}
	}
	return res, err
}

// boundedBody is a response body read through task.LimitAnswer.
type boundedBody struct {
	io.Reader
	io.Closer
}

// openAISender returns the call in OpenAI's wire format (providers openai,
// azure and mock). The SDK never retries: tenax alone decides. It is
// handed the body t.chat builds and gives back the answer's bytes, which
// decodeChatCompletion reads: the SDK's reflection-based encoding and
// decoding were a third of the CPU of a call (docs/benchmarks.md, "CPU
// per LLM call").
func (t *Task) openAISender() func(context.Context, *call, *capture) (reply, error) {
	client := openai.NewClient(t.openAIClientOptions()...)
	return func(ctx context.Context, c *call, cp *capture) (reply, error) {
		msgs := c.msgs
		if t.structured.Mode == ModeJSONObject && !mentionsJSON(msgs) {
			msgs = withJSONInstruction(msgs)
		}
		body, err := t.chat.body(msgs, c.maxTokens, c.openAIMore()...)
		if err == nil && c.agent != nil {
			var tools []byte
			tools, err = openAITools(c.agent.defs)
			body = withMember(body, "tools", tools)
		}
		if err == nil && c.tags != nil {
			body, err = withStore(body, c.tags)
		}
		if err != nil {
			return reply{}, err
		}
		var params openai.ChatCompletionNewParams
		param.SetJSON(body, &params)
		var answer []byte
		_, err = client.Chat.Completions.New(ctx, params,
			ooption.WithMiddleware(cp.middleware), ooption.WithResponseBodyInto(&answer))
		if err != nil {
			return reply{}, err
		}
		if ct := cp.header.Get("Content-Type"); !jsonContentType(ct) {
			return reply{}, fmt.Errorf("the answer's content-type %q is not JSON", ct)
		}
		if err := answerError(t.cfg.Provider, cp, answer, t.secrets); err != nil {
			return reply{}, err
		}
		return decodeChatCompletion(answer)
	}
}

// openAIClientOptions are the OpenAI client's options for the task: the
// endpoint and credentials (Azure's when provider azure), the HTTP client,
// the headers, and no retries. The batch API's client uses them too.
func (t *Task) openAIClientOptions() []ooption.RequestOption {
	opts := []ooption.RequestOption{
		ooption.WithHTTPClient(t.cfg.HTTPClient),
		ooption.WithMaxRetries(0),
	}
	if t.cfg.Provider == ProviderAzure {
		opts = append(opts, azure.WithEndpoint(t.endpoint, t.cfg.APIVersion))
		if loopbackHTTP(t.endpoint) {
			// A local stand-in (tests, a proxy on this machine); the SDK
			// refuses to send credentials over plain HTTP elsewhere.
			opts = append(opts, azure.WithUnsafeAllowHTTP())
		}
		if t.cfg.APIKey != "" {
			opts = append(opts, azure.WithAPIKey(t.cfg.APIKey))
		} else {
			opts = append(opts, azure.WithTokenCredential(staticToken(t.cfg.AzureADToken)))
		}
	} else {
		opts = append(opts, ooption.WithBaseURL(t.endpoint), ooption.WithAPIKey(t.cfg.APIKey))
	}
	for _, name := range sortedKeys(t.query) {
		for _, v := range t.query[name] {
			opts = append(opts, ooption.WithQueryAdd(name, v))
		}
	}
	for _, name := range sortedKeys(t.cfg.Headers) {
		opts = append(opts, ooption.WithHeader(name, t.cfg.Headers[name]))
	}
	return opts
}

// withJSONInstruction returns msgs with jsonInstruction added to the
// system prompt, or as a system prompt of its own, for json_object mode.
func withJSONInstruction(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs)+1)
	if len(msgs) > 0 && msgs[0].Role == "system" {
		out = append(out, Message{Role: "system", Content: msgs[0].Content + "\n\n" + jsonInstruction})
		return append(out, msgs[1:]...)
	}
	out = append(out, Message{Role: "system", Content: jsonInstruction})
	return append(out, msgs...)
}

// reasoningModel reports whether OpenAI's model reasons before answering:
// it takes max_completion_tokens (refusing max_tokens), and its hidden
// reasoning counts against it.
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return true
		}
	}
	return false
}

// anthropicSender returns the call in Anthropic's wire format. The SDK
// never retries, and reads no configuration from the environment. It is
// handed the body t.messages builds and gives back the answer's bytes,
// which decodeMessage reads, as openAISender does.
func (t *Task) anthropicSender() func(context.Context, *call, *capture) (reply, error) {
	opts := []aoption.RequestOption{
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(t.endpoint),
		aoption.WithHTTPClient(t.cfg.HTTPClient),
		aoption.WithMaxRetries(0),
		aoption.WithoutOpenTelemetry(),
		// With a timeout of its own, the SDK does not compute one from
		// max_tokens, which refuses large max_tokens locally ("streaming is
		// required") before any request is made.
		aoption.WithRequestTimeout(t.cfg.Timeout),
	}
	if t.cfg.Vertex != nil {
		// Claude on Vertex AI: the first middleware, so that the call's
		// capture sees the request as sent.
		opts = append(opts, aoption.WithMiddleware(t.cfg.Vertex.middleware))
	} else {
		opts = append(opts, aoption.WithAPIKey(t.cfg.APIKey))
	}
	for _, name := range sortedKeys(t.cfg.Headers) {
		opts = append(opts, aoption.WithHeader(name, t.cfg.Headers[name]))
	}
	for _, name := range sortedKeys(t.query) {
		for _, v := range t.query[name] {
			opts = append(opts, aoption.WithQueryAdd(name, v))
		}
	}
	client := anthropic.NewClient(opts...)

	send := func(ctx context.Context, c *call, turns []json.RawMessage, cp *capture) (*message, error) {
		body, err := t.messages.body(c.msgs, c.maxTokens, turns, c.anthropicMore()...)
		if err == nil && c.agent != nil {
			var tools []byte
			tools, err = anthropicTools(c.agent.defs)
			body = withMember(body, "tools", tools)
		}
		if err == nil && c.tags != nil {
			body, err = withStore(body, c.tags)
		}
		if err != nil {
			return nil, err
		}
		var params anthropic.MessageNewParams
		aparam.SetJSON(body, &params)
		var answer []byte
		_, err = client.Messages.New(ctx, params,
			aoption.WithMiddleware(cp.middleware), aoption.WithResponseBodyInto(&answer))
		if err != nil {
			return nil, err
		}
		if ct := cp.header.Get("Content-Type"); !jsonContentType(ct) {
			return nil, fmt.Errorf("the answer's content-type %q is not JSON", ct)
		}
		if err := answerError(t.cfg.Provider, cp, answer, t.secrets); err != nil {
			return nil, err
		}
		return decodeMessage(answer)
	}
	return func(ctx context.Context, c *call, cp *capture) (reply, error) {
		turn, err := send(ctx, c, nil, cp)
		if err != nil {
			return reply{}, err
		}
		// A turn paused by the API (a long server tool run) is
		// unfinished: as Anthropic documents, send the answer back as it
		// is and the model goes on where it stopped. What every piece
		// said and spent is the turn's.
		var turns []json.RawMessage
		for msg, n := turn, 0; msg.StopReason == string(anthropic.StopReasonPauseTurn) && n < maxPauseContinuations; n++ {
			turns = append(turns, msg.Content)
			if msg, err = send(ctx, c, turns, cp); err != nil {
				return reply{}, err
			}
			turn.add(msg)
		}
		return t.anthropicReply(turn), nil
	}
}

// anthropicBase is what every call of the task sends in Anthropic's
// format beside its messages: the model, sampling, thinking, effort and
// the structured-output mode.
func (t *Task) anthropicBase() anthropic.MessageNewParams {
	base := anthropic.MessageNewParams{Model: t.cfg.Model}
	if t.cfg.Temperature != nil {
		base.Temperature = anthropic.Float(*t.cfg.Temperature)
	}
	if t.cfg.TopP != nil {
		base.TopP = anthropic.Float(*t.cfg.TopP)
	}
	base.StopSequences = t.cfg.Stop
	if t.cfg.ThinkingBudget > 0 {
		base.Thinking = anthropic.ThinkingConfigParamOfEnabled(int64(t.cfg.ThinkingBudget))
	}
	if t.cfg.ReasoningEffort != "" {
		base.OutputConfig.Effort = anthropic.OutputConfigEffort(t.cfg.ReasoningEffort)
	}
	switch t.structured.Mode {
	case ModeOutputConfig:
		base.OutputConfig.Format = anthropic.JSONOutputFormatParam{Schema: t.schema.sendable()}
	case ModeTool:
		base.Tools = []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{
			Name:        OutputTool,
			Description: anthropic.String("Give the answer: its input is the answer, in the required shape."),
			InputSchema: toolSchema(t.schema.sendable()),
		}}}
		base.ToolChoice = anthropic.ToolChoiceParamOfTool(OutputTool)
	}
	return base
}

// maxPauseContinuations is how many times one attempt sends a paused turn
// back before it gives up: a turn still paused then is recorded as not
// finished (retryable), never as an answer.
const maxPauseContinuations = 8

// OutputTool names the tool whose input is the answer, under ModeTool:
// the one tool of a call, forced, or on Bedrock one more among an
// agent's tools, whose call is the final answer. Package spec refuses an
// agent's tool of this name where it would be sent (docs/agents.md).
const OutputTool = "output"

// toolSchema is schema as a tool's input schema.
func toolSchema(schema map[string]any) anthropic.ToolInputSchemaParam {
	p := anthropic.ToolInputSchemaParam{Properties: schema["properties"], ExtraFields: map[string]any{}}
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if s, ok := r.(string); ok {
				p.Required = append(p.Required, s)
			}
		}
	}
	for k, v := range schema {
		switch k {
		case "type", "properties", "required", "$schema":
		default:
			p.ExtraFields[k] = v
		}
	}
	return p
}

// sortedKeys returns m's keys in order, so requests are built the same way
// every time.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// sjsonKey escapes a top-level body field name for the SDKs' WithJSONSet,
// which reads dots and wildcards as a path.
func sjsonKey(name string) string {
	var b strings.Builder
	for _, r := range name {
		if strings.ContainsRune(`.*?\|#@!:`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// loopbackHTTP reports whether rawURL is plain HTTP to this machine.
func loopbackHTTP(rawURL string) bool {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "http" {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// staticToken is an Entra ID access token given by the user, as the
// credential the azure SDK asks for. It is used until it expires; tenax
// does not refresh it.
type staticToken string

// GetToken returns the token, valid for an hour from now as far as the SDK
// knows.
func (s staticToken) GetToken(context.Context, policy.TokenRequestOptions) (azcore.AccessToken, error) {
	return azcore.AccessToken{Token: string(s), ExpiresOn: time.Now().Add(time.Hour)}, nil
}
