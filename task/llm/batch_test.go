package llm_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// bodySaver is a transport that keeps the body of the last request and
// answers a fixed response.
type bodySaver struct {
	body   []byte
	answer string
}

func (b *bodySaver) RoundTrip(req *http.Request) (*http.Response, error) {
	b.body, _ = io.ReadAll(req.Body)
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(b.answer)), Request: req}, nil
}

func TestBatchBodyIsTheRequestRunSends(t *testing.T) {
	temp := 0.2
	item := task.Item{Idx: 3, Fields: map[string]any{"word": "hola"},
		Feedback: &task.Feedback{PreviousOutput: "{bad", Message: "Your previous output was not JSON.", Attempt: 1}}
	for _, provider := range []string{llm.ProviderOpenAI, llm.ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			answer := `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"es\":\"hola\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5}}`
			if provider == llm.ProviderAnthropic {
				answer = `{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"{\"es\":\"hola\"}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":5}}`
			}
			saver := &bodySaver{answer: answer}
			lt, err := llm.New(llm.Config{Provider: provider, BaseURL: "http://x.invalid/", APIKey: "k", Model: "gpt-4o-mini",
				System: "Translate.", Prompt: "{{.word}}", MaxTokens: 50, Temperature: &temp, Output: llm.OutputJSON,
				HTTPClient: &http.Client{Transport: saver}})
			if err != nil {
				t.Fatal(err)
			}
			online, err := lt.Run(context.Background(), item)
			if err != nil {
				t.Fatal(err)
			}
			b := lt.Batch()
			body, err := b.Body(item)
			if err != nil {
				t.Fatal(err)
			}
			if string(body) != string(saver.body) {
				t.Errorf("batch body differs from the online request:\nbatch  %s\nonline %s", body, saver.body)
			}
			res, err := b.Result(item, json.RawMessage(answer))
			if err != nil {
				t.Fatal(err)
			}
			if string(res.Output) != string(online.Output) || res.Usage != online.Usage || res.CostUSD != online.CostUSD {
				t.Errorf("batch result %+v differs from the online one %+v", res, online)
			}
		})
	}
}

func TestBatchResultOfAnUnusableAnswerIsAnOutputError(t *testing.T) {
	lt, err := llm.New(llm.Config{Provider: llm.ProviderOpenAI, BaseURL: "http://x.invalid/", APIKey: "k", Model: "gpt-4o-mini", Prompt: "hi", Output: llm.OutputJSON})
	if err != nil {
		t.Fatal(err)
	}
	_, err = lt.Batch().Result(task.Item{}, json.RawMessage(`{"choices":[{"message":{"content":"not json"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`))
	var oe *task.OutputError
	if !errors.As(err, &oe) || oe.Output != "not json" {
		t.Errorf("err = %v, want a *task.OutputError holding the answer", err)
	}
}

// Batch.Result read only an Anthropic answer's text blocks: under
// ModeTool (a schema sent as a forced tool) every batch answer was empty,
// so every item was re-asked until its heal budget ran out. It now reads
// answers with Run's own code; each case is an answer whose reading
// differed.
func TestBatchResultReadsAnAnswerAsRunDoes(t *testing.T) {
	tests := []struct {
		name, provider, answer, want string
	}{
		{"anthropic forced tool", llm.ProviderAnthropic,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"output","input":{"es":"hola"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5}}`,
			`{"es":"hola"}`},
		{"anthropic cached prompt", llm.ProviderAnthropic,
			`{"id":"x","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"t1","name":"output","input":{"es":"hola"}}],"stop_reason":"tool_use","usage":{"input_tokens":10,"output_tokens":5,"cache_read_input_tokens":7,"cache_creation_input_tokens":3}}`,
			`{"es":"hola"}`},
		{"openai cached prompt", llm.ProviderOpenAI,
			`{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"{\"es\":\"hola\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"prompt_tokens_details":{"cached_tokens":8}}}`,
			`{"es":"hola"}`},
	}
	item := task.Item{Idx: 1, Fields: map[string]any{"word": "hola"}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lt, err := llm.New(llm.Config{Provider: tt.provider, BaseURL: "http://x.invalid/", APIKey: "k", Model: "mock-json",
				Prompt: "{{.word}}", MaxTokens: 50, Output: llm.OutputJSON, Schema: json.RawMessage(`{"type":"object","required":["es"]}`),
				HTTPClient: &http.Client{Transport: &bodySaver{answer: tt.answer}}})
			if err != nil {
				t.Fatal(err)
			}
			online, err := lt.Run(context.Background(), item)
			if err != nil {
				t.Fatalf("online: %v", err)
			}
			res, err := lt.Batch().Result(item, json.RawMessage(tt.answer))
			if err != nil {
				t.Fatalf("batch: %v (online gave %s)", err, online.Output)
			}
			if string(res.Output) != tt.want || string(online.Output) != tt.want {
				t.Errorf("batch output %s, online %s, want %s for both", res.Output, online.Output, tt.want)
			}
			if res.Usage != online.Usage {
				t.Errorf("batch usage %+v, online %+v: the same answer counts the same tokens", res.Usage, online.Usage)
			}
		})
	}
}
