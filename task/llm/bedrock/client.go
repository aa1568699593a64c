// Package bedrock calls Amazon Bedrock's Converse API for package
// task/llm through the AWS SDK for Go v2: an llm.Config with provider
// bedrock takes a Client as its Bedrock field. The SDK lives here, apart,
// so that the packages that only read tasks and records (report, web,
// metrics) do not carry it.
//
// Calls are signed with SigV4 with credentials from the SDK's default
// chain: the environment ($AWS_ACCESS_KEY_ID, …), the shared config and
// credentials files and their profiles ($AWS_PROFILE), SSO, a web
// identity, the container's or the instance's role. The SDK never
// retries: tenax alone decides.
package bedrock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/task/llm"
)

// Options say where a Client calls.
type Options struct {
	// Region is the AWS region ("us-east-1"); "" means the SDK's
	// ($AWS_REGION, the profile's region).
	Region string
	// Endpoint replaces the region's endpoint (a VPC endpoint, the mock);
	// "" means the region's.
	Endpoint string
	// Credentials sign the calls; nil means the SDK's default chain.
	Credentials aws.CredentialsProvider
}

// Client is Bedrock's Converse call, an llm.Converser. It is safe for
// concurrent use.
type Client struct {
	sdk *bedrockruntime.Client
}

// New loads the AWS configuration (the environment and the shared files:
// no request is made until a call is signed) and builds the Client. A
// region is required, from opts or the configuration.
func New(ctx context.Context, opts Options) (*Client, error) {
	// The SDK's own HTTP client stays the credential providers' (SSO,
	// STS, the instance role), with $AWS_CA_BUNDLE applied to it; the
	// calls to Bedrock go through the task's (the send of Converse).
	load := []func(*awsconfig.LoadOptions) error{
		awsconfig.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
	}
	if opts.Region != "" {
		load = append(load, awsconfig.WithRegion(opts.Region))
	}
	if opts.Credentials != nil {
		load = append(load, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("bedrock: the AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("bedrock: no region: set task.region, or $AWS_REGION, or a region in the AWS profile")
	}
	sdk := bedrockruntime.NewFromConfig(cfg, func(o *bedrockruntime.Options) {
		o.Retryer = aws.NopRetryer{}
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(strings.TrimSuffix(opts.Endpoint, "/"))
		}
	})
	return &Client{sdk: sdk}, nil
}

// Converse makes the call, every request through send. An error response
// comes back as the SDK's error: a smithy.APIError whose ErrorCode is the
// exception (ThrottlingException, …), inside the SDK's typed exception
// (*types.ThrottlingException, …).
func (c *Client) Converse(ctx context.Context, req llm.ConverseRequest, send func(*http.Request) (*http.Response, error)) (llm.ConverseReply, error) {
	in := converseInput(req)
	out, err := c.sdk.Converse(ctx, in, func(o *bedrockruntime.Options) { o.HTTPClient = doer(send) })
	if err != nil {
		return llm.ConverseReply{}, err
	}
	return converseReply(req, out)
}

// doer is send as the SDK's HTTP client.
type doer func(*http.Request) (*http.Response, error)

// Do sends req.
func (d doer) Do(req *http.Request) (*http.Response, error) { return d(req) }

// converseInput is req in the SDK's shape.
func converseInput(req llm.ConverseRequest) *bedrockruntime.ConverseInput {
	in := &bedrockruntime.ConverseInput{ModelId: aws.String(req.Model), InferenceConfig: &types.InferenceConfiguration{StopSequences: req.Stop}}
	ic := in.InferenceConfig
	if req.MaxTokens > 0 {
		ic.MaxTokens = aws.Int32(int32(min(req.MaxTokens, 1<<31-1)))
	}
	if req.Temperature != nil {
		ic.Temperature = aws.Float32(float32(*req.Temperature))
	}
	if req.TopP != nil {
		ic.TopP = aws.Float32(float32(*req.TopP))
	}
	for _, s := range req.System {
		in.System = append(in.System, &types.SystemContentBlockMemberText{Value: s})
	}
	for _, m := range req.Messages {
		in.Messages = append(in.Messages, types.Message{
			Role:    types.ConversationRole(m.Role),
			Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: m.Content}},
		})
	}
	in.Messages = append(in.Messages, stepMessages(req.Steps)...)
	if len(req.Extra) > 0 {
		in.AdditionalModelRequestFields = document.NewLazyDocument(req.Extra)
	}
	in.ToolConfig = toolConfig(req)
	return in
}

// toolConfig is req's tools: an agent's at the model's choice (auto), the
// output tool last among them when the answer has a schema; or the
// output tool alone, forced; nil for a call without tools.
func toolConfig(req llm.ConverseRequest) *types.ToolConfiguration {
	spec := func(name, description string, schema map[string]any) types.Tool {
		s := types.ToolSpecification{Name: aws.String(name), InputSchema: &types.ToolInputSchemaMemberJson{Value: document.NewLazyDocument(schema)}}
		if description != "" {
			s.Description = aws.String(description)
		}
		return &types.ToolMemberToolSpec{Value: s}
	}
	var tc types.ToolConfiguration
	for _, d := range req.Tools {
		tc.Tools = append(tc.Tools, spec(d.Name, d.Description, object(d.Parameters)))
	}
	if t := req.Tool; t != nil {
		tc.Tools = append(tc.Tools, spec(t.Name, t.Description, t.Schema))
	}
	switch {
	case len(req.Tools) > 0:
		tc.ToolChoice = &types.ToolChoiceMemberAuto{}
	case req.Tool != nil:
		tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: aws.String(req.Tool.Name)}}
	default:
		return nil
	}
	return &tc
}

// converseReply reads the SDK's answer: the text blocks, the input of the
// request's tool, the stop reason and the usage.
func converseReply(req llm.ConverseRequest, out *bedrockruntime.ConverseOutput) (llm.ConverseReply, error) {
	msg, ok := out.Output.(*types.ConverseOutputMemberMessage)
	if !ok {
		return llm.ConverseReply{}, fmt.Errorf("bedrock: the answer has no message (output %T)", out.Output)
	}
	rep := llm.ConverseReply{StopReason: string(out.StopReason)}
	var text strings.Builder
	for _, block := range msg.Value.Content {
		switch b := block.(type) {
		case *types.ContentBlockMemberText:
			text.WriteString(b.Value)
		case *types.ContentBlockMemberToolUse:
			name := aws.ToString(b.Value.Name)
			input := []byte("{}")
			if b.Value.Input != nil {
				var err error
				if input, err = b.Value.Input.MarshalSmithyDocument(); err != nil {
					return llm.ConverseReply{}, fmt.Errorf("bedrock: the input of tool %q: %w", name, err)
				}
			}
			if req.Tool != nil && name == req.Tool.Name {
				if b.Value.Input != nil {
					rep.ToolInput = input
				}
				continue
			}
			rep.Calls = append(rep.Calls, agent.Call{ID: aws.ToString(b.Value.ToolUseId), Name: name, Arguments: input})
		}
	}
	rep.Text = text.String()
	if u := out.Usage; u != nil {
		rep.Usage = task.Usage{
			OutputTokens:      int64(aws.ToInt32(u.OutputTokens)),
			CachedInputTokens: int64(aws.ToInt32(u.CacheReadInputTokens)),
			CacheWriteTokens:  int64(aws.ToInt32(u.CacheWriteInputTokens)),
		}
		// Bedrock counts cached input apart from inputTokens; tenax's
		// input is all of it, the cached part inside.
		rep.Usage.InputTokens = int64(aws.ToInt32(u.InputTokens)) + rep.Usage.CachedInputTokens + rep.Usage.CacheWriteTokens
	}
	return rep, nil
}

// stepMessages are an agent's steps as Converse messages: the assistant's
// text and toolUse blocks, then a user message of toolResult blocks (an
// error's status "error"). A toolUse block's input must be an object:
// arguments that are not one (the API parses them, so only another
// provider's recorded step holds such) go as {}. A step with no text and
// no call (none is recorded, but Converse refuses an empty message) says
// so in a text block.
func stepMessages(steps []agent.Step) []types.Message {
	var out []types.Message
	for _, s := range steps {
		a := types.Message{Role: types.ConversationRoleAssistant}
		if s.Text != "" {
			a.Content = append(a.Content, &types.ContentBlockMemberText{Value: s.Text})
		}
		for _, c := range s.Calls {
			a.Content = append(a.Content, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
				ToolUseId: aws.String(c.ID), Name: aws.String(c.Name), Input: document.NewLazyDocument(object(c.Arguments))}})
		}
		if len(a.Content) == 0 {
			a.Content = append(a.Content, &types.ContentBlockMemberText{Value: "(no answer)"})
		}
		u := types.Message{Role: types.ConversationRoleUser}
		for _, o := range s.Outcomes {
			r := types.ToolResultBlock{ToolUseId: aws.String(o.CallID),
				Content: []types.ToolResultContentBlock{&types.ToolResultContentBlockMemberText{Value: o.Content}}}
			if o.IsError {
				r.Status = types.ToolResultStatusError
			}
			u.Content = append(u.Content, &types.ContentBlockMemberToolResult{Value: r})
		}
		out = append(out, a)
		if len(u.Content) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// object is raw as a JSON object's value for a document: {} when raw is
// not an object.
func object(raw json.RawMessage) map[string]any {
	var obj map[string]any
	if json.Unmarshal(raw, &obj) != nil || obj == nil {
		return map[string]any{}
	}
	return obj
}
