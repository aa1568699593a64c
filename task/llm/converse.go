package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// ProviderBedrock is Amazon Bedrock's Converse API, which speaks to every
// Bedrock model family (Anthropic, Amazon Nova, Meta Llama, Mistral, …)
// in one shape. The calls are made by a Converser (package
// task/llm/bedrock, on the AWS SDK), given as Config.Bedrock: the SDK
// stays out of the imports of every package that only reads tasks.
// Model is the model id or inference profile
// ("anthropic.claude-3-5-haiku-20241022-v1:0", "us.amazon.nova-lite-v1:0").
const ProviderBedrock = "bedrock"

// Converser makes Bedrock's Converse call: package task/llm/bedrock's
// Client is one. send is the task's HTTP client with its capture of the
// response: every request of the call goes through it.
type Converser interface {
	Converse(ctx context.Context, req ConverseRequest, send func(*http.Request) (*http.Response, error)) (ConverseReply, error)
}

// ConverseRequest is one Converse call: what a Converser sends.
type ConverseRequest struct {
	// Model is the model id or inference profile.
	Model string
	// System are the system prompt's text blocks.
	System []string
	// Messages are the conversation's user and assistant turns.
	Messages []Message
	// MaxTokens is inferenceConfig.maxTokens; 0 sends none.
	MaxTokens int
	// Temperature and TopP are sent when set.
	Temperature, TopP *float64
	// Stop lists stop sequences.
	Stop []string
	// Extra is additionalModelRequestFields: what one model family takes
	// beyond the common configuration; nil sends none.
	Extra map[string]any
	// Tool, when set, is the tool whose input is the answer: alone, the
	// one the model must call (toolChoice); with Tools, on an agent's
	// step, one more of them at the model's choice, its call the final
	// answer.
	Tool *ConverseTool
	// Tools are an agent's tools (toolConfig.tools, the model's choice):
	// set on an agent's step, with Steps.
	Tools []agent.Def
	// Steps are the agent's steps so far, sent after Messages: each an
	// assistant message of text and toolUse blocks, then a user message
	// of toolResult blocks (docs/agents.md).
	Steps []agent.Step
}

// ConverseTool is a tool the model must call: its input is the answer.
type ConverseTool struct {
	Name, Description string
	// Schema is the tool's input schema (inputSchema.json).
	Schema map[string]any
}

// ConverseReply is what a Converse answer says.
type ConverseReply struct {
	// Text is the answer's text blocks, joined.
	Text string
	// ToolInput is the input of the call of the request's Tool, nil when
	// it was not called.
	ToolInput json.RawMessage
	// Calls are the toolUse blocks of an agent's tools (any but the
	// request's Tool), in the answer's order.
	Calls []agent.Call
	// StopReason is the answer's stopReason: end_turn, tool_use,
	// max_tokens, stop_sequence, guardrail_intervened, content_filtered, …
	StopReason string
	// Usage is the answer's usage, cached input inside InputTokens.
	Usage task.Usage
}

// bedrockSender returns the call in Converse's shape, made by the task's
// Converser; the SDK behind it does not retry: tenax alone decides.
func (t *Task) bedrockSender() func(context.Context, *call, *capture) (reply, error) {
	base := ConverseRequest{Model: t.cfg.Model, Temperature: t.cfg.Temperature, TopP: t.cfg.TopP, Stop: t.cfg.Stop, Extra: t.cfg.ExtraBody}
	if t.structured.Mode == ModeTool {
		base.Tool = &ConverseTool{Name: OutputTool, Description: "Give the answer: its input is the answer, in the required shape.", Schema: t.schema.sendable()}
	}
	return func(ctx context.Context, c *call, cp *capture) (reply, error) {
		req := base
		req.MaxTokens = c.maxTokens
		req.Messages = make([]Message, 0, len(c.msgs))
		for _, m := range c.msgs {
			if m.Role == "system" {
				req.System = append(req.System, m.Content)
				continue
			}
			req.Messages = append(req.Messages, m)
		}
		if c.agent != nil {
			req.Tools, req.Steps = c.agent.defs, c.agent.steps
			if req.Tool != nil {
				req.Tool = &ConverseTool{Name: OutputTool, Description: agentOutputDescription, Schema: req.Tool.Schema}
			}
		}
		send := func(r *http.Request) (*http.Response, error) {
			// Added after signing: SigV4 leaves unsigned headers alone.
			for _, name := range sortedKeys(t.cfg.Headers) {
				r.Header.Set(name, t.cfg.Headers[name])
			}
			return cp.middleware(r, t.cfg.HTTPClient.Do)
		}
		out, err := t.cfg.Bedrock.Converse(ctx, req, send)
		if err != nil {
			return reply{}, err
		}
		return bedrockReply(out), nil
	}
}

// agentOutputDescription tells an agent's model what the output tool is
// for: the model sees it beside its own tools.
const agentOutputDescription = "Give the final answer, once the other tools have told you what you need: its input is the answer, in the required shape. Call it alone, not beside other tools."

// bedrockReply reads a Converse answer. The output tool's call is a
// finished answer: on an agent's step, other calls beside it are dropped
// unrun, as pydantic-ai's default end strategy does (docs/agents.md); a
// guardrail's or content filter's stop keeps the text that replaced the
// answer as its words.
func bedrockReply(out ConverseReply) reply {
	rep := reply{content: out.Text, finish: out.StopReason, usage: out.Usage, calls: out.Calls}
	if out.ToolInput != nil {
		rep.content, rep.calls, rep.toolAnswer = string(out.ToolInput), nil, true
		if rep.finish == "tool_use" {
			rep.finish = "end_turn"
		}
	}
	switch out.StopReason {
	case "guardrail_intervened", "content_filtered":
		rep.refusal = strings.TrimSpace(out.Text)
	}
	return rep
}

// errorCoder is an AWS SDK error's view as smithy.APIError gives it,
// without importing the SDK.
type errorCoder interface {
	error
	ErrorCode() string
	ErrorMessage() string
}

// bedrockDetail completes the Error of a Bedrock error response: the
// exception's name (x-amzn-ErrorType, as the SDK decoded it into its
// smithy.APIError) is its code, which package classify reads, and the
// request id is x-amzn-RequestId.
func bedrockDetail(e *Error, sdkErr error, h http.Header) {
	if apiErr, ok := errors.AsType[errorCoder](sdkErr); ok {
		e.Code = apiErr.ErrorCode()
		if e.Message == "" {
			e.Message = apiErr.ErrorMessage()
		}
	}
	if e.ID == "" {
		e.ID = h.Get("X-Amzn-Requestid")
	}
}

// checkBedrockSampling refuses what Converse has no common field for.
func checkBedrockSampling(cfg Config) error {
	switch {
	case cfg.Bedrock == nil:
		return errors.New("llm: provider bedrock needs Config.Bedrock, the Converse client (package task/llm/bedrock)")
	case cfg.Seed != nil:
		return errors.New("llm: bedrock's converse has no seed")
	case cfg.ThinkingBudget != 0:
		return errors.New("llm: a thinking budget is anthropic's API; on bedrock send the model's own field with extra_body (additionalModelRequestFields)")
	case cfg.ReasoningEffort != "":
		return errors.New("llm: reasoning_effort is not a converse field; on bedrock send the model's own field with extra_body (additionalModelRequestFields)")
	case cfg.CachePrompt:
		return errors.New("llm: cache_prompt is anthropic's API; bedrock caches with cache points, which tenax does not send")
	case cfg.APIKey != "":
		return errors.New("llm: bedrock signs calls with AWS credentials (the SDK's default chain: $AWS_ACCESS_KEY_ID, AWS_PROFILE, SSO, the instance role), not an api_key")
	case cfg.TopP != nil && *cfg.TopP > 1, cfg.Temperature != nil && *cfg.Temperature > 1:
		return errors.New("llm: bedrock's temperature and top_p are from 0 to 1")
	}
	return nil
}

// bedrockStructured says how a Bedrock task asks for JSON: a schema as a
// tool the model must call, which every model family that takes tools
// honours; without one, the prompt must ask.
func bedrockStructured(schema schemaDoc) Structured {
	if schema == nil {
		return Structured{ModePrompt, "Converse has no JSON mode without a schema: the prompt must ask for JSON (validate.json_schema would be sent as a tool the model must call)"}
	}
	return Structured{ModeTool, "validate.json_schema is sent as a tool the model must call (Converse toolChoice)"}
}
