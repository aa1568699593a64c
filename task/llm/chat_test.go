package llm

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// keptBody is a transport that keeps the last request's body and answers
// answer.
type keptBody struct {
	body   []byte
	answer string
}

func (k *keptBody) RoundTrip(req *http.Request) (*http.Response, error) {
	k.body, _ = io.ReadAll(req.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(k.answer)), Request: req}, nil
}

// sdkChatBody is the body the openai SDK itself encodes for tk's call c:
// its parameters built field by field and extra_body applied with
// WithJSONSet, as tenax sent every request before it built the body.
func sdkChatBody(t *testing.T, tk *Task, c *call) []byte {
	t.Helper()
	params := tk.openAIParams()
	if c.maxTokens > 0 {
		if reasoningModel(tk.cfg.Model) {
			params.MaxCompletionTokens = openai.Int(int64(c.maxTokens))
		} else {
			params.MaxTokens = openai.Int(int64(c.maxTokens))
		}
	}
	msgs := c.msgs
	if tk.structured.Mode == ModeJSONObject && !mentionsJSON(msgs) {
		msgs = withJSONInstruction(msgs)
	}
	for _, m := range msgs {
		switch m.Role {
		case "system":
			params.Messages = append(params.Messages, openai.SystemMessage(m.Content))
		case "assistant":
			params.Messages = append(params.Messages, openai.AssistantMessage(m.Content))
		default:
			params.Messages = append(params.Messages, openai.UserMessage(m.Content))
		}
	}
	saver := &keptBody{answer: `{"choices":[]}`}
	opts := []ooption.RequestOption{ooption.WithHTTPClient(&http.Client{Transport: saver}),
		ooption.WithBaseURL("http://x.invalid/v1/"), ooption.WithAPIKey("k"), ooption.WithMaxRetries(0)}
	for _, name := range sortedKeys(tk.cfg.ExtraBody) {
		opts = append(opts, ooption.WithJSONSet(sjsonKey(name), tk.cfg.ExtraBody[name]))
	}
	client := openai.NewClient(opts...)
	if _, err := client.Chat.Completions.New(t.Context(), params); err != nil {
		t.Fatalf("the SDK's own request: %v", err)
	}
	return saver.body
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	return v
}

func TestTheRequestTenaxEncodesIsTheOneTheSDKWouldEncode(t *testing.T) {
	temp, topP, seed := 0.3, 0.9, int64(7)
	schema := json.RawMessage(`{"type":"object","properties":{"fr":{"type":"string"}},"required":["fr"],"additionalProperties":false}`)
	heal := &task.Feedback{PreviousOutput: "", Message: "Your previous output was empty.", Attempt: 1}
	tests := []struct {
		name string
		cfg  Config
		fb   *task.Feedback
	}{
		{"plain", Config{Model: "gpt-4o-mini", Prompt: "Translate {{.word}}"}, nil},
		{"system, sampling and stop", Config{Model: "gpt-4o-mini", System: "Be <terse> & exact.", Prompt: "Translate {{.word}}",
			Temperature: &temp, TopP: &topP, Seed: &seed, Stop: []string{"\n\n", "END"}, MaxTokens: 50}, nil},
		{"reasoning model", Config{Model: "gpt-5-mini", Prompt: "{{.word}}", ReasoningEffort: "low"}, nil},
		{"json_object with the instruction added", Config{Model: "gpt-4o-mini", System: "Translate.", Prompt: "{{.word}}", Output: OutputJSON}, nil},
		{"json_schema", Config{Model: "gpt-4o-mini", Prompt: "{{.word}} as JSON", Output: OutputJSON, Schema: schema}, nil},
		{"heal re-ask with an empty previous answer", Config{Model: "gpt-4o-mini", Prompt: "{{.word}}"}, heal},
		{"extra_body", Config{Model: "gpt-4o-mini", Prompt: "{{.word}}",
			ExtraBody: map[string]any{"guided_json": map[string]any{"type": "object"}, "a.b": 1, "options": []any{"x", 2.5, nil}}}, nil},
		{"extra_body replaces max_tokens and the model", Config{Model: "gpt-4o-mini", Prompt: "{{.word}}", MaxTokens: 9,
			ExtraBody: map[string]any{"max_tokens": 3, "model": "other"}}, nil},
		{"extra_body replaces the messages", Config{Model: "gpt-4o-mini", Prompt: "{{.word}}",
			ExtraBody: map[string]any{"messages": []any{map[string]any{"role": "user", "content": "fixed"}}}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			saver := &keptBody{answer: `{"choices":[{"message":{"content":"{\"fr\":\"x\"}"},"finish_reason":"stop"}]}`}
			cfg := tt.cfg
			cfg.Provider, cfg.BaseURL, cfg.APIKey = ProviderOpenAI, "http://x.invalid/v1", "k"
			cfg.HTTPClient = &http.Client{Transport: saver}
			tk := mustNew(t, cfg)
			it := task.Item{Idx: 1, Fields: map[string]any{"word": "chat «noir» </script>"}, Feedback: tt.fb}
			if _, err := tk.Run(t.Context(), it); err != nil {
				t.Fatalf("Run: %v", err)
			}
			c, err := tk.prepare(it)
			if err != nil {
				t.Fatal(err)
			}
			want := sdkChatBody(t, tk, c)
			if got := jsonValue(t, saver.body); !reflect.DeepEqual(got, jsonValue(t, want)) {
				t.Errorf("tenax sent\n%s\nthe SDK would have sent\n%s", saver.body, want)
			}
		})
	}
}

// sdkReply reads answer with the SDK's decoder, as tenax read every
// answer before it decoded them itself.
func sdkReply(t *testing.T, answer string) reply {
	t.Helper()
	var comp openai.ChatCompletion
	if err := json.Unmarshal([]byte(answer), &comp); err != nil {
		t.Fatalf("the SDK cannot read %s: %v", answer, err)
	}
	u := comp.Usage
	rep := reply{usage: task.Usage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens,
		CachedInputTokens: u.PromptTokensDetails.CachedTokens, ReasoningTokens: u.CompletionTokensDetails.ReasoningTokens}}
	if len(comp.Choices) > 0 {
		ch := comp.Choices[0]
		rep.content, rep.refusal, rep.finish = ch.Message.Content, ch.Message.Refusal, ch.FinishReason
		for _, tc := range ch.Message.ToolCalls {
			rep.calls = append(rep.calls, agent.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
		}
		if ch.FinishReason == "content_filter" {
			var extra struct {
				Results json.RawMessage `json:"content_filter_results"`
			}
			if json.Unmarshal([]byte(ch.RawJSON()), &extra) == nil {
				rep.filter = filterVerdict(extra.Results)
			}
		}
	}
	return rep
}

func TestAnAnswerReadsAsTheSDKReadsIt(t *testing.T) {
	answers := map[string]string{
		"text and usage": `{"id":"c","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Bonjour"},"finish_reason":"stop"}],
			"usage":{"prompt_tokens":1000,"completion_tokens":100,"total_tokens":1100,"prompt_tokens_details":{"cached_tokens":800},"completion_tokens_details":{"reasoning_tokens":40}}}`,
		"refusal":                 `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":7}}`,
		"cut off":                 `{"choices":[{"message":{"content":"Bonj"},"finish_reason":"length"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
		"azure content filter":    `{"choices":[{"index":0,"finish_reason":"content_filter","message":{"role":"assistant","content":null},"content_filter_results":{"hate":{"filtered":false,"severity":"safe"},"self_harm":{"filtered":true,"severity":"high"}}}],"usage":{"prompt_tokens":10,"completion_tokens":0}}`,
		"content filter, no why":  `{"choices":[{"finish_reason":"content_filter","message":{"content":""}}]}`,
		"tool calls and no text":  `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"t","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		"usage written as floats": `{"choices":[{"message":{"content":"x"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12.0,"completion_tokens":3.0}}`,
		"no choices, no usage":    `{"choices":[]}`,
		"several choices":         `{"choices":[{"message":{"content":"first"},"finish_reason":"stop"},{"message":{"content":"second"},"finish_reason":"length"}]}`,
		"unicode and escapes":     `{"choices":[{"message":{"content":"l\u2019\u00e9t\u00e9 \"chaud\"\n<b>"},"finish_reason":"stop"}]}`,
	}
	for name, answer := range answers {
		t.Run(name, func(t *testing.T) {
			got, err := decodeChatCompletion([]byte(answer))
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if want := sdkReply(t, answer); !reflect.DeepEqual(got, want) {
				t.Errorf("tenax read %+v, the SDK reads %+v", got, want)
			}
		})
	}
}

func TestAnAnswerThatIsNotJSONIsAnError(t *testing.T) {
	for _, answer := range []string{``, `{"choices":[`, `<html>busy</html>`} {
		if rep, err := decodeChatCompletion([]byte(answer)); err == nil {
			t.Errorf("%q read as %+v, want an error", answer, rep)
		}
	}
}
