package llm

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// provider is a stand-in for a real provider over real HTTP: it keeps
// every request (path with query, headers, decoded body) and answers each
// with the body answer gives for it, status 200 unless answer says.
type provider struct {
	srv    *httptest.Server
	answer func(n int, body map[string]any) (int, string)

	mu       sync.Mutex
	requests []request
}

type request struct {
	path   string
	header http.Header
	body   map[string]any
}

func newProvider(t *testing.T, answer func(n int, body map[string]any) (int, string)) *provider {
	t.Helper()
	p := &provider{answer: answer}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			t.Errorf("the request body is not a JSON object: %v: %s", err, raw)
		}
		p.mu.Lock()
		p.requests = append(p.requests, request{path: r.URL.RequestURI(), header: r.Header.Clone(), body: body})
		n := len(p.requests)
		p.mu.Unlock()
		status, resp := p.answer(n, body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, resp)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func (p *provider) last(t *testing.T) request {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.requests) == 0 {
		t.Fatal("the provider received no request")
	}
	return p.requests[len(p.requests)-1]
}

// openAIAnswer is a chat completion body.
func openAIAnswer(content, refusal, finish string, usage string) string {
	msg := map[string]any{"role": "assistant", "content": content}
	if refusal != "" {
		msg["refusal"] = refusal
		msg["content"] = nil
	}
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
		"usage":   json.RawMessage(cmpOr(usage, `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`)),
	})
	return string(b)
}

// anthropicAnswer is a messages API body.
func anthropicAnswer(content []map[string]any, stop string, extra map[string]any, usage string) string {
	m := map[string]any{
		"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": content,
		"stop_reason": stop, "stop_sequence": nil,
		"usage": json.RawMessage(cmpOr(usage, `{"input_tokens":10,"output_tokens":5}`)),
	}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func text(s string) []map[string]any { return []map[string]any{{"type": "text", "text": s}} }

func TestCutOffAnswerIsNeverASuccess(t *testing.T) {
	tests := []struct {
		wire   string
		answer string
		finish string
	}{
		{ProviderOpenAI, openAIAnswer(`{"es": "ga`, "", "length", ""), "length"},
		{ProviderAnthropic, anthropicAnswer(text(`{"es": "ga`), "max_tokens", nil, ""), "max_tokens"},
	}
	for _, tt := range tests {
		for _, noHeal := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/noheal=%v", tt.wire, noHeal), func(t *testing.T) {
				p := newProvider(t, func(int, map[string]any) (int, string) { return 200, tt.answer })
				tk := mustNew(t, Config{Provider: tt.wire, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "Say it",
					MaxTokens: 2, NoHeal: noHeal})
				res, err := tk.Run(t.Context(), item(nil))
				if err == nil {
					t.Fatalf("a cut-off answer succeeded with output %s", res.Output)
				}
				if res.FinishReason != tt.finish || res.Usage.Total() == 0 {
					t.Errorf("result = %+v, want finish reason %q and the usage", res, tt.finish)
				}
				var se *StopError
				if !errors.As(err, &se) || !strings.Contains(err.Error(), "cut off at max_tokens 2") {
					t.Fatalf("err = %v, want a *StopError saying the answer was cut off at max_tokens 2", err)
				}
				want := classify.Invalid
				if noHeal {
					want = classify.Item
				}
				if d := classify.Classify(err); d.Class != want {
					t.Errorf("classified %v, want %v", d, want)
				}
				var oe *task.OutputError
				if !noHeal && (!errors.As(err, &oe) || oe.Output != `{"es": "ga`) {
					t.Errorf("err = %v, want an OutputError keeping the partial answer for the feedback", err)
				}
			})
		}
	}
}

func TestReaskOfACutOffAnswerRaisesMaxTokensUpToTheCeiling(t *testing.T) {
	p := newProvider(t, func(int, map[string]any) (int, string) { return 200, openAIAnswer("ok", "", "stop", "") })
	tk := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "p",
		MaxTokens: 100, MaxTokensCeiling: 300})
	cut := (&StopError{Kind: stopTruncated, FinishReason: "length", MaxTokens: 100}).Error()
	for _, tt := range []struct {
		feedback string
		attempt  int
		want     float64
	}{
		{"", 0, 100},
		{"answer is not JSON", 1, 100},
		{cut, 1, 200},
		{cut, 2, 300},
		{cut, 5, 300},
	} {
		it := item(nil)
		if tt.feedback != "" {
			it.Feedback = &task.Feedback{PreviousOutput: "x", Message: tt.feedback, Attempt: tt.attempt}
		}
		if _, err := tk.Run(t.Context(), it); err != nil {
			t.Fatal(err)
		}
		if got := p.last(t).body["max_tokens"]; got != tt.want {
			t.Errorf("re-ask %d after %q sent max_tokens %v, want %v", tt.attempt, tt.feedback, got, tt.want)
		}
	}
}

func TestRefusalsAndContentFiltersAreItemFailuresWithTheProvidersWords(t *testing.T) {
	tests := []struct {
		name, wire, answer, finish, words string
	}{
		{"openai refusal", ProviderOpenAI, openAIAnswer("", "I can't help with that.", "stop", ""), "stop", "I can't help with that."},
		{"openai content filter", ProviderOpenAI, openAIAnswer("", "", "content_filter", ""), "content_filter", "content filter"},
		{"anthropic refusal", ProviderAnthropic, anthropicAnswer(text(""), "refusal",
			map[string]any{"stop_details": map[string]any{"type": "refusal", "category": "cyber", "explanation": "This request asks for malware."}}, ""),
			"refusal", "This request asks for malware."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, func(int, map[string]any) (int, string) { return 200, tt.answer })
			tk := mustNew(t, Config{Provider: tt.wire, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "p"})
			res, err := tk.Run(t.Context(), item(nil))
			if err == nil {
				t.Fatalf("a refusal succeeded with %s", res.Output)
			}
			if d := classify.Classify(err); d.Class != classify.Item {
				t.Errorf("classified %v, want item", d)
			}
			if !strings.Contains(err.Error(), tt.words) {
				t.Errorf("err = %q, want the provider's words %q", err, tt.words)
			}
			if res.FinishReason != tt.finish {
				t.Errorf("finish reason = %q, want %q", res.FinishReason, tt.finish)
			}
		})
	}
}

const fittingSchema = `{"type":"object","properties":{"es":{"type":"string"},"n":{"type":["integer","null"]}},"required":["es","n"],"additionalProperties":false}`

func TestStructuredOutputsReachTheProvider(t *testing.T) {
	loose := `{"type":"object","properties":{"es":{"type":"string","minLength":1}},"required":["es"]}`
	tests := []struct {
		name, wire, model, schema string
		prompt                    string
		mode                      string
		check                     func(t *testing.T, body map[string]any)
	}{
		{"openai strict json_schema", ProviderOpenAI, "gpt-4o", fittingSchema, "Translate", ModeJSONSchema, func(t *testing.T, body map[string]any) {
			rf, _ := body["response_format"].(map[string]any)
			js, _ := rf["json_schema"].(map[string]any)
			if rf["type"] != "json_schema" || js["strict"] != true || js["name"] != "output" || js["schema"] == nil {
				t.Errorf("response_format = %v, want a strict json_schema with the schema", rf)
			}
		}},
		{"openai json_object when the schema does not fit", ProviderOpenAI, "gpt-4o", loose, "Translate", ModeJSONObject, func(t *testing.T, body map[string]any) {
			rf, _ := body["response_format"].(map[string]any)
			if rf["type"] != "json_object" {
				t.Errorf("response_format = %v, want json_object", rf)
			}
			msgs, _ := body["messages"].([]any)
			first, _ := msgs[0].(map[string]any)
			if first["role"] != "system" || !strings.Contains(fmt.Sprint(first["content"]), "JSON") {
				t.Errorf("messages = %v, want a system prompt asking for JSON, since the prompt never says it", msgs)
			}
		}},
		{"openai json_object leaves a prompt that says json alone", ProviderOpenAI, "gpt-4o", "", "Answer in json", ModeJSONObject, func(t *testing.T, body map[string]any) {
			if msgs, _ := body["messages"].([]any); len(msgs) != 1 {
				t.Errorf("messages = %v, want the prompt alone", msgs)
			}
		}},
		{"anthropic output_config", ProviderAnthropic, "claude-sonnet-4-5", fittingSchema, "Translate", ModeOutputConfig, func(t *testing.T, body map[string]any) {
			oc, _ := body["output_config"].(map[string]any)
			f, _ := oc["format"].(map[string]any)
			if f["type"] != "json_schema" || f["schema"] == nil {
				t.Errorf("output_config = %v, want format json_schema with the schema", oc)
			}
		}},
		{"anthropic forced tool for an older model", ProviderAnthropic, "claude-3-5-haiku-latest", fittingSchema, "Translate", ModeTool, func(t *testing.T, body map[string]any) {
			tools, _ := body["tools"].([]any)
			tc, _ := body["tool_choice"].(map[string]any)
			if len(tools) != 1 || tc["type"] != "tool" || tc["name"] != OutputTool {
				t.Errorf("tools = %v, tool_choice = %v; want one tool the model must call", tools, tc)
			}
			tool, _ := tools[0].(map[string]any)
			is, _ := tool["input_schema"].(map[string]any)
			if is["type"] != "object" || is["additionalProperties"] != false || is["properties"] == nil {
				t.Errorf("input_schema = %v, want the schema", is)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newProvider(t, func(int, map[string]any) (int, string) {
				if tt.wire == ProviderAnthropic {
					if tt.mode == ModeTool {
						return 200, anthropicAnswer([]map[string]any{{"type": "tool_use", "id": "t1", "name": OutputTool, "input": map[string]any{"es": "gato", "n": nil}}}, "tool_use", nil, "")
					}
					return 200, anthropicAnswer(text(`{"es":"gato","n":null}`), "end_turn", nil, "")
				}
				return 200, openAIAnswer(`{"es":"gato","n":null}`, "", "stop", "")
			})
			tk := mustNew(t, Config{Provider: tt.wire, BaseURL: p.srv.URL, APIKey: "k", Model: tt.model, Prompt: tt.prompt,
				Output: OutputJSON, Schema: json.RawMessage(tt.schema)})
			if got := tk.Structured(); got.Mode != tt.mode || got.Why == "" {
				t.Errorf("Structured() = %+v, want mode %s with a reason", got, tt.mode)
			}
			res, err := tk.Run(t.Context(), item(nil))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Output) != `{"es":"gato","n":null}` {
				t.Errorf("output = %s, want the structured answer", res.Output)
			}
			tt.check(t, p.last(t).body)
		})
	}
}

func TestStrictSubsetReasons(t *testing.T) {
	tests := []struct{ schema, want string }{
		{fittingSchema, ""},
		{`{"type":"array","items":{"type":"string"}}`, "root is not"},
		{`{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`, `without "additionalProperties": false`},
		{`{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":false}`, `#/properties/a is not in "required"`},
		{`{"type":"object","properties":{"a":{"type":"string","minLength":2}},"required":["a"],"additionalProperties":false}`, `uses "minLength"`},
	}
	for _, tt := range tests {
		doc, err := decodeSchema(json.RawMessage(tt.schema))
		if err != nil {
			t.Fatal(err)
		}
		got := fitProblem(doc, openAIStrict)
		if tt.want == "" && got != "" || !strings.Contains(got, tt.want) {
			t.Errorf("fitProblem(%s) = %q, want %q", tt.schema, got, tt.want)
		}
	}
}

func TestAzureRequestShape(t *testing.T) {
	p := newProvider(t, func(int, map[string]any) (int, string) { return 200, openAIAnswer("hi", "", "stop", "") })
	tk := mustNew(t, Config{Provider: ProviderAzure, BaseURL: p.srv.URL, APIKey: secretKey, Model: "my-deployment", Prompt: "p", APIVersion: "2024-10-21"})
	if _, err := tk.Run(t.Context(), item(nil)); err != nil {
		t.Fatal(err)
	}
	r := p.last(t)
	if r.path != "/openai/deployments/my-deployment/chat/completions?api-version=2024-10-21" {
		t.Errorf("path = %s, want the deployment's path with the api-version", r.path)
	}
	if r.header.Get("Api-Key") != secretKey || r.header.Get("Authorization") != "" {
		t.Errorf("headers = %v, want api-key and no Authorization", r.header)
	}

	t.Run("entra token", func(t *testing.T) {
		tk := mustNew(t, Config{Provider: ProviderAzure, BaseURL: p.srv.URL, AzureADToken: "entra-token-123", Model: "d", Prompt: "p"})
		if _, err := tk.Run(t.Context(), item(nil)); err != nil {
			t.Fatal(err)
		}
		r := p.last(t)
		if r.header.Get("Authorization") != "Bearer entra-token-123" || r.header.Get("Api-Key") != "" {
			t.Errorf("headers = %v, want the bearer token", r.header)
		}
		if !strings.Contains(r.path, "api-version="+DefaultAzureAPIVersion) {
			t.Errorf("path = %s, want the default api-version", r.path)
		}
	})
}

func TestSamplingHeadersAndExtraBodyReachTheServer(t *testing.T) {
	topP, seed := 0.9, int64(7)
	for _, wire := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(wire, func(t *testing.T) {
			p := newProvider(t, func(int, map[string]any) (int, string) {
				if wire == ProviderAnthropic {
					return 200, anthropicAnswer(text("hi"), "end_turn", nil, "")
				}
				return 200, openAIAnswer("hi", "", "stop", "")
			})
			cfg := Config{Provider: wire, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "p", TopP: &topP, Stop: []string{"END"},
				Headers:   map[string]string{"X-Gateway": "team-a"},
				ExtraBody: map[string]any{"guided_choice": []any{"yes", "no"}, "repetition.penalty": 1.1}}
			if wire == ProviderOpenAI {
				cfg.Seed = &seed
			}
			if _, err := mustNew(t, cfg).Run(t.Context(), item(nil)); err != nil {
				t.Fatal(err)
			}
			r := p.last(t)
			stopKey := "stop"
			if wire == ProviderAnthropic {
				stopKey = "stop_sequences"
			}
			if r.body["top_p"] != 0.9 || fmt.Sprint(r.body[stopKey]) != "[END]" {
				t.Errorf("body = %v, want top_p 0.9 and %s [END]", r.body, stopKey)
			}
			if wire == ProviderOpenAI && r.body["seed"] != 7.0 {
				t.Errorf("body = %v, want seed 7", r.body)
			}
			if fmt.Sprint(r.body["guided_choice"]) != "[yes no]" || r.body["repetition.penalty"] != 1.1 {
				t.Errorf("body = %v, want extra_body's fields at the top level, a dotted name kept whole", r.body)
			}
			if r.header.Get("X-Gateway") != "team-a" {
				t.Errorf("headers = %v, want X-Gateway", r.header)
			}
		})
	}
}

func TestCachedTokensAreCountedAndPriced(t *testing.T) {
	tests := []struct {
		wire, answer string
		want         task.Usage
		price        Price
		cost         float64
	}{
		{ProviderOpenAI, openAIAnswer("hi", "", "stop", `{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100,"prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":40}}`),
			task.Usage{InputTokens: 1000, OutputTokens: 100, CachedInputTokens: 800, ReasoningTokens: 40},
			Price{InputPerMTok: 1e6, OutputPerMTok: 2e6, CachedInputPerMTok: 0.5e6}, 200 + 800*0.5 + 100*2},
		{ProviderAnthropic, anthropicAnswer(text("hi"), "end_turn", nil, `{"input_tokens":100,"output_tokens":10,"cache_read_input_tokens":800,"cache_creation_input_tokens":50}`),
			task.Usage{InputTokens: 950, OutputTokens: 10, CachedInputTokens: 800, CacheWriteTokens: 50},
			Price{InputPerMTok: 1e6, OutputPerMTok: 2e6, CachedInputPerMTok: 0.1e6, CacheWritePerMTok: 1.25e6}, 100 + 800*0.1 + 50*1.25 + 10*2},
	}
	for _, tt := range tests {
		t.Run(tt.wire, func(t *testing.T) {
			p := newProvider(t, func(int, map[string]any) (int, string) { return 200, tt.answer })
			tk := mustNew(t, Config{Provider: tt.wire, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "p",
				Prices: map[string]Price{"m": tt.price}, CachePrompt: tt.wire == ProviderAnthropic, System: "long rules"})
			res, err := tk.Run(t.Context(), item(nil))
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage != tt.want || fmt.Sprintf("%.6f", res.CostUSD) != fmt.Sprintf("%.6f", tt.cost) {
				t.Errorf("usage %+v cost %v, want %+v costing %v", res.Usage, res.CostUSD, tt.want, tt.cost)
			}
			if tt.wire == ProviderAnthropic {
				sys, _ := p.last(t).body["system"].([]any)
				block, _ := sys[0].(map[string]any)
				if cc, _ := block["cache_control"].(map[string]any); cc["type"] != "ephemeral" {
					t.Errorf("system = %v, want cache_control ephemeral (cache_prompt)", sys)
				}
			}
		})
	}
}

func TestThinkingIsSentKeptOutOfTheOutputAndCounted(t *testing.T) {
	p := newProvider(t, func(int, map[string]any) (int, string) {
		return 200, anthropicAnswer([]map[string]any{
			{"type": "thinking", "thinking": "Let me think about cats.", "signature": "sig"},
			{"type": "text", "text": "gato"},
		}, "end_turn", nil, `{"input_tokens":10,"output_tokens":500}`)
	})
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: p.srv.URL, APIKey: "k", Model: "claude-sonnet-4-5", Prompt: "p", ThinkingBudget: 2048})
	res, err := tk.Run(t.Context(), item(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(res.Output) != `"gato"` || res.Usage.OutputTokens != 500 {
		t.Errorf("output %s, usage %+v; want the answer alone and every output token counted", res.Output, res.Usage)
	}
	body := p.last(t).body
	th, _ := body["thinking"].(map[string]any)
	if th["type"] != "enabled" || th["budget_tokens"] != 2048.0 || body["max_tokens"] != float64(2048+DefaultMaxTokens) {
		t.Errorf("body = %v, want thinking enabled with budget 2048 and max_tokens leaving room for the answer", body)
	}
}

func TestOpenAIReasoningEffortAndRoomForTheAnswer(t *testing.T) {
	p := newProvider(t, func(int, map[string]any) (int, string) { return 200, openAIAnswer("hi", "", "stop", "") })
	tk := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: p.srv.URL, APIKey: "k", Model: "o4-mini", Prompt: "p", ReasoningEffort: "low"})
	if _, err := tk.Run(t.Context(), item(nil)); err != nil {
		t.Fatal(err)
	}
	body := p.last(t).body
	if body["reasoning_effort"] != "low" || body["max_completion_tokens"] != float64(DefaultReasoningMaxTokens) || body["max_tokens"] != nil {
		t.Errorf("body = %v, want reasoning_effort low and max_completion_tokens %d", body, DefaultReasoningMaxTokens)
	}
}

func TestAnthropicErrorCodeIsClassifiedFirst(t *testing.T) {
	body := `{"type":"error","error":{"type":"rate_limit_error","message":"Usage blocked until 2026-12-01.","details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_9"}`
	p := newProvider(t, func(int, map[string]any) (int, string) { return 429, body })
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "p"})
	_, err := tk.Run(t.Context(), item(nil))
	var e *Error
	if !errors.As(err, &e) || e.Code != "enforced_spend_limit_reached" || e.Type != "rate_limit_error" {
		t.Fatalf("err = %#v, want the error code from error.details", err)
	}
	if d := classify.Classify(err); d.Class != classify.Fatal || !strings.Contains(d.Reason, "enforced_spend_limit_reached") {
		t.Errorf("classified %v, want fatal by the error code (the message never says \"spend limit\")", d)
	}
}

// renderCounter counts how often a template prints it.
type renderCounter struct{ n *atomic.Int64 }

func (c renderCounter) String() string { c.n.Add(1); return "x" }

func TestPrepareRendersTheCallOnce(t *testing.T) {
	p := newProvider(t, func(int, map[string]any) (int, string) { return 200, openAIAnswer("hi", "", "stop", "") })
	var renders atomic.Int64
	tk := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: p.srv.URL, APIKey: "k", Model: "m",
		Prompt: "{{.c}}", Cache: newMemCache(), MaxTokens: 10})
	it := item(map[string]any{"c": renderCounter{&renders}})
	prep, err := tk.Prepare(t.Context(), it)
	if err != nil {
		t.Fatal(err)
	}
	// The cap, and "x" in a user message with the chat's framing.
	if want := 10 + tokensPerReply + tokensPerMessage + 2; prep.Cached || prep.Tokens != want {
		t.Errorf("prepared = %+v, want a miss estimated at %d tokens", prep, want)
	}
	res, err := prep.Run(t.Context())
	if err != nil || string(res.Output) != `"hi"` {
		t.Fatalf("Run = %s, %v", res.Output, err)
	}
	if n := renders.Load(); n != 1 {
		t.Errorf("one attempt (cache lookup, estimate, call, accounting) rendered the prompt %d times, want 1", n)
	}

	// The answer is cached now: the next attempt is prepared as a hit,
	// rendered once again, and calls nothing.
	renders.Store(0)
	prep, err = tk.Prepare(t.Context(), it)
	if err != nil || !prep.Cached {
		t.Fatalf("prepared = %+v, %v; want a cache hit", prep, err)
	}
	res, err = prep.Run(t.Context())
	if err != nil || !res.CacheHit || renders.Load() != 1 {
		t.Errorf("cached Run = %+v, %v after %d renders; want a hit after 1", res, err, renders.Load())
	}
	if len(p.requests) != 1 {
		t.Errorf("the provider saw %d requests, want 1", len(p.requests))
	}
}

func TestRedirectToAnotherHostCarriesNoCredentials(t *testing.T) {
	landing := newProvider(t, func(int, map[string]any) (int, string) {
		return 200, anthropicAnswer(text("hi"), "end_turn", nil, "")
	})
	first := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, landing.srv.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer first.Close()
	tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: first.URL, APIKey: secretKey, Model: "m", Prompt: "p",
		Headers: map[string]string{"X-Gateway-Token": "gw-secret-123"}})
	if _, err := tk.Run(t.Context(), item(nil)); err != nil {
		t.Fatal(err)
	}
	h := landing.last(t).header
	if h.Get("X-Api-Key") != "" || h.Get("X-Gateway-Token") != "" {
		t.Errorf("the other host received %v; want neither the API key nor the spec's headers", h)
	}
}

func TestAPausedTurnIsContinuedNeverRecordedAsItsFirstPiece(t *testing.T) {
	// stop_reason pause_turn was recorded as success: the answer so far
	// became the output of an unfinished turn.
	t.Run("continued to its end", func(t *testing.T) {
		p := newProvider(t, func(n int, body map[string]any) (int, string) {
			if n == 1 {
				return 200, anthropicAnswer([]map[string]any{
					{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": map[string]any{"query": "gato"}},
					{"type": "text", "text": `{"es": `},
				}, "pause_turn", nil, `{"input_tokens":10,"output_tokens":5}`)
			}
			return 200, anthropicAnswer(text(`"gato"}`), "end_turn", nil, `{"input_tokens":20,"output_tokens":3}`)
		})
		tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "Translate cat", Output: OutputJSON})
		res, err := tk.Run(t.Context(), item(nil))
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if string(res.Output) != `{"es":"gato"}` || res.FinishReason != "end_turn" {
			t.Errorf("output %s, finish %q; want the whole turn {\"es\":\"gato\"} ended by end_turn", res.Output, res.FinishReason)
		}
		if res.Usage.InputTokens != 30 || res.Usage.OutputTokens != 8 {
			t.Errorf("usage %+v, want both calls counted: 30 in, 8 out", res.Usage)
		}
		if len(p.requests) != 2 {
			t.Fatalf("%d requests, want 2: the paused turn sent back once", len(p.requests))
		}
		msgs, _ := p.requests[1].body["messages"].([]any)
		last, _ := msgs[len(msgs)-1].(map[string]any)
		content, _ := last["content"].([]any)
		if len(msgs) != 2 || last["role"] != "assistant" || len(content) != 2 {
			t.Errorf("the continuation's messages are %v, want the prompt then the paused answer as it was (2 blocks)", msgs)
		}
	})
	t.Run("still paused", func(t *testing.T) {
		p := newProvider(t, func(int, map[string]any) (int, string) {
			return 200, anthropicAnswer(text("searching"), "pause_turn", nil, "")
		})
		tk := mustNew(t, Config{Provider: ProviderAnthropic, BaseURL: p.srv.URL, APIKey: "k", Model: "m", Prompt: "hi"})
		res, err := tk.Run(t.Context(), item(nil))
		if err == nil {
			t.Fatalf("a turn that never finished succeeded with %s", res.Output)
		}
		var se *StopError
		if !errors.As(err, &se) || se.Kind != stopPaused {
			t.Fatalf("err = %v, want a *StopError of a paused turn", err)
		}
		if d := classify.Classify(err); d.Class != classify.Retryable {
			t.Errorf("classified %v, want retryable: an unfinished turn is not the item's fault", d)
		}
		if len(p.requests) != 1+maxPauseContinuations || res.Usage.Total() == 0 {
			t.Errorf("%d requests, usage %+v; want %d with their usage counted", len(p.requests), res.Usage, 1+maxPauseContinuations)
		}
	})
}

func TestAProxysHTMLErrorPageKeepsItsWords(t *testing.T) {
	// A 502 from a proxy with an HTML body was recorded as "502: bad
	// gateway": the page's own words (which upstream, why) were lost.
	page := `<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>body{color:red}</style>
<script>var x = "<b>not text</b>";</script></head>
<body><h1>502 Bad Gateway</h1><p>upstream connect error: the gateway&#39;s pool &amp; its backend <i>llm-east-2</i> reset the connection</p>
<hr><center>nginx/1.25.3</center>` + strings.Repeat("<p>padding text</p>", 200) + `</body></html>`
	ts := errorServer(t, 502, nil, page)
	_, err := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: baseURL(ProviderOpenAI, ts.URL), APIKey: secretKey, Model: "m", Prompt: "hi"}).Run(t.Context(), item(nil))
	if err == nil {
		t.Fatal("a 502 succeeded")
	}
	msg := err.Error()
	if !strings.Contains(msg, "upstream connect error: the gateway's pool & its backend llm-east-2 reset the connection") {
		t.Errorf("err = %q, want the page's words, tags stripped and entities decoded", msg)
	}
	if strings.ContainsAny(msg, "<>") || strings.Contains(msg, "color:red") || strings.Contains(msg, "not text") {
		t.Errorf("err = %q, want no tags, styles or scripts", msg)
	}
	if n := len([]rune(msg)); n > maxExcerpt+100 {
		t.Errorf("err is %d characters, want a bounded excerpt", n)
	}
	if d := classify.Classify(err); d.Class != classify.Retryable {
		t.Errorf("classified %v, want retryable", d)
	}
}

func TestAzureContentFilterKeepsItsCategoriesAndSeverities(t *testing.T) {
	// Azure's content filter says which category and how severe; the
	// error and the filtered answer kept neither.
	t.Run("a filtered prompt", func(t *testing.T) {
		body := `{"error":{"message":"The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry.","type":null,"param":"prompt","code":"content_filter","status":400,
"innererror":{"code":"ResponsibleAIPolicyViolation","content_filter_result":{"hate":{"filtered":false,"severity":"safe"},"jailbreak":{"filtered":false,"detected":false},"self_harm":{"filtered":false,"severity":"safe"},"sexual":{"filtered":false,"severity":"low"},"violence":{"filtered":true,"severity":"medium"}}}}}`
		p := newProvider(t, func(int, map[string]any) (int, string) { return 400, body })
		_, err := mustNew(t, Config{Provider: ProviderAzure, BaseURL: p.srv.URL, APIKey: secretKey, Model: "dep", Prompt: "p"}).Run(t.Context(), item(nil))
		var e *Error
		if !errors.As(err, &e) || e.ContentFilter != "sexual: severity low; violence: severity medium, filtered" {
			t.Fatalf("err = %v, want an *Error whose ContentFilter names violence (medium, filtered) and sexual (low)", err)
		}
		if !strings.Contains(err.Error(), "violence: severity medium, filtered") {
			t.Errorf("err = %q, want the verdict in the message the record keeps", err)
		}
		if d := classify.Classify(err); d.Class != classify.Item {
			t.Errorf("classified %v, want item", d)
		}
	})
	t.Run("a filtered answer", func(t *testing.T) {
		answer := `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o","choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null},
"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"protected_material_text":{"filtered":true,"detected":true},"self_harm":{"filtered":true,"severity":"high"}}}],
"prompt_filter_results":[{"prompt_index":0,"content_filter_results":{"hate":{"filtered":false,"severity":"safe"}}}],"usage":{"prompt_tokens":10,"completion_tokens":0,"total_tokens":10}}`
		p := newProvider(t, func(int, map[string]any) (int, string) { return 200, answer })
		res, err := mustNew(t, Config{Provider: ProviderAzure, BaseURL: p.srv.URL, APIKey: secretKey, Model: "dep", Prompt: "p"}).Run(t.Context(), item(nil))
		var se *StopError
		if !errors.As(err, &se) || se.ContentFilter != "protected_material_text: detected, filtered; self_harm: severity high, filtered" {
			t.Fatalf("err = %v, want a *StopError whose ContentFilter names protected_material_text and self_harm (high)", err)
		}
		if !strings.Contains(err.Error(), "self_harm: severity high, filtered") || res.FinishReason != "content_filter" {
			t.Errorf("err = %q, finish %q; want the verdict in the message", err, res.FinishReason)
		}
	})
}

func TestABaseURLQueryReachesEveryRequestAndNoError(t *testing.T) {
	// base_url …/v1?gwtoken=${GW_Q}: the SDKs resolve request paths
	// against the base URL and dropped its query, so the gateway never saw
	// its token; and an error quoting the request's URL would show it.
	const token = "gw-q-secret-42"
	for _, tt := range []struct {
		name, provider, base, path string
	}{
		{"openai", ProviderOpenAI, "/v1?gwtoken=" + token, "/v1/chat/completions?gwtoken=" + token},
		{"anthropic", ProviderAnthropic, "?gwtoken=" + token, "/v1/messages?gwtoken=" + token},
		{"azure", ProviderAzure, "?gwtoken=" + token, "/openai/deployments/m/chat/completions?api-version=" + DefaultAzureAPIVersion + "&gwtoken=" + token},
	} {
		t.Run(tt.name, func(t *testing.T) {
			answer := openAIAnswer("hi", "", "stop", "")
			if tt.provider == ProviderAnthropic {
				answer = anthropicAnswer(text("hi"), "end_turn", nil, "")
			}
			var fail atomic.Bool
			p := newProvider(t, func(int, map[string]any) (int, string) {
				if fail.Load() {
					return 500, "<html><body>500 at " + token + "</body></html>"
				}
				return 200, answer
			})
			tk := mustNew(t, Config{Provider: tt.provider, BaseURL: p.srv.URL + tt.base, APIKey: secretKey, Model: "m", Prompt: "p"})
			if _, err := tk.Run(t.Context(), item(nil)); err != nil {
				t.Fatal(err)
			}
			if got := p.last(t).path; got != tt.path {
				t.Errorf("request to %s, want %s: the base URL's query goes with every request", got, tt.path)
			}
			fail.Store(true)
			_, err := tk.Run(t.Context(), item(nil))
			if err == nil {
				t.Fatal("a 500 succeeded")
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), token) {
					t.Errorf("a layer of the error shows the base URL's token: %q", e.Error())
				}
			}
			var pe *Error
			if !errors.As(err, &pe) || strings.Contains(pe.Body, token) {
				t.Errorf("err = %v, want an *Error whose body hides the token", err)
			}
		})
	}
}
