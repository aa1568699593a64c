package llm

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"
	aoption "github.com/anthropics/anthropic-sdk-go/option"
	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tenaxhq/tenax/task"
)

// maxErrorBody caps how much of an error response is kept.
const maxErrorBody = 64 << 10

// capture keeps what the SDKs do not hand back on every path: the
// response's status and headers, and an error response's body. It is the
// SDKs' middleware for one call.
type capture struct {
	status int
	header http.Header
	body   []byte
}

func (c *capture) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
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

// openAISender returns the call in OpenAI's wire format (providers openai
// and mock). The SDK never retries: tenax alone decides.
func (t *Task) openAISender() func(context.Context, []Message, *capture) (reply, error) {
	client := openai.NewClient(
		ooption.WithBaseURL(t.cfg.BaseURL),
		ooption.WithAPIKey(t.cfg.APIKey),
		ooption.WithHTTPClient(t.cfg.HTTPClient),
		ooption.WithMaxRetries(0),
	)
	base := openai.ChatCompletionNewParams{Model: t.cfg.Model}
	if t.maxTokens > 0 {
		if reasoningModel(t.cfg.Model) {
			base.MaxCompletionTokens = openai.Int(int64(t.maxTokens))
		} else {
			base.MaxTokens = openai.Int(int64(t.maxTokens))
		}
	}
	if t.cfg.Temperature != nil {
		base.Temperature = openai.Float(*t.cfg.Temperature)
	}
	if t.cfg.Output == OutputJSON {
		base.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	}
	return func(ctx context.Context, msgs []Message, c *capture) (reply, error) {
		params := base
		params.Messages = make([]openai.ChatCompletionMessageParamUnion, len(msgs))
		for i, m := range msgs {
			switch m.Role {
			case "system":
				params.Messages[i] = openai.SystemMessage(m.Content)
			case "assistant":
				params.Messages[i] = openai.AssistantMessage(m.Content)
			default:
				params.Messages[i] = openai.UserMessage(m.Content)
			}
		}
		comp, err := client.Chat.Completions.New(ctx, params, ooption.WithMiddleware(c.middleware))
		if err != nil {
			return reply{}, err
		}
		rep := reply{usage: task.Usage{InputTokens: comp.Usage.PromptTokens, OutputTokens: comp.Usage.CompletionTokens}}
		if len(comp.Choices) > 0 {
			rep.content = comp.Choices[0].Message.Content
			rep.refusal = comp.Choices[0].Message.Refusal
		}
		return rep, nil
	}
}

// reasoningModel reports whether OpenAI's model takes
// max_completion_tokens and refuses max_tokens.
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return true
		}
	}
	return false
}

// anthropicSender returns the call in Anthropic's wire format. The SDK
// never retries, and reads no configuration from the environment.
func (t *Task) anthropicSender() func(context.Context, []Message, *capture) (reply, error) {
	client := anthropic.NewClient(
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(t.cfg.BaseURL),
		aoption.WithAPIKey(t.cfg.APIKey),
		aoption.WithHTTPClient(t.cfg.HTTPClient),
		aoption.WithMaxRetries(0),
		aoption.WithoutOpenTelemetry(),
		// With a timeout of its own, the SDK does not compute one from
		// max_tokens, which refuses large max_tokens locally ("streaming is
		// required") before any request is made.
		aoption.WithRequestTimeout(t.cfg.Timeout),
	)
	base := anthropic.MessageNewParams{Model: t.cfg.Model, MaxTokens: int64(t.maxTokens)}
	if t.cfg.Temperature != nil {
		base.Temperature = anthropic.Float(*t.cfg.Temperature)
	}
	return func(ctx context.Context, msgs []Message, c *capture) (reply, error) {
		params := base
		params.Messages = make([]anthropic.MessageParam, 0, len(msgs))
		for _, m := range msgs {
			switch m.Role {
			case "system":
				params.System = []anthropic.TextBlockParam{{Text: m.Content}}
			case "assistant":
				params.Messages = append(params.Messages, anthropic.NewAssistantMessage(anthropic.NewTextBlock(m.Content)))
			default:
				params.Messages = append(params.Messages, anthropic.NewUserMessage(anthropic.NewTextBlock(m.Content)))
			}
		}
		msg, err := client.Messages.New(ctx, params, aoption.WithMiddleware(c.middleware))
		if err != nil {
			return reply{}, err
		}
		u := msg.Usage
		rep := reply{usage: task.Usage{
			InputTokens:  u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens,
			OutputTokens: u.OutputTokens,
		}}
		var b strings.Builder
		for _, block := range msg.Content {
			if block.Type == "text" {
				b.WriteString(block.Text)
			}
		}
		rep.content = b.String()
		return rep, nil
	}
}
