package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// An agent's conversation goes over both wires as native tool calling:
// the mock's agent model calls the tools, reads their results and
// answers, and its slips (an unknown tool, bad arguments) come back to
// it as errors; every item ends, with every step's tokens counted.
func TestAgentConversationsRunOverBothWires(t *testing.T) {
	ts := httptest.NewServer(mock.New(mock.Config{Seed: 7}))
	defer ts.Close()
	wires := []struct {
		name string
		cfg  Config
	}{
		{"openai", Config{Provider: ProviderOpenAI, BaseURL: ts.URL + "/v1", APIKey: "k"}},
		{"anthropic", Config{Provider: ProviderAnthropic, BaseURL: ts.URL, APIKey: "k"}},
	}
	for _, w := range wires {
		t.Run(w.name, func(t *testing.T) {
			cfg := w.cfg
			cfg.Model, cfg.Prompt = mock.ModelAgent, "Look up {{.q}}"
			model := mustNew(t, cfg)
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
			a, err := agent.New(agent.Config{Model: model, Tools: tools, MaxConsecutiveErrors: 5})
			if err != nil {
				t.Fatal(err)
			}
			var steps, fedBack, unknown, parallel int
			for i := range 40 {
				q := fmt.Sprintf("thing %d", i)
				res, err := a.Run(t.Context(), task.Item{Idx: i, Fields: map[string]any{"q": q}})
				if err != nil {
					t.Fatalf("item %d: %v", i, err)
				}
				if want := `"Look up ` + q + `"`; string(res.Output) != want {
					t.Errorf("item %d: output %s, want the echo %s", i, res.Output, want)
				}
				st := res.Agent
				if res.Usage.InputTokens < int64(st.Steps) {
					t.Errorf("item %d: %d input tokens over %d steps: not every step counted", i, res.Usage.InputTokens, st.Steps)
				}
				steps += st.Steps
				fedBack += st.ErrorsFedBack
				unknown += st.ToolErrors["mock_unknown_tool"]
				if st.ToolCalls["search"]+st.ToolCalls["fetch"]+st.ToolCalls["mock_unknown_tool"] > st.Steps-1 {
					parallel++
				}
			}
			if steps <= 40 || fedBack == 0 || unknown == 0 || unknown == fedBack || parallel == 0 {
				t.Errorf("%d steps, %d errors fed back (%d unknown tools), %d items with parallel calls over 40 items: want more than one step an item, both kinds of slips and some parallel calls",
					steps, fedBack, unknown, parallel)
			}
		})
	}
}

// The tools and steps are sent as OpenAI's tools, tool_calls and tool
// messages.
func TestAgentStepsAreSentAsOpenAIToolCalls(t *testing.T) {
	srv := mock.New(mock.Config{})
	var body string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	}))
	defer ts.Close()
	steps := []agent.Step{{Calls: []agent.Call{{ID: "call_1", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)}},
		Outcomes: []agent.Outcome{{CallID: "call_1", Name: "search", Content: "no such page", IsError: true}}}}
	defs := []agent.Def{{Name: "search", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}
	m := mustNew(t, Config{Provider: ProviderOpenAI, BaseURL: ts.URL + "/v1", APIKey: "k", Model: mock.ModelAgent, Prompt: "hi"})
	if _, err := m.Next(t.Context(), task.Item{}, defs, steps); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"tools":[{"type":"function","function":{"name":"search","description":"d","parameters":{"type":"object"}}}]`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"search","arguments":"{\"query\":\"x\"}"}}]}`,
		`{"role":"tool","tool_call_id":"call_1","content":"error: no such page"}`} {
		if !strings.Contains(body, want) {
			t.Errorf("the request %s\nlacks %s", body, want)
		}
	}
}
