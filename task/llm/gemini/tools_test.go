package gemini_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
)

// geminiAgentTask is an agent's model on the mock's Gemini dialect; last
// returns the last request's body.
func geminiAgentTask(t *testing.T, prompt string) (m *llm.Task, client *gemini.Client, last func() string) {
	t.Helper()
	return geminiAgentTaskOn(t, mock.ModelAgent, prompt)
}

// geminiAgentTaskOn is geminiAgentTask on model.
func geminiAgentTaskOn(t *testing.T, model, prompt string) (m *llm.Task, client *gemini.Client, last func() string) {
	t.Helper()
	srv := mock.New(mock.Config{Seed: 7})
	var mu sync.Mutex
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		body = b
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	client, err := gemini.New(context.Background(), gemini.Options{APIKey: "AIza-any", Endpoint: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	m, err = llm.New(llm.Config{Provider: llm.ProviderGemini, Gemini: client, Model: model, Prompt: prompt})
	if err != nil {
		t.Fatal(err)
	}
	return m, client, func() string {
		mu.Lock()
		defer mu.Unlock()
		return string(body)
	}
}

// The tools go as functionDeclarations with their JSON Schema as
// parametersJsonSchema, each step as a model content of functionCall
// parts and a user content of functionResponse parts ({"output"} or
// {"error"}, naming the call's function and id). Before, Next refused
// gemini ("tools are not sent to gemini yet").
func TestAgentToolsAndStepsAreSentAsGeminiFunctionCalls(t *testing.T) {
	m, _, last := geminiAgentTask(t, "hi")
	defs := []agent.Def{{Name: "search", Description: "finds", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}}
	steps := []agent.Step{{Calls: []agent.Call{
		{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)},
		{ID: "gemini-call-0-1", Name: "search", Arguments: json.RawMessage(`"not an object"`)}},
		Outcomes: []agent.Outcome{{CallID: "call_1", Name: "search", Content: "found x"},
			{CallID: "gemini-call-0-1", Name: "search", Content: "bad arguments", IsError: true}}}}
	if _, err := m.Next(t.Context(), task.Item{}, defs, steps); err != nil {
		t.Fatalf("Next: %v", err)
	}
	body := last()
	for _, want := range []string{
		`"tools":[{"functionDeclarations":[{"description":"finds","name":"search","parametersJsonSchema":{"properties":{"query":{"type":"string"}},"type":"object"}}]}]`,
		`{"parts":[{"functionCall":{"args":{"query":"x"},"id":"call_1","name":"search"}},{"functionCall":{"name":"search"}}],"role":"model"}`,
		`{"parts":[{"functionResponse":{"id":"call_1","name":"search","response":{"output":"found x"}}},{"functionResponse":{"name":"search","response":{"error":"bad arguments"}}}],"role":"user"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the request %s\nlacks %s", body, want)
		}
	}
}

// functionCall parts are the step's calls; one without an id (what the
// Gemini API sends most models) gets one tenax makes up, and a
// finishReason STOP with calls is a step, not the final answer.
func TestGeminiFunctionCallsAreTheStepsCalls(t *testing.T) {
	_, client, _ := geminiAgentTask(t, "hi")
	rep, err := client.DecodeGenerate([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"let me look"},
		{"functionCall":{"name":"search","args":{"query":"x"}}},{"functionCall":{"id":"fc_9","name":"fetch","args":{}}}]},"finishReason":"STOP"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []agent.Call{{ID: "gemini-call-0-0", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)},
		{ID: "fc_9", Name: "fetch", Arguments: json.RawMessage(`{}`)}}
	if got := fmt.Sprintf("%s", rep.Calls); got != fmt.Sprintf("%s", want) || rep.Text != "let me look" {
		t.Errorf("calls %s, text %q; want %s and the text", got, rep.Text, want)
	}

	m, _, _ := geminiAgentTask(t, "Look up {{.q}}")
	defs := []agent.Def{{Name: "search", Parameters: json.RawMessage(`{"type":"object","required":["query"],"properties":{"query":{"type":"string"}}}`)}}
	r, err := m.Next(t.Context(), task.Item{Fields: map[string]any{"q": "x"}}, defs, nil)
	if err != nil || len(r.Calls) == 0 || r.Result.FinishReason != "STOP" {
		t.Errorf("Next = %+v, %v: want the mock's functionCall as a call, finish STOP", r, err)
	}
}

// An agent item runs to its final answer on Gemini's wire through the
// genai SDK: the mock's agent model calls the tools, slips, reads the
// functionResponse parts and answers.
func TestAnAgentItemRunsOnGeminiThroughTheSDK(t *testing.T) {
	m, _, _ := geminiAgentTask(t, "Look up {{.q}}")
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	var tools []*agent.Tool
	for _, name := range []string{"search", "fetch"} {
		run := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
			q := it.Fields[agent.ArgsField].(map[string]any)["query"]
			return task.Result{Output: json.RawMessage(fmt.Sprintf("%q", name+" found "+fmt.Sprint(q)))}, nil
		})
		tool, err := agent.NewTool(agent.Def{Name: name, Description: "finds things", Parameters: schema}, run, true)
		if err != nil {
			t.Fatal(err)
		}
		tools = append(tools, tool)
	}
	a, err := agent.New(agent.Config{Model: m, Tools: tools, MaxConsecutiveErrors: 5})
	if err != nil {
		t.Fatal(err)
	}
	var steps, fedBack, calls int
	for i := range 30 {
		q := fmt.Sprintf("thing %d", i)
		res, err := a.Run(t.Context(), task.Item{Idx: i, Fields: map[string]any{"q": q}})
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if want := `"Look up ` + q + `"`; string(res.Output) != want {
			t.Errorf("item %d: output %s, want the echo %s", i, res.Output, want)
		}
		steps += res.Agent.Steps
		fedBack += res.Agent.ErrorsFedBack
		calls += res.Agent.ToolCalls["search"] + res.Agent.ToolCalls["fetch"]
	}
	if steps <= 30 || fedBack == 0 || calls == 0 {
		t.Errorf("%d steps, %d errors fed back, %d calls of the tools over 30 items: want more than a step an item, slips fed back and tools called", steps, fedBack, calls)
	}
}
