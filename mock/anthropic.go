package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// anthropicContext is the context window of the mock models in
// Anthropic's dialect, in tokens.
const anthropicContext = 200000

// anthropic is Anthropic's messages API.
var anthropic = dialect{
	name:            "anthropic",
	requestIDHeader: "request-id",
	everyResponse:   map[string]string{"anthropic-organization-id": "org-mock"},
	contextWindow:   anthropicContext,
	outputLimit:     true,
	toolCallPrefix:  "toolu_mock",
	objectToolInput: true,
	apiKey: func(r *http.Request) string {
		if k := r.Header.Get("X-Api-Key"); k != "" {
			return k
		}
		return bearerKey(r)
	},
	errorBody: func(requestID string, e apiError) []byte {
		return mustJSON(map[string]any{
			"type":       "error",
			"error":      map[string]string{"type": e.typ, "message": e.message},
			"request_id": requestID,
		})
	},
	errs: [numErrs]func(x *exchange) apiError{
		errMissingKey: func(*exchange) apiError {
			return apiError{status: 401, typ: "authentication_error", message: "x-api-key header is required", counter: cAuthErrors}
		},
		errBadKey: func(*exchange) apiError {
			return apiError{status: 401, typ: "authentication_error", message: "invalid x-api-key", counter: cAuthErrors}
		},
		errBadJSON: func(*exchange) apiError {
			return apiError{status: 400, typ: "invalid_request_error", message: "There was an issue with the request body: the body is not valid JSON.", counter: cBadRequests}
		},
		errUnknownModel: func(x *exchange) apiError {
			return apiError{status: 404, typ: "not_found_error", message: "model: " + x.model, counter: cBadRequests}
		},
		errUnknownRoute: func(*exchange) apiError {
			return apiError{status: 404, typ: "not_found_error", message: "Not Found", counter: cBadRequests}
		},
		errRateLimit: func(x *exchange) apiError {
			h := retryHeaders(sporadicWait(x.limits.requests), false)
			h["x-should-retry"] = "true"
			return apiError{status: 429, typ: "rate_limit_error", header: h, counter: cRateLimited,
				message: fmt.Sprintf("This request would exceed the rate limit for your organization (org-mock) of %d requests per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the rate of your requests or try again later.", x.limits.requests.limit)}
		},
		errServer:     anthropicServerError,
		errOverloaded: anthropicOverloaded,
		// Bedrock's model faults, as Anthropic says the nearest thing.
		errModelNotReady: anthropicOverloaded,
		errModelTimeout:  anthropicServerError,
		errQuota: func(*exchange) apiError {
			// The API's answer today: a 400 invalid_request_error that only
			// its message tells apart from a bad request (402 billing_error
			// is PaymentRequired's).
			return apiError{status: 400, typ: "invalid_request_error", counter: cBillingErrors,
				message: "Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}
		},
		errSpendLimit: func(*exchange) apiError {
			next := time.Now().UTC().AddDate(0, 1, 0)
			return apiError{status: 429, typ: "rate_limit_error", counter: cBillingErrors,
				message: fmt.Sprintf("You have reached your specified API usage limits: this request would exceed your organization's monthly spend limit. You will regain access on %s at 00:00 UTC.", time.Date(next.Year(), next.Month(), 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02"))}
		},
		errPaymentRequired: func(*exchange) apiError {
			return apiError{status: 402, typ: "billing_error", counter: cBillingErrors,
				message: "There is an issue with your account's billing. Please check your payment details in the Console."}
		},
		errForbidden: func(*exchange) apiError {
			return apiError{status: 403, typ: "permission_error", counter: cForbidden,
				message: "Your API key does not have permission to use the specified resource."}
		},
		errTooLarge: func(*exchange) apiError {
			return apiError{status: 413, typ: "request_too_large", counter: cTooLarge,
				message: "Request exceeds the maximum allowed number of bytes. The maximum request size is 32 MB for standard API requests."}
		},
		errContextLength: func(x *exchange) apiError {
			n := max(x.promptTokens, x.window()+1)
			return apiError{status: 400, typ: "invalid_request_error", counter: cContextLength,
				message: fmt.Sprintf("prompt is too long: %d tokens > %d maximum", n, x.window())}
		},
	},
	validate:     validateAnthropic,
	limitHeaders: anthropicLimitHeaders,
	rateLimited:  anthropicRateLimited,
	answer:       anthropicAnswer,
	events:       anthropicEvents,
	streamError: func(x *exchange, e apiError) []byte {
		return sse("error", mustJSON(map[string]any{
			"type": "error", "error": map[string]string{"type": e.typ, "message": e.message}, "request_id": x.requestID,
		}))
	},
	models: func() []byte {
		var data []map[string]any
		for _, m := range models {
			data = append(data, anthropicModel(m))
		}
		return mustJSON(map[string]any{"data": data, "has_more": false, "first_id": models[0], "last_id": models[len(models)-1]})
	},
	model: func(id string) []byte { return mustJSON(anthropicModel(id)) },
}

func anthropicModel(id string) map[string]any {
	return map[string]any{"type": "model", "id": id, "display_name": id, "created_at": time.Unix(modelsCreated, 0).UTC().Format(time.RFC3339)}
}

// validateAnthropic refuses what Anthropic's messages API refuses, with
// its messages.
func validateAnthropic(x *exchange) *apiError {
	if x.r.Header.Get("anthropic-version") == "" {
		return bad("invalid_request_error", "", "", "anthropic-version: header is required")
	}
	return validateMessages(x)
}

// validateMessages refuses the Messages bodies Anthropic's API refuses,
// with its messages: Anthropic's own and Claude's on Vertex AI.
func validateMessages(x *exchange) *apiError {
	const inv = "invalid_request_error"
	req := x.req
	countOnly := strings.HasSuffix(x.r.URL.Path, "/count_tokens")
	if req.Model == nil || *req.Model == "" {
		return bad(inv, "", "", "model: Field required")
	}
	if req.Messages == nil {
		return bad(inv, "", "", "messages: Field required")
	}
	if req.MaxTokens == nil && !countOnly {
		return bad(inv, "", "", "max_tokens: Field required")
	}
	if req.MaxTokens != nil && *req.MaxTokens < 1 {
		return bad(inv, "", "", "max_tokens: Input should be greater than or equal to 1")
	}
	if len(*req.Messages) == 0 {
		return bad(inv, "", "", "messages: at least one message is required")
	}
	for i, m := range *req.Messages {
		switch m.Role {
		case "user", "assistant":
		case "system":
			return bad(inv, "", "", `messages: Unexpected role "system". The Messages API accepts a top-level `+"`system`"+` parameter, not "system" as an input message role.`)
		default:
			return bad(inv, "", "", fmt.Sprintf("messages.%d.role: Input should be 'user' or 'assistant'", i))
		}
	}
	if req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1) {
		bound := "less than or equal to 1"
		if *req.Temperature < 0 {
			bound = "greater than or equal to 0"
		}
		return bad(inv, "", "", "temperature: Input should be "+bound)
	}
	if req.TopP != nil && (*req.TopP < 0 || *req.TopP > 1) {
		return bad(inv, "", "", "top_p: Input should be less than or equal to 1")
	}
	for i, t := range req.Tools {
		if t.Name == "" {
			return bad(inv, "", "", fmt.Sprintf("tools.%d.name: Field required", i))
		}
		if t.Type == "" && len(t.InputSchema) == 0 {
			return bad(inv, "", "", fmt.Sprintf("tools.%d.custom.input_schema: Field required", i))
		}
	}
	if name := forcedTool(x); name != "" && toolByName(req.Tools, name) == nil {
		return bad(inv, "", "", fmt.Sprintf("tool_choice: tool '%s' not found in 'tools'", name))
	}
	if f := anthropicFormat(req); f != nil && f.Type != "json_schema" {
		return bad(inv, "", "", fmt.Sprintf("output_format.type: Input should be 'json_schema', got '%s'", f.Type))
	}
	return nil
}

// anthropicFormat is the structured output format a request asks for,
// nil if none.
func anthropicFormat(req chatRequest) *outputFormat {
	if req.OutputConfig != nil && req.OutputConfig.Format != nil {
		return req.OutputConfig.Format
	}
	return req.OutputFormat
}

// anthropicLimitHeaders sets anthropic-ratelimit-*: each bucket's limit,
// remaining and the RFC 3339 time it is full again; tokens-* is the most
// restrictive of input and output tokens.
func anthropicLimitHeaders(h http.Header, st limitState, now time.Time) {
	set := func(what string, m meter) {
		h.Set("anthropic-ratelimit-"+what+"-limit", strconv.Itoa(m.limit))
		h.Set("anthropic-ratelimit-"+what+"-remaining", strconv.Itoa(m.remaining))
		h.Set("anthropic-ratelimit-"+what+"-reset", rfc3339(now, m.reset))
	}
	set("requests", st.requests)
	set("input-tokens", st.tokens)
	tightest := st.tokens
	if st.hasOutput {
		set("output-tokens", st.output)
		if st.output.remaining < tightest.remaining {
			tightest = st.output
		}
	}
	set("tokens", tightest)
}

// rfc3339 formats now+d, rounded up to the second, as Anthropic's reset
// headers do.
func rfc3339(now time.Time, d time.Duration) string {
	return now.Add(max(d, 0)).Add(time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)
}

// anthropicRateLimited is Anthropic's 429 for a request the limits
// refused: retry-after and x-should-retry: true, except for a request
// larger than a whole limit, which can never succeed.
func anthropicRateLimited(x *exchange, st limitState) apiError {
	what, limit := "requests", st.requests.limit
	switch st.refused {
	case byTokens:
		what, limit = "input tokens", st.tokens.limit
	case byOutput:
		what, limit = "output tokens", st.output.limit
	}
	if st.tooLarge {
		return apiError{status: 429, typ: "rate_limit_error", counter: cRateLimited, header: map[string]string{"x-should-retry": "false"},
			message: fmt.Sprintf("Request too large: this request's %d %s exceed your organization's rate limit of %d %s per minute, so it can never succeed. Reduce the prompt length or the maximum tokens requested.", st.requested, what, limit, what)}
	}
	h := retryHeaders(st.retryAfter, false)
	h["x-should-retry"] = "true"
	return apiError{status: 429, typ: "rate_limit_error", header: h, counter: cRateLimited,
		message: fmt.Sprintf("This request would exceed the rate limit for your organization (org-mock) of %d %s per minute. For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later.", limit, what)}
}

// anthropicStop names a finish as stop_reason does.
var anthropicStop = [...]string{finishStop: "end_turn", finishLength: "max_tokens", finishToolCalls: "tool_use", finishContentFilter: "refusal", finishRefusal: "refusal"}

// anthropicBlocks are an answer's content blocks.
func anthropicBlocks(a answer) []map[string]any {
	var out []map[string]any
	if t := a.text + a.refusal; t != "" {
		out = append(out, map[string]any{"type": "text", "text": t})
	}
	for _, c := range a.calls {
		var input any = map[string]any{}
		if json.Valid([]byte(c.args)) {
			input = json.RawMessage(c.args)
		}
		out = append(out, map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": input})
	}
	if out == nil {
		out = []map[string]any{}
	}
	return out
}

func anthropicUsage(a answer) map[string]any {
	return map[string]any{
		"input_tokens": a.promptTokens, "output_tokens": a.completionTokens,
		"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "service_tier": "standard",
	}
}

// anthropicStopDetails is a message's stop_details: the category and
// explanation of a refusal, null otherwise.
func anthropicStopDetails(a answer) any {
	switch a.finish {
	case finishRefusal:
		return map[string]any{"type": "refusal", "category": nil,
			"explanation": "The request asks for something this model declines to help with (the mock's refusal fault)."}
	case finishContentFilter:
		return map[string]any{"type": "refusal", "category": "general_harms",
			"explanation": "The answer was stopped partway by a safety classifier (the mock's content_filter fault)."}
	}
	return nil
}

// anthropicAnswer is a message.
func anthropicAnswer(x *exchange, a answer) []byte {
	return mustJSON(map[string]any{
		"id": fmt.Sprintf("msg_mock%012d", x.seq), "type": "message", "role": "assistant", "model": x.model,
		"content": anthropicBlocks(a), "stop_reason": anthropicStop[a.finish], "stop_sequence": nil,
		"stop_details": anthropicStopDetails(a), "usage": anthropicUsage(a),
	})
}

// anthropicEvents are a streamed message: message_start, each block's
// start, deltas and stop (a ping after the first start), message_delta
// with the stop reason and usage, message_stop.
func anthropicEvents(x *exchange, a answer) [][]byte {
	ev := func(name string, v map[string]any) []byte {
		v["type"] = name
		return sse(name, mustJSON(v))
	}
	start := anthropicUsage(a)
	start["output_tokens"] = 1
	out := [][]byte{ev("message_start", map[string]any{"message": map[string]any{
		"id": fmt.Sprintf("msg_mock%012d", x.seq), "type": "message", "role": "assistant", "model": x.model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": start,
	}})}
	index := 0
	if t := a.text + a.refusal; t != "" {
		out = append(out, ev("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}}))
		out = append(out, ev("ping", map[string]any{}))
		for _, p := range pieces(t) {
			out = append(out, ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": p}}))
		}
		out = append(out, ev("content_block_stop", map[string]any{"index": index}))
		index++
	}
	for _, c := range a.calls {
		out = append(out, ev("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "tool_use", "id": c.id, "name": c.name, "input": map[string]any{}}}))
		for _, p := range pieces(c.args) {
			out = append(out, ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": p}}))
		}
		out = append(out, ev("content_block_stop", map[string]any{"index": index}))
		index++
	}
	out = append(out, ev("message_delta", map[string]any{
		"delta": map[string]any{"stop_reason": anthropicStop[a.finish], "stop_sequence": nil, "stop_details": anthropicStopDetails(a)},
		"usage": map[string]any{"output_tokens": a.completionTokens},
	}))
	return append(out, ev("message_stop", map[string]any{}))
}

func anthropicServerError(*exchange) apiError {
	return apiError{status: 500, typ: "api_error", message: "Internal server error", counter: cServerErrors}
}

func anthropicOverloaded(*exchange) apiError {
	return apiError{status: 529, typ: "overloaded_error", message: "Overloaded", counter: cOverloaded}
}
