package llm

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/aws/smithy-go"

	"github.com/tenaxhq/tenax/task"
)

// ProviderBedrock is Amazon Bedrock's Converse API, which speaks to every
// Bedrock model family (Anthropic, Amazon Nova, Meta Llama, Mistral, …)
// in one shape. Calls are signed with SigV4 by the AWS SDK, with
// credentials from its default chain: the environment
// (AWS_ACCESS_KEY_ID, …), the shared config and credentials files and
// their profiles (AWS_PROFILE), SSO, a web identity, the container's or
// the instance's role. Model is the model id or inference profile
// ("anthropic.claude-3-5-haiku-20241022-v1:0",
// "us.amazon.nova-lite-v1:0").
const ProviderBedrock = "bedrock"

// bedrockSender returns the call in Bedrock's Converse shape, made by the
// AWS SDK with its own retries off: tenax alone decides. The SDK's
// configuration is loaded once, here; credentials are resolved (and
// refreshed) by the SDK when the first call is signed.
func (t *Task) bedrockSender() (func(context.Context, *call, *capture) (reply, error), error) {
	// Loading reads the environment and the shared files only: no
	// request is made until a call is signed.
	// The SDK's own HTTP client stays the credential providers' (SSO,
	// STS, the instance role), with $AWS_CA_BUNDLE applied to it; the
	// calls to Bedrock go through the task's (capturingClient).
	opts := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if t.cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(t.cfg.Region))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(context.Background(), opts...)
	if err != nil {
		return nil, fmt.Errorf("llm: bedrock: the AWS configuration: %w", err)
	}
	if awsCfg.Region == "" {
		return nil, errors.New("llm: bedrock needs a region: set task.region, or $AWS_REGION, or a region in the AWS profile")
	}
	client := bedrockruntime.NewFromConfig(awsCfg, func(o *bedrockruntime.Options) {
		o.Retryer = aws.NopRetryer{}
		if t.endpoint != "" {
			o.BaseEndpoint = aws.String(t.endpoint)
		}
	})
	base := t.bedrockBase()
	return func(ctx context.Context, c *call, cp *capture) (reply, error) {
		in := base
		in.Messages, in.System = bedrockMessages(c.msgs)
		if c.maxTokens > 0 {
			ic := *base.InferenceConfig
			ic.MaxTokens = aws.Int32(int32(min(c.maxTokens, 1<<31-1)))
			in.InferenceConfig = &ic
		}
		out, err := client.Converse(ctx, &in, func(o *bedrockruntime.Options) {
			o.HTTPClient = capturingClient{cp: cp, next: t.cfg.HTTPClient, headers: t.cfg.Headers}
		})
		if err != nil {
			return reply{}, err
		}
		return t.bedrockReply(out)
	}, nil
}

// bedrockBase is what every call of the task sends beside its messages:
// the model, the inference configuration, the extra fields and the
// forced output tool.
func (t *Task) bedrockBase() bedrockruntime.ConverseInput {
	in := bedrockruntime.ConverseInput{ModelId: aws.String(t.cfg.Model), InferenceConfig: &types.InferenceConfiguration{}}
	ic := in.InferenceConfig
	if t.cfg.Temperature != nil {
		ic.Temperature = aws.Float32(float32(*t.cfg.Temperature))
	}
	if t.cfg.TopP != nil {
		ic.TopP = aws.Float32(float32(*t.cfg.TopP))
	}
	ic.StopSequences = t.cfg.Stop
	if len(t.cfg.ExtraBody) > 0 {
		// Converse's own field for what one model family takes beyond the
		// common configuration (Anthropic's top_k, …).
		in.AdditionalModelRequestFields = document.NewLazyDocument(t.cfg.ExtraBody)
	}
	if t.structured.Mode == ModeTool {
		in.ToolConfig = &types.ToolConfiguration{
			Tools: []types.Tool{&types.ToolMemberToolSpec{Value: types.ToolSpecification{
				Name:        aws.String(outputTool),
				Description: aws.String("Give the answer: its input is the answer, in the required shape."),
				InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(t.schema.sendable())},
			}}},
			ToolChoice: &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(outputTool)}},
		}
	}
	return in
}

// bedrockMessages are msgs as Converse's messages and system blocks.
func bedrockMessages(msgs []Message) ([]types.Message, []types.SystemContentBlock) {
	var system []types.SystemContentBlock
	out := make([]types.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == "system" {
			system = append(system, &types.SystemContentBlockMemberText{Value: m.Content})
			continue
		}
		out = append(out, types.Message{
			Role:    types.ConversationRole(m.Role),
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: m.Content}},
		})
	}
	return out, system
}

// bedrockReply reads a Converse answer: its text (or the output tool's
// input), its stop reason and its usage. A guardrail's or content
// filter's stop keeps the text that replaced the answer as the words.
func (t *Task) bedrockReply(out *bedrockruntime.ConverseOutput) (reply, error) {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return reply{}, fmt.Errorf("the answer has no message (output %T)", out.Output)
	}
	rep := reply{finish: string(out.StopReason)}
	var text strings.Builder
	for _, block := range msg.Value.Content {
		switch b := block.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(b.Value)
		case *types.ContentBlockMemberToolUse:
			if t.structured.Mode != ModeTool || aws.ToString(b.Value.Name) != outputTool || b.Value.Input == nil {
				continue
			}
			input, err := b.Value.Input.MarshalSmithyDocument()
			if err != nil {
				return reply{}, fmt.Errorf("the output tool's input: %w", err)
			}
			rep.content = string(input)
			if rep.finish == string(types.StopReasonToolUse) {
				// The forced tool's call is the answer, finished.
				rep.finish = string(types.StopReasonEndTurn)
			}
		}
	}
	if rep.content == "" {
		rep.content = text.String()
	}
	switch out.StopReason {
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		rep.refusal = strings.TrimSpace(text.String())
	}
	if u := out.Usage; u != nil {
		rep.usage = task.Usage{
			InputTokens:       int64(aws.ToInt32(u.InputTokens)),
			OutputTokens:      int64(aws.ToInt32(u.OutputTokens)),
			CachedInputTokens: int64(aws.ToInt32(u.CacheReadInputTokens)),
			CacheWriteTokens:  int64(aws.ToInt32(u.CacheWriteInputTokens)),
		}
		// Bedrock counts cached input apart from inputTokens; tenax's
		// input is all of it, the cached part inside.
		rep.usage.InputTokens += rep.usage.CachedInputTokens + rep.usage.CacheWriteTokens
	}
	return rep, nil
}

// capturingClient sends the SDK's requests through the task's HTTP client,
// with the spec's headers added after signing (SigV4 leaves unsigned
// headers alone) and the response kept in cp, as the other providers'
// middleware keeps it.
type capturingClient struct {
	cp      *capture
	next    *http.Client
	headers map[string]string
}

// Do sends req.
func (c capturingClient) Do(req *http.Request) (*http.Response, error) {
	for _, name := range sortedKeys(c.headers) {
		req.Header.Set(name, c.headers[name])
	}
	return c.cp.middleware(req, c.next.Do)
}

// bedrockDetail completes the Error of a Bedrock error response: the
// exception's name (x-amzn-ErrorType, as the SDK decoded it into a
// smithy.APIError) is its code, which package classify reads, and the
// request id is x-amzn-RequestId.
func bedrockDetail(e *Error, sdkErr error, h http.Header) {
	if apiErr, ok := errors.AsType[smithy.APIError](sdkErr); ok {
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
