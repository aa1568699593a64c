package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// openAIContext is the context window of the mock models in OpenAI's
// dialect, in tokens.
const openAIContext = 128000

// openAI is OpenAI's chat completions API.
var openAI = dialect{
	name:            "openai",
	requestIDHeader: "x-request-id",
	everyResponse:   map[string]string{"openai-processing-ms": "1", "openai-version": "2020-10-01", "openai-organization": "org-mock"},
	contextWindow:   openAIContext,
	toolCallPrefix:  "call_mock",
	apiKey:          bearerKey,
	errorBody:       openAIErrorBody,
	errs: [numErrs]func(x *exchange) apiError{
		errMissingKey: func(*exchange) apiError {
			return apiError{status: 401, typ: "invalid_request_error", counter: cAuthErrors,
				message: "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."}
		},
		errBadKey: func(x *exchange) apiError {
			return apiError{status: 401, typ: "invalid_request_error", code: "invalid_api_key", counter: cAuthErrors,
				message: "Incorrect API key provided: " + maskKey(x.key) + ". You can find your API key at https://platform.openai.com/account/api-keys."}
		},
		errBadJSON: func(*exchange) apiError {
			return apiError{status: 400, typ: "invalid_request_error", counter: cBadRequests,
				message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)"}
		},
		errUnknownModel: func(x *exchange) apiError {
			return apiError{status: 404, typ: "invalid_request_error", code: "model_not_found", counter: cBadRequests,
				message: fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", x.model)}
		},
		errUnknownRoute: func(x *exchange) apiError {
			return apiError{status: 404, typ: "invalid_request_error", counter: cBadRequests,
				message: fmt.Sprintf("Invalid URL (%s %s)", x.r.Method, x.r.URL.Path)}
		},
		errRateLimit: func(x *exchange) apiError {
			limit, wait := x.limits.requests.limit, sporadicWait(x.limits.requests)
			return apiError{status: 429, typ: "requests", code: "rate_limit_exceeded", counter: cRateLimited,
				header:  retryHeaders(wait, true),
				message: fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", x.model, limit, limit, goDuration(wait))}
		},
		errServer:     openAIServerError,
		errOverloaded: openAIOverloaded,
		// Bedrock's model faults, as OpenAI says the nearest thing.
		errModelNotReady: openAIOverloaded,
		errModelTimeout:  openAIServerError,
		errQuota: func(*exchange) apiError {
			return apiError{status: 429, typ: "insufficient_quota", code: "insufficient_quota", counter: cBillingErrors,
				message: "You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors."}
		},
		errSpendLimit: func(*exchange) apiError {
			return apiError{status: 429, typ: "insufficient_quota", code: "enforced_spend_limit_reached", counter: cBillingErrors,
				message: "You have reached the spend limit set for this project. Raise it at https://platform.openai.com/settings/organization/limits to continue."}
		},
		errPaymentRequired: func(*exchange) apiError {
			return apiError{status: 402, typ: "insufficient_quota", code: "billing_not_active", counter: cBillingErrors,
				message: "Your account is not active, please check your billing details on our website."}
		},
		errForbidden: func(*exchange) apiError {
			return apiError{status: 403, typ: "request_forbidden", code: "unsupported_country_region_territory", counter: cForbidden,
				message: "Country, region, or territory not supported"}
		},
		errTooLarge: func(*exchange) apiError {
			return apiError{status: 413, typ: "invalid_request_error", code: "request_too_large", counter: cTooLarge,
				message: "Request too large: the request body exceeds the maximum size of 32 MB."}
		},
		errContextLength: func(x *exchange) apiError {
			n := max(x.promptTokens+x.maxTokens, x.window()+1)
			return apiError{status: 400, typ: "invalid_request_error", code: "context_length_exceeded", param: "messages", counter: cContextLength,
				message: fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", x.window(), n)}
		},
	},
	validate:     validateOpenAI,
	limitHeaders: openAILimitHeaders,
	rateLimited:  openAIRateLimited,
	answer:       openAIAnswer,
	events:       openAIEvents,
	streamError: func(x *exchange, e apiError) []byte {
		return sse("", openAIErrorBody(x.requestID, e))
	},
	models: func() []byte {
		type model struct {
			ID      string `json:"id"`
			Object  string `json:"object"`
			Created int64  `json:"created"`
			OwnedBy string `json:"owned_by"`
		}
		var data []model
		for _, m := range models {
			data = append(data, model{m, "model", modelsCreated, "tenax"})
		}
		return mustJSON(map[string]any{"object": "list", "data": data})
	},
	model: func(id string) []byte {
		return mustJSON(map[string]any{"id": id, "object": "model", "created": modelsCreated, "owned_by": "tenax"})
	},
}

// bearerKey is the key of an Authorization: Bearer header.
func bearerKey(r *http.Request) string {
	if k, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	return ""
}

// openAIErrorBody is {"error": {message, type, param, code}}, param and
// code null when empty.
func openAIErrorBody(_ string, e apiError) []byte {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: e.message, Type: e.typ}
	if e.code != "" {
		b.Code = &e.code
	}
	if e.param != "" {
		b.Param = &e.param
	}
	return mustJSON(struct {
		Error body `json:"error"`
	}{b})
}

// validateOpenAI refuses what OpenAI's chat completions refuse, with its
// messages.
func validateOpenAI(x *exchange) *apiError {
	const inv = "invalid_request_error"
	req := x.req
	if req.Model == nil || *req.Model == "" {
		return bad(inv, "", "", "you must provide a model parameter")
	}
	if req.Messages == nil {
		return bad(inv, "missing_required_parameter", "messages", "Missing required parameter: 'messages'.")
	}
	if len(*req.Messages) == 0 {
		return bad(inv, "empty_array", "messages", "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.")
	}
	for i, m := range *req.Messages {
		switch m.Role {
		case "system", "developer", "user", "assistant", "tool", "function":
		default:
			return bad(inv, "invalid_value", fmt.Sprintf("messages[%d].role", i),
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", m.Role))
		}
		if m.Role == "tool" && m.ToolCallID == "" {
			return bad(inv, "missing_required_parameter", fmt.Sprintf("messages[%d].tool_call_id", i),
				fmt.Sprintf("Missing required parameter: 'messages[%d].tool_call_id'.", i))
		}
	}
	if e := rangeCheck("temperature", req.Temperature, 0, 2); e != nil {
		return e
	}
	if e := rangeCheck("top_p", req.TopP, 0, 1); e != nil {
		return e
	}
	for _, p := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}, {"n", req.N}} {
		if p.v != nil && *p.v < 1 {
			return bad(inv, "integer_below_min_value", p.name,
				fmt.Sprintf("Invalid '%s': integer below minimum value. Expected a value >= 1, but got %d instead.", p.name, *p.v))
		}
	}
	if req.StreamOptions != nil && !req.Stream {
		return bad(inv, "", "stream_options", "The 'stream_options' parameter is only allowed when 'stream' is enabled.")
	}
	if rf := req.ResponseFormat; rf != nil {
		switch rf.Type {
		case "text":
		case "json_object":
			if !mentionsJSON(*req.Messages) {
				return bad(inv, "", "messages", "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
			}
		case "json_schema":
			if rf.JSONSchema == nil {
				return bad(inv, "missing_required_parameter", "response_format.json_schema", "Missing required parameter: 'response_format.json_schema'.")
			}
			if rf.JSONSchema.Name == "" {
				return bad(inv, "missing_required_parameter", "response_format.json_schema.name", "Missing required parameter: 'response_format.json_schema.name'.")
			}
		default:
			return bad(inv, "invalid_value", "response_format.type",
				fmt.Sprintf("Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", rf.Type))
		}
	}
	if e := validateOpenAITools(x); e != nil {
		return e
	}
	return checkMetadata(req.Metadata)
}

// validateOpenAITools refuses tools and a tool_choice OpenAI refuses.
func validateOpenAITools(x *exchange) *apiError {
	const inv = "invalid_request_error"
	req := x.req
	for i, t := range req.Tools {
		if t.Function == nil || t.Function.Name == "" {
			return bad(inv, "missing_required_parameter", fmt.Sprintf("tools[%d].function.name", i),
				fmt.Sprintf("Missing required parameter: 'tools[%d].function.name'.", i))
		}
	}
	if len(req.ToolChoice) > 0 && string(req.ToolChoice) != "null" {
		if len(req.Tools) == 0 {
			return bad(inv, "", "tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.")
		}
		if name := forcedTool(x); name != "" && toolByName(req.Tools, name) == nil {
			return bad(inv, "", "tool_choice", fmt.Sprintf("Invalid value for 'tool_choice': tool '%s' not found in 'tools'.", name))
		}
	}
	return nil
}

// rangeCheck refuses a number outside [lo, hi] as OpenAI does.
func rangeCheck(name string, v *float64, lo, hi float64) *apiError {
	if v == nil {
		return nil
	}
	num := strconv.FormatFloat(*v, 'g', -1, 64)
	if *v > hi {
		return bad("invalid_request_error", "decimal_above_max_value", name,
			fmt.Sprintf("Invalid '%s': decimal above maximum value. Expected a value <= %g, but got %s instead.", name, hi, num))
	}
	if *v < lo {
		return bad("invalid_request_error", "decimal_below_min_value", name,
			fmt.Sprintf("Invalid '%s': decimal below minimum value. Expected a value >= %g, but got %s instead.", name, lo, num))
	}
	return nil
}

// mentionsJSON reports whether any message says "json", as OpenAI
// requires of a json_object request.
func mentionsJSON(msgs []wireMessage) bool {
	for _, m := range msgs {
		if strings.Contains(strings.ToLower(text(m.Content)), "json") {
			return true
		}
	}
	return false
}

// openAILimitHeaders sets x-ratelimit-*: limits, what remains, and the
// time until each bucket is full ("1s", "6m0s", "12ms").
func openAILimitHeaders(h http.Header, st limitState, _ time.Time) {
	for _, m := range []struct {
		what string
		m    meter
	}{{"requests", st.requests}, {"tokens", st.tokens}} {
		h.Set("x-ratelimit-limit-"+m.what, strconv.Itoa(m.m.limit))
		h.Set("x-ratelimit-remaining-"+m.what, strconv.Itoa(m.m.remaining))
		h.Set("x-ratelimit-reset-"+m.what, goDuration(m.m.reset))
	}
}

// goDuration formats d as OpenAI's reset headers do: "6m0s", "1s", "20ms".
func goDuration(d time.Duration) string {
	return max(d, 0).Round(time.Millisecond).String()
}

// openAIRateLimited is OpenAI's 429 for a request the limits refused, or
// its "Request too large" for one above the whole token limit.
func openAIRateLimited(x *exchange, st limitState) apiError {
	const more = " Visit https://platform.openai.com/account/rate-limits to learn more."
	if st.tooLarge {
		return apiError{status: 429, typ: "tokens", code: "rate_limit_exceeded", counter: cRateLimited,
			message: fmt.Sprintf("Request too large for %s in organization org-mock on tokens per min (TPM): Limit %d, Requested %d. The input or output tokens must be reduced in order to run successfully."+more, x.model, st.tokens.limit, st.requested)}
	}
	e := apiError{status: 429, code: "rate_limit_exceeded", counter: cRateLimited, header: retryHeaders(st.retryAfter, true)}
	wait := goDuration(st.retryAfter)
	if st.refused == byTokens {
		e.typ = "tokens"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on tokens per min (TPM): Limit %d, Used %d, Requested %d. Please try again in %s."+more, x.model, st.tokens.limit, st.used, st.requested, wait)
	} else {
		e.typ = "requests"
		e.message = fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %s."+more, x.model, st.requests.limit, st.used, wait)
	}
	return e
}

// openAIFinish names a finish as finish_reason does.
var openAIFinish = [...]string{finishStop: "stop", finishLength: "length", finishToolCalls: "tool_calls", finishContentFilter: "content_filter", finishRefusal: "stop"}

type openAIToolCall struct {
	Index    *int   `json:"index,omitempty"`
	ID       string `json:"id,omitempty"`
	Type     string `json:"type,omitempty"`
	Function struct {
		Name      string `json:"name,omitempty"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

func openAIUsage(a answer) map[string]any {
	return map[string]any{
		"prompt_tokens": a.promptTokens, "completion_tokens": a.completionTokens,
		"total_tokens":              a.promptTokens + a.completionTokens,
		"prompt_tokens_details":     map[string]int{"cached_tokens": 0, "audio_tokens": 0},
		"completion_tokens_details": map[string]int{"reasoning_tokens": 0, "audio_tokens": 0, "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0},
	}
}

// openAIAnswer is a chat.completion.
func openAIAnswer(x *exchange, a answer) []byte {
	msg := map[string]any{"role": "assistant", "content": nil, "refusal": nil, "annotations": []any{}}
	if a.refusal != "" {
		msg["refusal"] = a.refusal
	} else if len(a.calls) == 0 || a.text != "" {
		msg["content"] = a.text
	}
	if len(a.calls) > 0 {
		calls := make([]openAIToolCall, len(a.calls))
		for i, c := range a.calls {
			calls[i].ID, calls[i].Type = c.id, "function"
			calls[i].Function.Name, calls[i].Function.Arguments = c.name, c.args
		}
		msg["tool_calls"] = calls
	}
	return mustJSON(map[string]any{
		"id":      fmt.Sprintf("chatcmpl-mock%012d", x.seq),
		"object":  "chat.completion",
		"created": time.Now().Unix(),
		"model":   x.model,
		"choices": []any{map[string]any{
			"index": 0, "message": msg, "logprobs": nil, "finish_reason": openAIFinish[a.finish],
		}},
		"usage":              openAIUsage(a),
		"service_tier":       "default",
		"system_fingerprint": "fp_mock",
	})
}

// openAIEvents are a streamed chat completion: chunks of deltas, a chunk
// with the finish_reason, the usage chunk when stream_options asks for
// it, and [DONE].
func openAIEvents(x *exchange, a answer) [][]byte {
	id, created := fmt.Sprintf("chatcmpl-mock%012d", x.seq), time.Now().Unix()
	withUsage := x.req.StreamOptions != nil && x.req.StreamOptions.IncludeUsage
	chunk := func(delta map[string]any, finish any) []byte {
		c := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": x.model,
			"system_fingerprint": "fp_mock", "service_tier": "default",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}},
		}
		if withUsage {
			c["usage"] = nil
		}
		return sse("", mustJSON(c))
	}
	out := [][]byte{chunk(map[string]any{"role": "assistant", "content": "", "refusal": nil}, nil)}
	for _, p := range pieces(a.text) {
		out = append(out, chunk(map[string]any{"content": p}, nil))
	}
	for _, p := range pieces(a.refusal) {
		out = append(out, chunk(map[string]any{"refusal": p}, nil))
	}
	for i, c := range a.calls {
		start := openAIToolCall{Index: &i, ID: c.id, Type: "function"}
		start.Function.Name = c.name
		out = append(out, chunk(map[string]any{"tool_calls": []openAIToolCall{start}}, nil))
		for _, p := range pieces(c.args) {
			d := openAIToolCall{Index: &i}
			d.Function.Arguments = p
			out = append(out, chunk(map[string]any{"tool_calls": []openAIToolCall{d}}, nil))
		}
	}
	out = append(out, chunk(map[string]any{}, openAIFinish[a.finish]))
	if withUsage {
		out = append(out, sse("", mustJSON(map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": x.model,
			"system_fingerprint": "fp_mock", "choices": []any{}, "usage": openAIUsage(a),
		})))
	}
	return append(out, sse("", []byte("[DONE]")))
}

func openAIServerError(*exchange) apiError {
	return apiError{status: 500, typ: "server_error", counter: cServerErrors,
		message: "The server had an error while processing your request. Sorry about that!"}
}

func openAIOverloaded(*exchange) apiError {
	return apiError{status: 503, typ: "server_error", counter: cOverloaded,
		message: "The engine is currently overloaded, please try again later"}
}
