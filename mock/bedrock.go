package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// bedrockContext is the context window of the mock models in Bedrock's
// dialect, in tokens (Claude's on Bedrock).
const bedrockContext = 200000

// bedrockPath starts the paths of Bedrock's runtime routes:
// /model/{modelId}/converse.
const bedrockPath = "/model/"

// bedrockGuardrailText is what a Bedrock guardrail answers in place of a
// blocked answer when the guardrail sets no message of its own.
const bedrockGuardrailText = "Sorry, the model cannot answer this question."

// bedrock is Amazon Bedrock's Converse API: POST /model/{modelId}/converse
// with a SigV4-signed JSON body of messages (content blocks), system
// blocks and an inferenceConfig. Errors are a status, the exception's
// name in x-amzn-ErrorType and a body {"message": …}; the request id is
// x-amzn-RequestId. Bedrock announces no rate-limit headers, and a 429
// comes without Retry-After. The mock reads the access key id from the
// Authorization header, and checks the signature when it was given the
// credentials to check it with (Config.AWSCredentials).
var bedrock = dialect{
	name:            "bedrock",
	requestIDHeader: "x-amzn-RequestId",
	contextWindow:   bedrockContext,
	toolCallPrefix:  "tooluse_mock",
	objectToolInput: true,
	apiKey:          sigV4AccessKey,
	verify:          verifySigV4,
	errorBody: func(_ string, e apiError) []byte {
		return mustJSON(map[string]string{"message": e.message})
	},
	errs: [numErrs]func(x *exchange) apiError{
		errMissingKey: func(*exchange) apiError {
			return bedrockError(403, "MissingAuthenticationTokenException", "Missing Authentication Token", cAuthErrors)
		},
		errBadKey: func(*exchange) apiError {
			return bedrockError(403, "UnrecognizedClientException", "The security token included in the request is invalid.", cAuthErrors)
		},
		errBadJSON: func(*exchange) apiError {
			return bedrockError(400, "SerializationException", "Unexpected character: the request body is not valid JSON", cBadRequests)
		},
		errUnknownModel: func(*exchange) apiError {
			return bedrockError(404, "ResourceNotFoundException", "Could not resolve the foundation model from the provided model identifier.", cBadRequests)
		},
		errUnknownRoute: func(*exchange) apiError {
			return bedrockError(404, "UnknownOperationException", "The requested operation is not recognized by the service.", cBadRequests)
		},
		errRateLimit: func(*exchange) apiError {
			return bedrockError(429, "ThrottlingException", "Too many requests, please wait before trying again.", cRateLimited)
		},
		errServer: func(*exchange) apiError {
			return bedrockError(500, "InternalServerException", "The system encountered an unexpected error during processing. Try your request again.", cServerErrors)
		},
		errOverloaded: func(*exchange) apiError {
			return bedrockError(503, "ServiceUnavailableException", "Bedrock is unable to process your request.", cOverloaded)
		},
		errModelNotReady: func(*exchange) apiError {
			return bedrockError(429, "ModelNotReadyException", "Model is not ready to serve inference requests. The model is being loaded; try your request again later.", cOverloaded)
		},
		errModelTimeout: func(*exchange) apiError {
			return bedrockError(408, "ModelTimeoutException", "Model has timed out in processing the request. Try your request again.", cServerErrors)
		},
		errQuota: func(*exchange) apiError {
			// A daily token quota: Bedrock throttles it like the
			// per-minute limit.
			return bedrockError(429, "ThrottlingException", "Too many tokens per day, please wait before trying again.", cBillingErrors)
		},
		errSpendLimit: func(*exchange) apiError {
			return bedrockError(429, "ThrottlingException", "Too many tokens per day, please wait before trying again.", cBillingErrors)
		},
		errPaymentRequired: func(*exchange) apiError {
			return bedrockError(403, "AccessDeniedException", "Model access is denied due to INVALID_PAYMENT_INSTRUMENT:A valid payment instrument must be provided. Your AWS Marketplace subscription for this model cannot be completed at this time.", cBillingErrors)
		},
		errForbidden: func(*exchange) apiError {
			return bedrockError(403, "AccessDeniedException", "You don't have access to the model with the specified model ID.", cForbidden)
		},
		errTooLarge: func(*exchange) apiError {
			return bedrockError(413, "ValidationException", "Request body exceeds the maximum size of 20 MB.", cTooLarge)
		},
		errContextLength: func(*exchange) apiError {
			return bedrockError(400, "ValidationException", "Input is too long for requested model.", cContextLength)
		},
	},
	decode:       decodeConverse,
	validate:     validateConverse,
	limitHeaders: func(http.Header, limitState, time.Time) {},
	rateLimited: func(_ *exchange, st limitState) apiError {
		if st.refused == byRequests {
			return bedrockError(429, "ThrottlingException", "Too many requests, please wait before trying again.", cRateLimited)
		}
		return bedrockError(429, "ThrottlingException", "Too many tokens, please wait before trying again.", cRateLimited)
	},
	answer: bedrockAnswer,
}

// bedrockError is an error response of Bedrock's: the exception's name in
// x-amzn-ErrorType, as AWS's JSON protocols send it, the message in the
// body.
func bedrockError(status int, exception, message string, c counter) apiError {
	return apiError{status: status, typ: exception, message: message, counter: c,
		header: map[string]string{"x-amzn-ErrorType": exception + ":http://internal.amazon.com/coral/com.amazon.bedrock/"}}
}

// sigV4AccessKey is the access key id of a SigV4 Authorization header
// ("AWS4-HMAC-SHA256 Credential=AKID/20261201/us-east-1/bedrock/aws4_request,
// SignedHeaders=…, Signature=…"), "" when the request is not signed.
func sigV4AccessKey(r *http.Request) string {
	auth, ok := strings.CutPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 ")
	if !ok {
		return ""
	}
	_, cred, ok := strings.Cut(auth, "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(cred, "/")
	return key
}

// bedrockChat answers POST /model/{modelId}/converse: the model id in the
// path is the model, as Bedrock has it. ConverseStream and InvokeModel are
// not served.
func (s *Server) bedrockChat(x *exchange) outcome {
	model, op, ok := strings.Cut(strings.TrimPrefix(x.r.URL.Path, bedrockPath), "/")
	if !ok || model == "" || op != "converse" {
		x.fail(x.d.errs[errUnknownRoute](x))
		return answered
	}
	x.deployment, x.start = model, time.Now()
	return s.chat(x)
}

// converseRequest is the part of a Converse request the mock reads.
type converseRequest struct {
	Messages *[]struct {
		Role    string            `json:"role"`
		Content []json.RawMessage `json:"content"`
	} `json:"messages"`
	System          []json.RawMessage `json:"system"`
	InferenceConfig *struct {
		MaxTokens   *int     `json:"maxTokens"`
		Temperature *float64 `json:"temperature"`
		TopP        *float64 `json:"topP"`
	} `json:"inferenceConfig"`
	ToolConfig *struct {
		Tools []struct {
			ToolSpec *struct {
				Name        string `json:"name"`
				InputSchema struct {
					JSON json.RawMessage `json:"json"`
				} `json:"inputSchema"`
			} `json:"toolSpec"`
		} `json:"tools"`
		ToolChoice map[string]struct {
			Name string `json:"name"`
		} `json:"toolChoice"`
	} `json:"toolConfig"`
}

// decodeConverse reads a Converse body into the request the handler
// answers: text blocks as the messages' text, toolUse and toolResult
// blocks as Anthropic's tool_use and tool_result, toolChoice {"tool":
// {"name": …}} as a forced tool.
func decodeConverse(x *exchange) error {
	var in converseRequest
	if err := json.Unmarshal(x.body, &in); err != nil {
		return err
	}
	req := chatRequest{System: contentOf(converseBlocks(in.System))}
	if in.Messages != nil {
		msgs := make([]wireMessage, 0, len(*in.Messages))
		for _, m := range *in.Messages {
			msgs = append(msgs, wireMessage{Role: m.Role, Content: contentOf(converseBlocks(m.Content))})
		}
		req.Messages = &msgs
	}
	if ic := in.InferenceConfig; ic != nil {
		req.MaxTokens, req.Temperature, req.TopP = ic.MaxTokens, ic.Temperature, ic.TopP
	}
	if tc := in.ToolConfig; tc != nil {
		for _, t := range tc.Tools {
			if t.ToolSpec != nil {
				req.Tools = append(req.Tools, wireTool{Name: t.ToolSpec.Name, InputSchema: t.ToolSpec.InputSchema.JSON})
			}
		}
		for mode, v := range tc.ToolChoice {
			req.ToolChoice = mustJSON(map[string]string{"type": mode, "name": v.Name})
		}
	}
	x.req = req
	x.converseTools = in.ToolConfig != nil
	return nil
}

// converseBlocks are Converse content blocks as the handler's: text, and
// toolUse and toolResult with their ids (a result's text and JSON
// content as its text).
func converseBlocks(raws []json.RawMessage) []toolBlock {
	var out []toolBlock
	for _, raw := range raws {
		var bl struct {
			Text    string `json:"text"`
			ToolUse *struct {
				ToolUseID string `json:"toolUseId"`
				Name      string `json:"name"`
			} `json:"toolUse"`
			ToolResult *struct {
				ToolUseID string `json:"toolUseId"`
				Content   []struct {
					Text string          `json:"text"`
					JSON json.RawMessage `json:"json"`
				} `json:"content"`
			} `json:"toolResult"`
		}
		if json.Unmarshal(raw, &bl) != nil {
			continue
		}
		switch {
		case bl.ToolUse != nil:
			out = append(out, toolBlock{Type: "tool_use", ID: bl.ToolUse.ToolUseID, Name: bl.ToolUse.Name})
		case bl.ToolResult != nil:
			r := toolBlock{Type: "tool_result", ToolUseID: bl.ToolResult.ToolUseID}
			for _, c := range bl.ToolResult.Content {
				r.Content += c.Text + string(c.JSON)
			}
			out = append(out, r)
		default:
			out = append(out, toolBlock{Type: "text", Text: bl.Text})
		}
	}
	return out
}

// converseInvalid is Bedrock's 400 for a request it refuses.
func converseInvalid(message string) *apiError {
	e := bedrockError(400, "ValidationException", message, cBadRequests)
	return &e
}

// validateConverse refuses what Converse refuses, with its messages.
func validateConverse(x *exchange) *apiError {
	req := x.req
	if req.Messages == nil || len(*req.Messages) == 0 || (*req.Messages)[0].Role != "user" {
		return converseInvalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	prev := ""
	for i, m := range *req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return converseInvalid(fmt.Sprintf("1 validation error detected: Value '%s' at 'messages.%d.member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]", m.Role, i+1))
		}
		if m.Role == prev {
			return converseInvalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		prev = m.Role
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return converseInvalid(fmt.Sprintf("1 validation error detected: Value '%d' at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1", *req.MaxTokens))
	}
	for name, v := range map[string]*float64{"temperature": req.Temperature, "topP": req.TopP} {
		if v != nil && (*v < 0 || *v > 1) {
			return converseInvalid(fmt.Sprintf("1 validation error detected: Value '%v' at 'inferenceConfig.%s' failed to satisfy constraint: Member must have value less than or equal to 1", *v, name))
		}
	}
	if name := forcedTool(x); name != "" && toolByName(req.Tools, name) == nil {
		return converseInvalid("The tool specified in toolChoice is not defined in toolConfig.tools.")
	}
	if i, why := unansweredCalls(*req.Messages, true); i >= 0 {
		return converseInvalid(fmt.Sprintf("The toolUse blocks of messages.%d must each be answered by a toolResult block with its toolUseId in messages.%d: %s.", i-1, i, why))
	}
	if !x.converseTools && x.agentSteps() > 0 {
		return converseInvalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
	}
	return nil
}

// bedrockStop names a finish as Converse's stopReason does: the mock's
// refusal is a guardrail's intervention, its content filter Bedrock's.
var bedrockStop = [...]string{finishStop: "end_turn", finishLength: "max_tokens", finishToolCalls: "tool_use",
	finishContentFilter: "content_filtered", finishRefusal: "guardrail_intervened"}

// bedrockAnswer is a Converse response.
func bedrockAnswer(x *exchange, a answer) []byte {
	content := []map[string]any{}
	t := a.text + a.refusal
	if a.finish == finishRefusal {
		t = bedrockGuardrailText
	}
	if t != "" {
		content = append(content, map[string]any{"text": t})
	}
	for _, c := range a.calls {
		var input any = map[string]any{}
		if json.Valid([]byte(c.args)) {
			input = json.RawMessage(c.args)
		}
		content = append(content, map[string]any{"toolUse": map[string]any{"toolUseId": c.id, "name": c.name, "input": input}})
	}
	return mustJSON(map[string]any{
		"output":     map[string]any{"message": map[string]any{"role": "assistant", "content": content}},
		"stopReason": bedrockStop[a.finish],
		"usage": map[string]int{
			"inputTokens": a.promptTokens, "outputTokens": a.completionTokens, "totalTokens": a.promptTokens + a.completionTokens,
		},
		"metrics": map[string]int64{"latencyMs": max(time.Since(x.start).Milliseconds(), 1)},
	})
}
