package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// geminiContext is the context window of the mock models in Gemini's
// dialect, in tokens (Gemini 2.5 Flash's).
const geminiContext = 1048576

// The paths of generateContent: the Gemini API's
// /v1beta/models/{model}:generateContent, and Vertex AI's
// /v1/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
// (and v1beta1).
const (
	geminiPath        = "/v1beta/models/"
	vertexPath        = "/v1/projects/"
	vertexBeta1Path   = "/v1beta1/projects/"
	generateOperation = "generateContent"
)

// gemini is Google's generateContent, on the Gemini API (an API key in
// x-goog-api-key or ?key=) and on Vertex AI (a bearer token, whose value
// the mock does not check). Errors are google.rpc.Status, {"error":
// {"code", "message", "status", "details"}}: a 429 is RESOURCE_EXHAUSTED
// with a QuotaFailure naming the quota (per minute or per day) and a
// RetryInfo's retryDelay; Google sends no Retry-After and no rate-limit
// headers.
var gemini = dialect{
	name:            "gemini",
	requestIDHeader: "x-goog-request-id",
	contextWindow:   geminiContext,
	toolCallPrefix:  "call_mock",
	objectToolInput: true,
	apiKey: func(r *http.Request) string {
		if k := r.Header.Get("X-Goog-Api-Key"); k != "" {
			return k
		}
		if k := r.URL.Query().Get("key"); k != "" {
			return k
		}
		return bearerKey(r)
	},
	errorBody: func(_ string, e apiError) []byte {
		body := map[string]any{"code": e.status, "message": e.message, "status": e.typ}
		if e.details != nil {
			body["details"] = e.details
		}
		return mustJSON(map[string]any{"error": body})
	},
	errs: [numErrs]func(x *exchange) apiError{
		errMissingKey: func(x *exchange) apiError {
			if isVertexPath(x.r.URL.Path) {
				return googleError(401, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.", cAuthErrors)
			}
			return googleError(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.", cAuthErrors)
		},
		errBadKey: func(*exchange) apiError {
			e := googleError(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.", cAuthErrors)
			e.details = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID",
				"domain": "googleapis.com", "metadata": map[string]string{"service": "generativelanguage.googleapis.com"}}}
			return e
		},
		errBadJSON: func(*exchange) apiError {
			return googleError(400, "INVALID_ARGUMENT", "Invalid JSON payload received. Unexpected token.", cBadRequests)
		},
		errUnknownModel: func(x *exchange) apiError {
			return googleError(404, "NOT_FOUND", fmt.Sprintf("models/%s is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods.", x.model), cBadRequests)
		},
		errUnknownRoute: func(*exchange) apiError {
			return googleError(404, "NOT_FOUND", "The requested URL was not found on this server.", cBadRequests)
		},
		errRateLimit: func(x *exchange) apiError {
			return geminiQuotaError("GenerateRequestsPerMinutePerProjectPerModel", sporadicWait(x.limits.requests), cRateLimited)
		},
		errServer: func(*exchange) apiError {
			return googleError(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting", cServerErrors)
		},
		errOverloaded: func(*exchange) apiError {
			return googleError(503, "UNAVAILABLE", "The model is overloaded. Please try again later.", cOverloaded)
		},
		errModelTimeout: func(*exchange) apiError {
			return googleError(504, "DEADLINE_EXCEEDED", "Deadline expired before operation could complete.", cServerErrors)
		},
		errQuota: func(*exchange) apiError {
			return geminiQuotaError("GenerateRequestsPerDayPerProjectPerModel", 17*time.Hour, cBillingErrors)
		},
		errSpendLimit: func(*exchange) apiError {
			return geminiQuotaError("GenerateRequestsPerDayPerProjectPerModel", 17*time.Hour, cBillingErrors)
		},
		errPaymentRequired: func(*exchange) apiError {
			return googleError(400, "FAILED_PRECONDITION", "Gemini API free tier is not available in your country. Please enable billing on your project in Google AI Studio.", cBillingErrors)
		},
		errForbidden: func(*exchange) apiError {
			return googleError(403, "PERMISSION_DENIED", "Permission denied on resource project mock-project (or it may not exist).", cForbidden)
		},
		errTooLarge: func(*exchange) apiError {
			return googleError(400, "INVALID_ARGUMENT", "Request payload size exceeds the limit: 20971520 bytes.", cTooLarge)
		},
		errContextLength: func(x *exchange) apiError {
			return googleError(400, "INVALID_ARGUMENT", fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", x.promptTokens, x.window()), cContextLength)
		},
	},
	decode:       decodeGenerate,
	validate:     validateGenerate,
	limitHeaders: func(http.Header, limitState, time.Time) {},
	rateLimited: func(_ *exchange, st limitState) apiError {
		return geminiQuotaError("GenerateRequestsPerMinutePerProjectPerModel", st.retryAfter, cRateLimited)
	},
	answer: geminiAnswer,
}

// isVertexPath reports whether path is Vertex AI's (/v1/projects/… or
// /v1beta1/projects/…) rather than the Gemini API's.
func isVertexPath(path string) bool {
	return strings.HasPrefix(path, vertexPath) || strings.HasPrefix(path, vertexBeta1Path)
}

// googleError is a google.rpc.Status error response.
func googleError(status int, code, message string, c counter) apiError {
	return apiError{status: status, typ: code, message: message, counter: c}
}

// geminiQuotaError is Gemini's 429 RESOURCE_EXHAUSTED on quotaID, with the
// QuotaFailure, Help and RetryInfo details Google sends: retryDelay in
// whole seconds, at least 1s.
func geminiQuotaError(quotaID string, wait time.Duration, c counter) apiError {
	e := googleError(429, "RESOURCE_EXHAUSTED", "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.", c)
	secs := max(int64((wait+time.Second-1)/time.Second), 1)
	e.details = []any{
		map[string]any{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []any{map[string]any{
			"quotaMetric": "generativelanguage.googleapis.com/generate_content_requests", "quotaId": quotaID,
			"quotaDimensions": map[string]string{"location": "global", "model": "mock"}, "quotaValue": "60",
		}}},
		map[string]any{"@type": "type.googleapis.com/google.rpc.Help", "links": []any{map[string]string{
			"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}}},
		map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": strconv.FormatInt(secs, 10) + "s"},
	}
	return e
}

// geminiChat answers POST …/models/{model}:generateContent on either
// backend's path: the model in the path is the model. streamGenerateContent
// and the other methods are not served.
func (s *Server) geminiChat(x *exchange) outcome {
	path := x.r.URL.Path
	var rest string
	if strings.HasPrefix(path, geminiPath) {
		rest = strings.TrimPrefix(path, geminiPath)
	} else {
		// projects/{p}/locations/{l}/publishers/google/models/{model}:op
		parts := strings.SplitN(strings.TrimPrefix(strings.TrimPrefix(path, vertexPath), vertexBeta1Path), "/", 7)
		if len(parts) != 7 || parts[0] == "" || parts[1] != "locations" || parts[2] == "" ||
			parts[3] != "publishers" || parts[4] != "google" || parts[5] != "models" {
			x.fail(x.d.errs[errUnknownRoute](x))
			return answered
		}
		rest = parts[6]
	}
	model, op, ok := strings.Cut(rest, ":")
	if ok && op == geminiBatchOp && strings.HasPrefix(path, geminiPath) && model != "" && !strings.Contains(model, "/") {
		return s.createGeminiBatch(x, model)
	}
	if !ok || model == "" || strings.Contains(model, "/") || op != generateOperation {
		x.fail(x.d.errs[errUnknownRoute](x))
		return answered
	}
	x.deployment, x.signsCalls = geminiGeneration(model)
	return s.chat(x)
}

// generateRequest is the part of a generateContent request the mock reads.
type generateRequest struct {
	Contents *[]struct {
		Role  string `json:"role"`
		Parts []struct {
			Text string `json:"text"`
			// ThoughtSignature is a Gemini 3 model's signature of the
			// part, in base64.
			ThoughtSignature string `json:"thoughtSignature"`
			FunctionCall     *struct {
				ID   string `json:"id"`
				Name string `json:"name"`
			} `json:"functionCall"`
			FunctionResponse *struct {
				ID       string          `json:"id"`
				Name     string          `json:"name"`
				Response json.RawMessage `json:"response"`
			} `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Parameters           json.RawMessage `json:"parameters"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig *struct {
		FunctionCallingConfig *struct {
			Mode                 string   `json:"mode"`
			AllowedFunctionNames []string `json:"allowedFunctionNames"`
		} `json:"functionCallingConfig"`
	} `json:"toolConfig"`
	SystemInstruction *struct {
		Parts []struct {
			Text string `json:"text"`
		} `json:"parts"`
	} `json:"systemInstruction"`
	GenerationConfig *struct {
		MaxOutputTokens    *int            `json:"maxOutputTokens"`
		Temperature        *float64        `json:"temperature"`
		TopP               *float64        `json:"topP"`
		ResponseMimeType   string          `json:"responseMimeType"`
		ResponseJSONSchema json.RawMessage `json:"responseJsonSchema"`
		ResponseSchema     json.RawMessage `json:"responseSchema"`
	} `json:"generationConfig"`
}

// decodeGenerate reads a generateContent body into the request the
// handler answers: the contents' text parts as the messages (role model
// as the assistant's), the system instruction as the system prompt, a
// response schema as a json_schema format and responseMimeType
// application/json alone as a json_object one; functionCall and
// functionResponse parts and functionDeclarations as Anthropic's tool
// turns and tools.
func decodeGenerate(x *exchange) error {
	var in generateRequest
	if err := json.Unmarshal(x.body, &in); err != nil {
		return err
	}
	req := chatRequest{}
	if si := in.SystemInstruction; si != nil {
		var b strings.Builder
		for _, p := range si.Parts {
			b.WriteString(p.Text)
		}
		req.System = mustJSON(b.String())
	}
	req.Messages = generateContents(in)
	if x.signsCalls {
		x.refusal = unsignedCall(in, isVertexPath(x.r.URL.Path))
	}
	req.Tools, req.ToolChoice = generateTools(in)
	if gc := in.GenerationConfig; gc != nil {
		req.MaxTokens, req.Temperature, req.TopP = gc.MaxOutputTokens, gc.Temperature, gc.TopP
		schema := gc.ResponseJSONSchema
		if len(schema) == 0 {
			schema = gc.ResponseSchema
		}
		switch {
		case len(schema) > 0:
			req.ResponseFormat = &responseFormat{Type: "json_schema"}
			req.ResponseFormat.JSONSchema = &struct {
				Name   string          `json:"name"`
				Schema json.RawMessage `json:"schema"`
				Strict *bool           `json:"strict"`
			}{Name: "response", Schema: schema}
		case gc.ResponseMimeType == "application/json":
			req.ResponseFormat = &responseFormat{Type: "json_object"}
		}
	}
	x.req = req
	return nil
}

// generateContents are a request's contents as the handler's messages:
// text parts as their text, functionCall and functionResponse parts as
// Anthropic's tool_use and tool_result blocks; nil without contents.
func generateContents(in generateRequest) *[]wireMessage {
	if in.Contents == nil {
		return nil
	}
	msgs := make([]wireMessage, 0, len(*in.Contents))
	for _, c := range *in.Contents {
		var bs []toolBlock
		for _, p := range c.Parts {
			switch {
			case p.FunctionCall != nil:
				bs = append(bs, toolBlock{Type: "tool_use", ID: p.FunctionCall.ID, Name: p.FunctionCall.Name})
			case p.FunctionResponse != nil:
				bs = append(bs, toolBlock{Type: "tool_result", ToolUseID: p.FunctionResponse.ID, Name: p.FunctionResponse.Name,
					Content: string(p.FunctionResponse.Response)})
			default:
				bs = append(bs, toolBlock{Type: "text", Text: p.Text})
			}
		}
		role := c.Role
		if role == "model" {
			role = "assistant"
		}
		content := contentOf(bs)
		if content == nil {
			content = mustJSON("")
		}
		msgs = append(msgs, wireMessage{Role: role, Content: content})
	}
	return &msgs
}

// generateTools are a request's functionDeclarations as the handler's
// tools (parametersJsonSchema, else parameters, as the schema), and its
// functionCallingConfig as a tool_choice: NONE none, ANY of one allowed
// function that tool, ANY any.
func generateTools(in generateRequest) ([]wireTool, json.RawMessage) {
	var tools []wireTool
	for _, t := range in.Tools {
		for _, f := range t.FunctionDeclarations {
			schema := f.ParametersJSONSchema
			if len(schema) == 0 {
				schema = f.Parameters
			}
			tools = append(tools, wireTool{Name: f.Name, InputSchema: schema})
		}
	}
	if tc := in.ToolConfig; tc != nil && tc.FunctionCallingConfig != nil {
		switch fc := tc.FunctionCallingConfig; {
		case fc.Mode == "NONE":
			return tools, mustJSON("none")
		case fc.Mode == "ANY" && len(fc.AllowedFunctionNames) == 1:
			return tools, mustJSON(map[string]string{"type": "tool", "name": fc.AllowedFunctionNames[0]})
		case fc.Mode == "ANY":
			return tools, mustJSON(map[string]string{"type": "any"})
		}
	}
	return tools, nil
}

// googleInvalid is Google's 400 INVALID_ARGUMENT for a request it refuses.
func googleInvalid(message string) *apiError {
	e := googleError(400, "INVALID_ARGUMENT", message, cBadRequests)
	return &e
}

// validateGenerate refuses what generateContent refuses, with its
// messages.
func validateGenerate(x *exchange) *apiError {
	req := x.req
	if req.Messages == nil || len(*req.Messages) == 0 {
		return googleInvalid("* GenerateContentRequest.contents: contents is not specified")
	}
	for i, m := range *req.Messages {
		if m.Role != "user" && m.Role != "assistant" && m.Role != "" {
			return googleInvalid(fmt.Sprintf("Please use a valid role: user, model. (contents[%d].role %q)", i, m.Role))
		}
	}
	if req.MaxTokens != nil && *req.MaxTokens < 0 {
		return googleInvalid("* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be positive.")
	}
	if v := req.Temperature; v != nil && (*v < 0 || *v > 2) {
		return googleInvalid(fmt.Sprintf("* GenerateContentRequest.generation_config.temperature: temperature must be in the range [0.0, 2.0]. (%v)", *v))
	}
	if v := req.TopP; v != nil && (*v < 0 || *v > 1) {
		return googleInvalid(fmt.Sprintf("* GenerateContentRequest.generation_config.top_p: top_p must be in the range [0.0, 1.0]. (%v)", *v))
	}
	if i, _ := unansweredCalls(*req.Messages, false); i >= 0 {
		return googleInvalid(fmt.Sprintf("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn. (contents[%d])", i))
	}
	if len(req.Tools) > 0 && req.ResponseFormat != nil {
		return googleInvalid("Function calling with a response mime type: 'application/json' is unsupported")
	}
	return x.refusal
}

// geminiFinish names a finish as generateContent's finishReason does: the
// mock's content filter is a SAFETY block (its refusal blocks the prompt
// instead, before any candidate).
var geminiFinish = [...]string{finishStop: "STOP", finishLength: "MAX_TOKENS", finishToolCalls: "STOP",
	finishContentFilter: "SAFETY", finishRefusal: "SAFETY"}

// geminiSafety are the safety ratings of a blocked candidate or prompt.
func geminiSafety(blocked bool) []any {
	return []any{
		map[string]any{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": blocked},
		map[string]any{"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
	}
}

// geminiAnswer is a generateContent response.
func geminiAnswer(x *exchange, a answer) []byte {
	usage := map[string]any{"promptTokenCount": a.promptTokens, "candidatesTokenCount": a.completionTokens,
		"totalTokenCount":     a.promptTokens + a.completionTokens,
		"promptTokensDetails": []any{map[string]any{"modality": "TEXT", "tokenCount": a.promptTokens}}}
	body := map[string]any{"usageMetadata": usage, "modelVersion": x.model, "responseId": x.requestID}
	if a.finish == finishRefusal {
		// A blocked prompt: no candidate, no output tokens.
		delete(usage, "candidatesTokenCount")
		usage["totalTokenCount"] = a.promptTokens
		body["promptFeedback"] = map[string]any{"blockReason": "PROHIBITED_CONTENT", "safetyRatings": geminiSafety(false)}
		return mustJSON(body)
	}
	cand := map[string]any{"finishReason": geminiFinish[a.finish], "index": 0}
	if a.finish == finishContentFilter {
		// A blocked answer carries no content, only the ratings.
		cand["safetyRatings"] = geminiSafety(true)
		body["candidates"] = []any{cand}
		return mustJSON(body)
	}
	var parts []any
	if a.text != "" {
		parts = append(parts, map[string]any{"text": a.text})
	}
	for i, c := range a.calls {
		var args any = map[string]any{}
		if json.Valid([]byte(c.args)) {
			args = json.RawMessage(c.args)
		}
		part := map[string]any{"functionCall": map[string]any{"id": c.id, "name": c.name, "args": args}}
		if x.signsCalls && i == 0 {
			// A Gemini 3 model signs an answer's first call only.
			part["thoughtSignature"] = thoughtSignature(c.name, c.id)
		}
		parts = append(parts, part)
	}
	cand["content"] = map[string]any{"role": "model", "parts": parts}
	body["candidates"] = []any{cand}
	return mustJSON(body)
}
