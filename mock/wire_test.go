package mock

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
)

// raw sends body to path in dialect d through s's in-process transport,
// with a key and (for Anthropic) the version header unless header says
// otherwise.
func raw(t *testing.T, s *Server, method, path, d, body string, header map[string]string) call {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, "http://mock.invalid"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if d == "anthropic" {
		req.Header.Set("x-api-key", testKey)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+testKey)
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	resp, err := s.Client().Do(req)
	if err != nil {
		return call{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return call{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func TestValidationRefusesWhatTheProvidersRefuse(t *testing.T) {
	const oa, an = "/v1/chat/completions", "/v1/messages"
	msgs := `"messages": [{"role": "user", "content": "hi"}]`
	tests := []struct {
		name, dialect, path, body string
		header                    map[string]string
		status                    int
		typ, code, message        string
	}{
		{"json_object without json", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "response_format": {"type": "json_object"}}`, nil, 400, "invalid_request_error", "", "must contain the word 'json'"},
		{"temperature above 2", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "temperature": 3}`, nil, 400, "invalid_request_error", "decimal_above_max_value", "Expected a value <= 2, but got 3"},
		{"empty messages", "openai", oa, `{"model": "mock-echo", "messages": []}`, nil, 400, "invalid_request_error", "empty_array", "empty array"},
		{"missing messages", "openai", oa, `{"model": "mock-echo"}`, nil, 400, "invalid_request_error", "missing_required_parameter", "'messages'"},
		{"missing model", "openai", oa, `{` + msgs + `}`, nil, 400, "invalid_request_error", "", "model parameter"},
		{"bad role", "openai", oa, `{"model": "mock-echo", "messages": [{"role": "robot", "content": "hi"}]}`, nil, 400, "invalid_request_error", "invalid_value", "'robot'"},
		{"max_tokens 0", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "max_tokens": 0}`, nil, 400, "invalid_request_error", "integer_below_min_value", "max_tokens"},
		{"stream_options without stream", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "stream_options": {"include_usage": true}}`, nil, 400, "invalid_request_error", "", "stream_options"},
		{"unknown response format", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "response_format": {"type": "yaml"}}`, nil, 400, "invalid_request_error", "invalid_value", "'yaml'"},
		{"json_schema without name", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "response_format": {"type": "json_schema", "json_schema": {"schema": {}}}}`, nil, 400, "invalid_request_error", "missing_required_parameter", "json_schema.name"},
		{"tool_choice without tools", "openai", oa, `{"model": "mock-echo", ` + msgs + `, "tool_choice": "required"}`, nil, 400, "invalid_request_error", "", "only allowed when 'tools'"},
		{"not JSON", "openai", oa, `{"model": `, nil, 400, "invalid_request_error", "", "could not parse the JSON body"},
		{"prompt past the context window", "openai", oa, `{"model": "mock-echo", "messages": [{"role": "user", "content": "` + strings.Repeat("word ", 110000) + `"}]}`, nil, 400, "invalid_request_error", "context_length_exceeded", "maximum context length is 128000 tokens"},
		{"missing anthropic-version", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, ` + msgs + `}`, map[string]string{"anthropic-version": ""}, 400, "invalid_request_error", "", "anthropic-version: header is required"},
		{"missing max_tokens", "anthropic", an, `{"model": "mock-echo", ` + msgs + `}`, nil, 400, "invalid_request_error", "", "max_tokens: Field required"},
		{"anthropic empty messages", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, "messages": []}`, nil, 400, "invalid_request_error", "", "at least one message"},
		{"anthropic system role", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, "messages": [{"role": "system", "content": "x"}]}`, nil, 400, "invalid_request_error", "", `Unexpected role "system"`},
		{"anthropic temperature above 1", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, "temperature": 1.5, ` + msgs + `}`, nil, 400, "invalid_request_error", "", "less than or equal to 1"},
		{"anthropic prompt past the context window", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, "messages": [{"role": "user", "content": "` + strings.Repeat("word ", 170000) + `"}]}`, nil, 400, "invalid_request_error", "", "prompt is too long"},
		{"anthropic missing key", "anthropic", an, `{"model": "mock-echo", "max_tokens": 5, ` + msgs + `}`, map[string]string{"x-api-key": ""}, 401, "authentication_error", "", "x-api-key header is required"},
		{"openai unknown route", "openai", "/v1/embeddingz", `{}`, nil, 404, "invalid_request_error", "", "Invalid URL (POST /v1/embeddingz)"},
		{"anthropic unknown route", "anthropic", "/v1/complete-me", `{}`, nil, 404, "not_found_error", "", "Not Found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{})
			c := raw(t, s, http.MethodPost, tt.path, tt.dialect, tt.body, tt.header)
			if c.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", c.status, tt.status, c.body)
			}
			if ct := c.header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			typ, code, msg := errorFields(t, tt.dialect, c.body)
			if typ != tt.typ || code != tt.code || !strings.Contains(msg, tt.message) {
				t.Errorf("type, code, message = %q, %q, %q; want %q, %q, containing %q", typ, code, msg, tt.typ, tt.code, tt.message)
			}
		})
	}
}

func TestJSONObjectWithJSONInTheMessagesIsAnswered(t *testing.T) {
	c := raw(t, New(Config{}), http.MethodPost, "/v1/chat/completions", "openai",
		`{"model": "mock-echo", "messages": [{"role": "user", "content": "Answer in JSON: hi"}], "response_format": {"type": "json_object"}}`, nil)
	if got := content(t, "openai", c.body); got != `{"text":"Answer in JSON: hi","length":18}` {
		t.Errorf("json_object answer = %q, want mock-json's object", got)
	}
}

func TestModelsAndCountTokens(t *testing.T) {
	s := New(Config{})
	c := raw(t, s, http.MethodGet, "/v1/models", "openai", "", nil)
	if c.status != 200 || !strings.Contains(string(c.body), `"object":"list"`) || !strings.Contains(string(c.body), `"id":"mock-json"`) {
		t.Errorf("OpenAI GET /v1/models = %d %s", c.status, c.body)
	}
	c = raw(t, s, http.MethodGet, "/v1/models", "anthropic", "", nil)
	if c.status != 200 || !strings.Contains(string(c.body), `"has_more":false`) || !strings.Contains(string(c.body), `"type":"model"`) {
		t.Errorf("Anthropic GET /v1/models = %d %s", c.status, c.body)
	}
	if c = raw(t, s, http.MethodGet, "/v1/models/mock-echo", "openai", "", nil); c.status != 200 || !strings.Contains(string(c.body), `"id":"mock-echo"`) {
		t.Errorf("GET /v1/models/mock-echo = %d %s", c.status, c.body)
	}
	if c = raw(t, s, http.MethodGet, "/v1/models/gpt-9", "openai", "", nil); c.status != 404 {
		t.Errorf("GET /v1/models/gpt-9 = %d %s, want 404", c.status, c.body)
	}
	c = raw(t, s, http.MethodPost, "/v1/messages/count_tokens", "anthropic",
		`{"model": "mock-echo", "system": "abcd", "messages": [{"role": "user", "content": "abcdefgh"}]}`, nil)
	if c.status != 200 || string(c.body) != `{"input_tokens":3}` {
		t.Errorf("count_tokens = %d %s, want 200 {\"input_tokens\":3}", c.status, c.body)
	}
}

// chatBody is a decoded answer in either dialect.
type chatBody struct {
	Choices []struct {
		Message struct {
			Content   *string `json:"content"`
			Refusal   *string `json:"refusal"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct{ Name, Arguments string }
			} `json:"tool_calls"`
		} `json:"message"`
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
	Content []struct {
		Type  string          `json:"type"`
		Text  string          `json:"text"`
		Name  string          `json:"name"`
		Input json.RawMessage `json:"input"`
	} `json:"content"`
	StopReason string `json:"stop_reason"`
}

func decode(t *testing.T, b []byte) chatBody {
	t.Helper()
	var v chatBody
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer is not JSON: %v: %s", err, b)
	}
	return v
}

const weatherTool = `{"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1, "maximum": 7}, "unit": {"enum": ["c", "f"]}}, "required": ["city", "days", "unit"]}`

func TestToolsAreCalledWithArgumentsFromTheSchema(t *testing.T) {
	tests := []struct {
		name, dialect, body string
		wantTool            bool
	}{
		{"openai forced", "openai", `{"model": "mock-echo", "messages": [{"role": "user", "content": "Paris"}], "tools": [{"type": "function", "function": {"name": "weather", "parameters": ` + weatherTool + `}}], "tool_choice": {"type": "function", "function": {"name": "weather"}}}`, true},
		{"openai auto, named in the prompt", "openai", `{"model": "mock-echo", "messages": [{"role": "user", "content": "Paris"}], "tools": [{"type": "function", "function": {"name": "paris", "parameters": ` + weatherTool + `}}]}`, true},
		{"openai auto, not named", "openai", `{"model": "mock-echo", "messages": [{"role": "user", "content": "Paris"}], "tools": [{"type": "function", "function": {"name": "weather", "parameters": ` + weatherTool + `}}]}`, false},
		{"openai after the tool's result", "openai", `{"model": "mock-echo", "messages": [{"role": "user", "content": "Paris"}, {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]}, {"role": "tool", "tool_call_id": "c1", "content": "sunny"}], "tools": [{"type": "function", "function": {"name": "weather", "parameters": ` + weatherTool + `}}], "tool_choice": "required"}`, false},
		{"anthropic any", "anthropic", `{"model": "mock-echo", "max_tokens": 200, "messages": [{"role": "user", "content": "Paris"}], "tools": [{"name": "weather", "input_schema": ` + weatherTool + `}], "tool_choice": {"type": "any"}}`, true},
		{"anthropic after the tool's result", "anthropic", `{"model": "mock-echo", "max_tokens": 200, "messages": [{"role": "user", "content": "Paris"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {}}]}, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}], "tools": [{"name": "weather", "input_schema": ` + weatherTool + `}], "tool_choice": {"type": "any"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := map[string]string{"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}[tt.dialect]
			c := raw(t, New(Config{}), http.MethodPost, path, tt.dialect, tt.body, nil)
			if c.status != 200 {
				t.Fatalf("status %d: %s", c.status, c.body)
			}
			v := decode(t, c.body)
			var args json.RawMessage
			var finish string
			if tt.dialect == "openai" {
				finish = v.Choices[0].FinishReason
				if calls := v.Choices[0].Message.ToolCalls; len(calls) == 1 {
					args = json.RawMessage(calls[0].Function.Arguments)
				}
			} else {
				finish = v.StopReason
				for _, b := range v.Content {
					if b.Type == "tool_use" {
						args = b.Input
					}
				}
			}
			if !tt.wantTool {
				if args != nil || finish == "tool_calls" || finish == "tool_use" {
					t.Errorf("finish %q, arguments %s: want an answer in text", finish, args)
				}
				return
			}
			if finish != "tool_calls" && finish != "tool_use" {
				t.Errorf("finish = %q, want tool_calls / tool_use", finish)
			}
			var got struct {
				City string
				Days int
				Unit string
			}
			if err := json.Unmarshal(args, &got); err != nil || got.City != "Paris" || got.Days != 5 || got.Unit != "c" {
				t.Errorf("arguments %s (%v), want city Paris, days 5 (the prompt's length within 1..7), unit c", args, err)
			}
		})
	}
}

func TestStructuredOutputConformsToTheSchema(t *testing.T) {
	schema := `{"type": "object", "properties": {"es": {"type": "string"}, "tags": {"type": "array", "items": {"$ref": "#/$defs/tag"}, "minItems": 2}, "ok": {"type": "boolean"}}, "required": ["es", "tags", "ok"], "$defs": {"tag": {"type": "string", "enum": ["a", "b"]}}}`
	for _, tt := range []struct{ dialect, path, body string }{
		{"openai", "/v1/chat/completions", `{"model": "mock-echo", "messages": [{"role": "user", "content": "gato"}], "response_format": {"type": "json_schema", "json_schema": {"name": "t", "strict": true, "schema": ` + schema + `}}}`},
		{"anthropic", "/v1/messages", `{"model": "mock-echo", "max_tokens": 100, "messages": [{"role": "user", "content": "gato"}], "output_format": {"type": "json_schema", "schema": ` + schema + `}}`},
	} {
		t.Run(tt.dialect, func(t *testing.T) {
			s := New(Config{})
			c := raw(t, s, http.MethodPost, tt.path, tt.dialect, tt.body, nil)
			if got, want := content(t, tt.dialect, c.body), `{"es":"gato","ok":true,"tags":["a","a"]}`; got != want {
				t.Errorf("answer = %s, want %s", got, want)
			}
			bad := New(Config{Faults: Faults{InvalidOutput: 1}})
			var broken []string
			for range 2 {
				broken = append(broken, content(t, tt.dialect, raw(t, bad, http.MethodPost, tt.path, tt.dialect, tt.body, nil).body))
			}
			var unparsable, missing bool
			for _, b := range broken {
				var v map[string]any
				if json.Unmarshal([]byte(b), &v) != nil {
					unparsable = strings.HasPrefix(b, `{"es":"gato"`)
				} else if _, ok := v["es"]; !ok {
					missing = true
				}
			}
			if !unparsable || !missing {
				t.Errorf("invalid outputs %q: want one that does not parse and one missing a required field", broken)
			}
		})
	}
}

func TestAnswerFaults(t *testing.T) {
	tests := []struct {
		name, dialect  string
		faults         Faults
		finish, detail string
	}{
		{"openai truncated", "openai", Faults{Truncated: 1}, "length", "hello"},
		{"anthropic truncated", "anthropic", Faults{Truncated: 1}, "max_tokens", "hello"},
		{"openai content filter", "openai", Faults{ContentFilter: 1}, "content_filter", "hello"},
		{"anthropic content filter", "anthropic", Faults{ContentFilter: 1}, "refusal", "hello"},
		{"openai refusal", "openai", Faults{Refusal: 1}, "stop", refusalText},
		{"anthropic refusal", "anthropic", Faults{Refusal: 1}, "refusal", refusalText},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := inProcess(t.Context(), New(Config{Faults: tt.faults}), tt.dialect, ModelEcho, "hello world, twice")
			v := decode(t, c.body)
			if tt.dialect == "openai" {
				m := v.Choices[0].Message
				if v.Choices[0].FinishReason != tt.finish {
					t.Errorf("finish_reason = %q, want %q", v.Choices[0].FinishReason, tt.finish)
				}
				if tt.detail == refusalText && (m.Refusal == nil || *m.Refusal != refusalText || m.Content != nil) {
					t.Errorf("refusal %v, content %v; want the refusal and null content", m.Refusal, m.Content)
				}
				if tt.detail != refusalText && (m.Content == nil || !strings.HasPrefix(*m.Content, tt.detail) || *m.Content == "hello world, twice") {
					t.Errorf("content %v, want the answer cut short", m.Content)
				}
				return
			}
			if v.StopReason != tt.finish || len(v.Content) != 1 || !strings.HasPrefix(v.Content[0].Text, tt.detail) {
				t.Errorf("stop_reason %q, content %+v; want %q and text starting %q", v.StopReason, v.Content, tt.finish, tt.detail)
			}
		})
	}
}

func TestErrorFaults(t *testing.T) {
	tests := []struct {
		dialect     string
		faults      Faults
		status      int
		typ, code   string
		shouldRetry string
	}{
		{"openai", Faults{Quota: 1}, 429, "insufficient_quota", "insufficient_quota", ""},
		{"anthropic", Faults{Quota: 1}, 400, "invalid_request_error", "", ""},
		{"openai", Faults{SpendLimit: 1}, 429, "insufficient_quota", "enforced_spend_limit_reached", ""},
		{"anthropic", Faults{SpendLimit: 1}, 429, "rate_limit_error", "", ""},
		{"openai", Faults{PaymentRequired: 1}, 402, "insufficient_quota", "billing_not_active", ""},
		{"anthropic", Faults{PaymentRequired: 1}, 402, "billing_error", "", ""},
		{"openai", Faults{Forbidden: 1}, 403, "request_forbidden", "unsupported_country_region_territory", ""},
		{"anthropic", Faults{Forbidden: 1}, 403, "permission_error", "", ""},
		{"openai", Faults{TooLarge: 1}, 413, "invalid_request_error", "request_too_large", ""},
		{"anthropic", Faults{TooLarge: 1}, 413, "request_too_large", "", ""},
		{"openai", Faults{ContextLength: 1}, 400, "invalid_request_error", "context_length_exceeded", ""},
		{"anthropic", Faults{ContextLength: 1}, 400, "invalid_request_error", "", ""},
		{"anthropic", Faults{RateLimit: 1}, 429, "rate_limit_error", "", "true"},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+" "+fmtFaults(tt.faults), func(t *testing.T) {
			s := New(Config{Faults: tt.faults})
			c := inProcess(t.Context(), s, tt.dialect, ModelEcho, "hi")
			if c.status != tt.status {
				t.Fatalf("status %d, want %d: %s", c.status, tt.status, c.body)
			}
			typ, code, msg := errorFields(t, tt.dialect, c.body)
			if typ != tt.typ || code != tt.code || msg == "" {
				t.Errorf("type, code = %q, %q (message %q); want %q, %q", typ, code, msg, tt.typ, tt.code)
			}
			if got := c.header.Get("x-should-retry"); got != tt.shouldRetry {
				t.Errorf("x-should-retry = %q, want %q", got, tt.shouldRetry)
			}
			if tt.faults.Quota > 0 && tt.dialect == "anthropic" && !strings.Contains(msg, "credit balance is too low") {
				t.Errorf("Anthropic's quota message %q does not say 'credit balance is too low', as the API does", msg)
			}
			if tt.faults.SpendLimit > 0 && !strings.Contains(msg, "spend limit") {
				t.Errorf("spend limit message %q does not say 'spend limit'", msg)
			}
			if st := s.Stats(); st.Succeeded != 0 || st.Requests != 1 {
				t.Errorf("stats = %+v, want 1 request and no success", st)
			}
		})
	}
}

func fmtFaults(f Faults) string {
	for k, frac := range f.fractions() {
		if frac > 0 {
			return fault(k).String()
		}
	}
	return "none"
}

// events reads a server-sent event stream: the data of each event, and
// the event names.
func events(t *testing.T, body []byte) (names, data []string) {
	t.Helper()
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if n, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, n)
		}
		if d, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, d)
		}
	}
	return names, data
}

func TestStreamsInBothDialects(t *testing.T) {
	s := New(Config{})
	c := raw(t, s, http.MethodPost, "/v1/chat/completions", "openai",
		`{"model": "mock-echo", "stream": true, "stream_options": {"include_usage": true}, "messages": [{"role": "user", "content": "one two three four five"}]}`, nil)
	if c.status != 200 || !strings.HasPrefix(c.header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("status %d, Content-Type %q", c.status, c.header.Get("Content-Type"))
	}
	_, data := events(t, c.body)
	if len(data) < 4 || data[len(data)-1] != "[DONE]" {
		t.Fatalf("OpenAI stream %q: want chunks ending with [DONE]", data)
	}
	var text strings.Builder
	var finish string
	var usage map[string]any
	for _, d := range data[:len(data)-1] {
		var ch struct {
			Object  string
			Choices []struct {
				Delta        struct{ Content string }
				FinishReason *string `json:"finish_reason"`
			}
			Usage map[string]any
		}
		if err := json.Unmarshal([]byte(d), &ch); err != nil || ch.Object != "chat.completion.chunk" {
			t.Fatalf("chunk %s: %v", d, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
			if c.FinishReason != nil {
				finish = *c.FinishReason
			}
		}
		if ch.Usage != nil {
			usage = ch.Usage
		}
	}
	if text.String() != "one two three four five" || finish != "stop" || usage["completion_tokens"] == nil {
		t.Errorf("streamed %q, finish %q, usage %v; want the echo, stop and usage in the last chunk", text.String(), finish, usage)
	}

	c = raw(t, s, http.MethodPost, "/v1/messages", "anthropic",
		`{"model": "mock-echo", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "one two three"}]}`, nil)
	names, data := events(t, c.body)
	want := "message_start content_block_start ping content_block_delta content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if strings.Join(names, " ") != want {
		t.Errorf("Anthropic events %q, want %q", names, want)
	}
	if !strings.Contains(strings.Join(data, ""), `"stop_reason":"end_turn"`) {
		t.Errorf("no end_turn in %q", data)
	}
}

func TestMidStreamFaults(t *testing.T) {
	body := map[string]string{
		"openai":    `{"model": "mock-echo", "stream": true, "messages": [{"role": "user", "content": "one two three four five six"}]}`,
		"anthropic": `{"model": "mock-echo", "max_tokens": 100, "stream": true, "messages": [{"role": "user", "content": "one two three four five six"}]}`,
	}
	path := map[string]string{"openai": "/v1/chat/completions", "anthropic": "/v1/messages"}
	for _, d := range []string{"openai", "anthropic"} {
		t.Run(d+" overloaded", func(t *testing.T) {
			c := raw(t, New(Config{Faults: Faults{Overloaded: 1}}), http.MethodPost, path[d], d, body[d], nil)
			names, data := events(t, c.body)
			last := data[len(data)-1]
			if c.status != 200 || !strings.Contains(last, `"error"`) || strings.Contains(strings.Join(data, ""), "[DONE]") {
				t.Errorf("status %d, events %q: want a 200 stream ending in an error event", c.status, data)
			}
			if d == "anthropic" && (names[len(names)-1] != "error" || !strings.Contains(last, "overloaded_error")) {
				t.Errorf("last event %q %s, want an overloaded_error event", names[len(names)-1], last)
			}
		})
		t.Run(d+" cut", func(t *testing.T) {
			c := raw(t, New(Config{Faults: Faults{Malformed: 1}}), http.MethodPost, path[d], d, body[d], nil)
			if c.status != 200 || !errors.Is(c.err, io.ErrUnexpectedEOF) {
				t.Errorf("status %d, read error %v: want a stream cut with io.ErrUnexpectedEOF", c.status, c.err)
			}
		})
	}
}

func TestMalformedOverARealSocketIsACutConnection(t *testing.T) {
	ts := httptest.NewServer(New(Config{Faults: Faults{Malformed: 1}}))
	defer ts.Close()
	c := post(t.Context(), ts.Client(), ts.URL, "openai", ModelEcho, testKey, "", 10, "hello there")
	if c.status != 200 || !errors.Is(c.err, io.ErrUnexpectedEOF) || len(c.body) == 0 {
		t.Errorf("status %d, %d bytes, err %v: want part of a 200 body, then io.ErrUnexpectedEOF", c.status, len(c.body), c.err)
	}
}

func TestLogRequestsWritesEachExchangeWithoutSecrets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		s := New(Config{LogRequests: &log, Faults: Faults{}})
		post(context.Background(), s.Client(), "http://mock.invalid", "anthropic", ModelEcho, testKey, "sys", 10, "q", "a", "your answer was not JSON")
		raw(t, s, http.MethodPost, "/v1/chat/completions", "openai", `{"model": "mock-echo", "stream": true, "messages": [{"role": "user", "content": "hi"}]}`, nil)
		if strings.Contains(log.String(), testKey) {
			t.Fatalf("the log holds the API key:\n%s", log.String())
		}
		lines := strings.Split(strings.TrimSpace(log.String()), "\n")
		if len(lines) != 2 {
			t.Fatalf("%d log lines, want 2:\n%s", len(lines), log.String())
		}
		var first, second logLine
		if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
			t.Fatal(err)
		}
		if first.Path != "/v1/messages" || first.Status != 200 || first.RequestHeader.Get("X-Api-Key") != "REDACTED" ||
			!strings.Contains(string(first.Request), "your answer was not JSON") || !strings.Contains(string(first.Response), `"stop_reason"`) {
			t.Errorf("first line %+v: want the Anthropic request with the feedback, the key redacted, the answer", first)
		}
		if second.Dialect != "openai" || !strings.Contains(second.ResponseText, "[DONE]") || second.Outcome != "answered" {
			t.Errorf("second line %+v: want the OpenAI stream as text", second)
		}
	})
}

func TestTheRequestLogRedactsCustomSecretHeaders(t *testing.T) {
	// A gateway's own header (headers: {X-Gw: "${GWH}"}) was written in
	// clear; only Authorization and the API key headers were redacted.
	const gateway = "gw-secret-0123456789"
	var log bytes.Buffer
	s := New(Config{LogRequests: &log, Record: true})
	raw(t, s, http.MethodPost, "/v1/chat/completions", "openai", `{"model": "mock-echo", "messages": [{"role": "user", "content": "hi"}]}`,
		map[string]string{"X-Gw": gateway, "X-Portkey-Api-Key": gateway, "Content-Type": "application/json", "X-Stainless-Lang": "go"})
	if strings.Contains(log.String(), gateway) {
		t.Fatalf("the log holds the gateway's secret:\n%s", log.String())
	}
	var line logLine
	if err := json.Unmarshal(log.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	h := line.RequestHeader
	if h.Get("X-Gw") != "REDACTED" || h.Get("X-Portkey-Api-Key") != "REDACTED" {
		t.Errorf("custom headers %v, want them present and REDACTED", h)
	}
	if h.Get("Content-Type") != "application/json" || h.Get("X-Stainless-Lang") != "go" {
		t.Errorf("headers %v: the SDK's and HTTP's own headers should keep their values", h)
	}
	if got := s.Requests(); len(got) != 1 || strings.Contains(fmt.Sprint(got[0].Header), gateway) {
		t.Errorf("Recorded header %v holds the gateway's secret", got[0].Header)
	}
}

// An Anthropic job with validate.json_schema {required: [text, length]}
// (no properties) sends the schema as a forced tool; the mock answered
// {} to every request, so every re-ask got the same invalid answer and
// the heal loop stopped as stuck.
func TestSchemaWithRequiredNamesButNoPropertiesGetsEveryRequiredName(t *testing.T) {
	const schema = `{"type": "object", "required": ["text", "length"]}`
	tests := []struct {
		name, dialect, path, body, want string
	}{
		{"anthropic forced tool, mock-json", "anthropic", "/v1/messages",
			`{"model": "mock-json", "max_tokens": 100, "messages": [{"role": "user", "content": "gato"}], "tools": [{"name": "output", "input_schema": ` + schema + `}], "tool_choice": {"type": "tool", "name": "output"}}`,
			`{"length":4,"text":"gato"}`},
		{"anthropic forced tool, mock-echo", "anthropic", "/v1/messages",
			`{"model": "mock-echo", "max_tokens": 100, "messages": [{"role": "user", "content": "gato"}], "tools": [{"name": "output", "input_schema": ` + schema + `}], "tool_choice": {"type": "tool", "name": "output"}}`,
			`{"length":"gato","text":"gato"}`},
		{"openai json_schema, not strict", "openai", "/v1/chat/completions",
			`{"model": "mock-json", "messages": [{"role": "user", "content": "gato"}], "response_format": {"type": "json_schema", "json_schema": {"name": "t", "schema": ` + schema + `}}}`,
			`{"length":4,"text":"gato"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := raw(t, New(Config{}), http.MethodPost, tt.path, tt.dialect, tt.body, nil)
			if c.status != 200 {
				t.Fatalf("status %d: %s", c.status, c.body)
			}
			var got string
			if tt.dialect == "anthropic" {
				for _, b := range decode(t, c.body).Content {
					if b.Type == "tool_use" {
						got = string(b.Input)
					}
				}
			} else {
				got = content(t, tt.dialect, c.body)
			}
			if got != tt.want {
				t.Errorf("answer %s, want %s: a model fills every name it is told is required", got, tt.want)
			}
		})
	}
}

// Anthropic's tool_use input is an object: the invalid fault's arguments
// that do not parse were sent as {} on every request, so on the Anthropic
// wire with a forced tool a re-ask drawing that fault again got the same
// answer, and the heal loop stopped as stuck.
func TestInvalidToolInputOnAnthropicDiffersFromOneRequestToTheNext(t *testing.T) {
	body := `{"model": "mock-json", "max_tokens": 100, "messages": [{"role": "user", "content": "gato"}], "tools": [{"name": "output", "input_schema": {"type": "object", "properties": {"text": {"type": "string"}, "length": {"type": "integer"}}, "required": ["text", "length"]}}], "tool_choice": {"type": "tool", "name": "output"}}`
	s := New(Config{Faults: Faults{InvalidOutput: 1}})
	seen := map[string]bool{}
	for range 4 {
		c := raw(t, s, http.MethodPost, "/v1/messages", "anthropic", body, nil)
		var input json.RawMessage
		for _, b := range decode(t, c.body).Content {
			if b.Type == "tool_use" {
				input = b.Input
			}
		}
		var obj map[string]any
		if err := json.Unmarshal(input, &obj); err != nil {
			t.Fatalf("tool input %s is not an object: %v", input, err)
		}
		_, hasText := obj["text"]
		_, hasLength := obj["length"]
		if hasText && hasLength {
			t.Errorf("invalid tool input %s has every required field", input)
		}
		if seen[string(input)] {
			t.Errorf("invalid tool input %s came twice: a re-ask must be able to tell answers apart", input)
		}
		seen[string(input)] = true
	}
}

func TestAzureDeploymentRoute(t *testing.T) {
	// The mock had no Azure route: AzureOpenAI got 404 on every call, so
	// provider azure could not be rehearsed.
	s := New(Config{})
	body := `{"messages": [{"role": "user", "content": "hi azure"}]}`
	for _, tt := range []struct {
		name, path string
		header     map[string]string
		status     int
		want       string // in the body
	}{
		{"answered, the deployment the model", "/openai/deployments/mock-echo/chat/completions?api-version=2024-10-21",
			map[string]string{"Authorization": "", "Api-Key": testKey}, 200, `"content":"hi azure"`},
		{"an Entra ID bearer token", "/openai/deployments/mock-echo/chat/completions?api-version=2024-10-21", nil, 200, `"model":"mock-echo"`},
		{"no api-version", "/openai/deployments/mock-echo/chat/completions", map[string]string{"Api-Key": testKey}, 404, "Resource not found"},
		{"not a deployment's chat", "/openai/deployments/mock-echo/embeddings?api-version=2024-10-21", map[string]string{"Api-Key": testKey}, 404, "Resource not found"},
		{"unknown deployment", "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21", map[string]string{"Api-Key": testKey}, 404, "DeploymentNotFound"},
		{"no key", "/openai/deployments/mock-echo/chat/completions?api-version=2024-10-21", map[string]string{"Authorization": ""}, 401, "missing subscription key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := raw(t, s, http.MethodPost, tt.path, "openai", body, tt.header)
			if c.status != tt.status || !strings.Contains(string(c.body), tt.want) {
				t.Errorf("status %d, body %s; want %d containing %q", c.status, c.body, tt.status, tt.want)
			}
		})
	}
}

func TestClaudeOnVertexRawPredictRoute(t *testing.T) {
	const path = "/v1/projects/my-proj/locations/us-east5/publishers/anthropic/models/mock-echo:rawPredict"
	body := `{"anthropic_version": "vertex-2023-10-16", "max_tokens": 50, "messages": [{"role": "user", "content": "hi claude"}]}`
	noAnthropicHeaders := map[string]string{"x-api-key": "", "anthropic-version": ""}
	for _, tt := range []struct {
		name, path, body string
		faults           Faults
		header           map[string]string
		status           int
		want             string // in the body
	}{
		{"answered in Anthropic's dialect, the path's model", path, body, Faults{}, nil, 200, `"type":"message"`},
		{"the model in the body", path, strings.Replace(body, "{", `{"model": "mock-echo", `, 1), Faults{}, nil, 400, "model: Extra inputs are not permitted"},
		{"no anthropic_version", path, strings.Replace(body, `"anthropic_version": "vertex-2023-10-16", `, "", 1), Faults{}, nil, 400, "anthropic_version: Field required"},
		{"Anthropic's version", path, strings.Replace(body, "vertex-2023-10-16", "2023-06-01", 1), Faults{}, nil, 400, "anthropic_version: Input should be"},
		{"no bearer token", path, body, Faults{}, map[string]string{"Authorization": ""}, 401, `"status":"UNAUTHENTICATED"`},
		{"an x-api-key is not a token", path, body, Faults{}, map[string]string{"Authorization": "", "x-api-key": testKey}, 401, `"status":"UNAUTHENTICATED"`},
		{"rate limited", path, body, Faults{RateLimit: 1}, nil, 429, `"type":"rate_limit_error"`},
		{"overloaded", path, body, Faults{Overloaded: 1}, nil, 529, `"type":"overloaded_error"`},
		{"a bad token", path, body, Faults{Auth: 1}, nil, 401, `"status":"UNAUTHENTICATED"`},
		{"forbidden", path, body, Faults{Forbidden: 1}, nil, 403, `"status":"PERMISSION_DENIED"`},
		{"a stream is not served", strings.Replace(path, ":rawPredict", ":streamRawPredict", 1), body, Faults{}, nil, 404, `"status":"NOT_FOUND"`},
		{"unknown model", strings.Replace(path, "mock-echo", "claude-nope", 1), body, Faults{}, nil, 404, `"type":"not_found_error"`},
		{"gemini on the same prefix still served", "/v1/projects/p/locations/us-central1/publishers/google/models/mock-echo:generateContent",
			`{"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}`, Faults{}, nil, 200, `"candidates"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			header := maps.Clone(noAnthropicHeaders)
			maps.Copy(header, tt.header)
			c := raw(t, New(Config{Faults: tt.faults}), http.MethodPost, tt.path, "vertex", tt.body, header)
			if c.status != tt.status || !strings.Contains(string(c.body), tt.want) {
				t.Errorf("status %d, body %s; want %d containing %q", c.status, c.body, tt.status, tt.want)
			}
		})
	}
}
