package bedrock_test

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

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/task/llm"
)

// signedMock serves the mock's Bedrock dialect checking every request's
// SigV4 signature, and keeps the last request body.
func signedMock(t *testing.T) (url string, last func() string) {
	t.Helper()
	srv := mock.New(mock.Config{Seed: 7, AWSCredentials: map[string]string{"AKIAMOCKMOCKMOCKMOCK": "mock-secret-access-key"}})
	var body []byte
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body = b
		r.Body = io.NopCloser(bytes.NewReader(b))
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, func() string { return string(body) }
}

// The tools go as toolConfig.tools[].toolSpec with the model's choice,
// each step as an assistant message of toolUse blocks and a user message
// of toolResult blocks, an error's status "error". Before, Next refused
// bedrock ("tools are not sent to bedrock yet").
func TestAgentToolsAndStepsAreSentAsConverseToolUse(t *testing.T) {
	awsTestCredentials(t)
	url, last := signedMock(t)
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelAgent, Prompt: "hi"})
	defs := []agent.Def{{Name: "search", Description: "finds", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}}
	steps := []agent.Step{{Text: "looking", Calls: []agent.Call{
		{ID: "tooluse_1", Name: "search", Arguments: json.RawMessage(`{"query":"x"}`)},
		{ID: "call_openai_2", Name: "search", Arguments: json.RawMessage(`["not","an","object"]`)}},
		Outcomes: []agent.Outcome{{CallID: "tooluse_1", Name: "search", Content: "found x"},
			{CallID: "call_openai_2", Name: "search", Content: "the arguments are not an object", IsError: true}}}}
	if _, err := tk.Next(t.Context(), task.Item{}, defs, steps); err != nil {
		t.Fatalf("Next: %v", err)
	}
	body := last()
	for _, want := range []string{
		`"toolConfig":{"toolChoice":{"auto":{}},"tools":[{"toolSpec":{"description":"finds","inputSchema":{"json":{"properties":{"query":{"type":"string"}},"type":"object"}},"name":"search"}}]}`,
		`{"content":[{"text":"looking"},{"toolUse":{"input":{"query":"x"},"name":"search","toolUseId":"tooluse_1"}},{"toolUse":{"input":{},"name":"search","toolUseId":"call_openai_2"}}],"role":"assistant"}`,
		`{"content":[{"toolResult":{"content":[{"text":"found x"}],"toolUseId":"tooluse_1"}},{"toolResult":{"content":[{"text":"the arguments are not an object"}],"status":"error","toolUseId":"call_openai_2"}}],"role":"user"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the request %s\nlacks %s", body, want)
		}
	}
}

// The mock's toolUse blocks come back as the step's calls, with their
// ids, names and inputs, and stopReason tool_use is not a final answer.
func TestConverseToolUseBlocksAreTheStepsCalls(t *testing.T) {
	awsTestCredentials(t)
	url, _ := signedMock(t)
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelAgent, Prompt: "Look up {{.q}}"})
	defs := []agent.Def{{Name: "search", Parameters: json.RawMessage(`{"type":"object","required":["query"],"properties":{"query":{"type":"string"}}}`)}}
	filled := 0
	for i := range 20 {
		rep, err := tk.Next(t.Context(), item(map[string]any{"q": fmt.Sprint("thing ", i)}), defs, nil)
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(rep.Calls) == 0 {
			t.Fatalf("item %d: no calls in the first step (output %s, finish %q)", i, rep.Result.Output, rep.Result.FinishReason)
		}
		c := rep.Calls[0]
		if !strings.HasPrefix(c.ID, "tooluse_mock") || c.Name == "" || !json.Valid(c.Arguments) || rep.Result.FinishReason != "tool_use" {
			t.Errorf("item %d: call %+v, finish %q: want the toolUse block's id, name and input, and tool_use", i, c, rep.Result.FinishReason)
		}
		if c.Name == "search" && strings.Contains(string(c.Arguments), `{"query":"Look up thing `) {
			filled++
		}
	}
	if filled < 10 {
		t.Errorf("%d of 20 first steps called search with the filled schema as its input, want most (a few slip)", filled)
	}
}

// An agent item runs to its final answer on Bedrock's wire through the
// AWS SDK, every request signed and checked: the mock's agent model calls
// the tools, slips, reads the toolResult blocks and answers.
func TestAnAgentItemRunsOnBedrockThroughTheSDK(t *testing.T) {
	awsTestCredentials(t)
	url, _ := signedMock(t)
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelAgent, Prompt: "Look up {{.q}}"})
	runAgent(t, tk)
}

// runAgent runs 30 agent items over model and checks each ends with the
// echo, some took steps, and the mock's slips came back as errors.
func runAgent(t *testing.T, model agent.Model) {
	t.Helper()
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

// An agent whose answer has a schema sends it as the tool output, last
// beside the agent's tools at the model's choice (auto), and the model's
// call of it is the final answer: its input is the output. A final answer
// in text (the mock's slip) is invalid, the feedback naming the tool, so
// that heal re-asks. Before, Next refused bedrock under a schema ("the
// schema's structured output is a tool the model must call").
func TestAnAgentsSchemaIsTheOutputToolBesideItsTools(t *testing.T) {
	awsTestCredentials(t)
	url, last := signedMock(t)
	tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelAgent, Prompt: "Look up {{.q}}", Output: llm.OutputJSON,
		Schema: json.RawMessage(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}},"additionalProperties":false}`)})
	schema := json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)
	run := task.Func(func(context.Context, task.Item) (task.Result, error) {
		return task.Result{Output: json.RawMessage(`"found"`)}, nil
	})
	tool, err := agent.NewTool(agent.Def{Name: "search", Description: "finds things", Parameters: schema}, run, true)
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Model: tk, Tools: []*agent.Tool{tool}, MaxConsecutiveErrors: 5})
	if err != nil {
		t.Fatal(err)
	}
	answered, inText, steps := 0, 0, 0
	for i := range 40 {
		q := fmt.Sprintf("thing %d", i)
		res, err := a.Run(t.Context(), task.Item{Idx: i, Fields: map[string]any{"q": q}})
		steps += res.Agent.Steps
		switch {
		case err == nil:
			answered++
			if want := `{"answer":"Look up ` + q + `"}`; string(res.Output) != want {
				t.Errorf("item %d: output %s, want the output tool's input %s", i, res.Output, want)
			}
		case classify.Classify(err).Class == classify.Invalid && strings.Contains(err.Error(), `the tool "output" was not called: give the final answer by calling output`):
			inText++
		default:
			t.Errorf("item %d: %v (class %v), want the answer, or feedback that output was not called", i, err, classify.Classify(err).Class)
		}
	}
	if answered < 30 || inText == 0 || steps <= 40 {
		t.Errorf("%d items answered by the output tool, %d in text, %d steps over 40: want most answered, some slips, tools called first", answered, inText, steps)
	}
	want := `"toolConfig":{"toolChoice":{"auto":{}},"tools":[{"toolSpec":{"description":"finds things","inputSchema":{"json":{"properties":{"query":{"type":"string"}},"required":["query"],"type":"object"}},"name":"search"}},{"toolSpec":{"description":"Give the final answer`
	if body := last(); !strings.Contains(body, want) || !strings.Contains(body, `"name":"output"}}]}`) {
		t.Errorf("the request %s\nwant search, then output, at the model's choice: %s…", body, want)
	}
}

// The name package spec refuses for an agent's tool is the output tool's
// (llm.OutputTool): the two packages agree, so no user tool is ever sent
// beside the output tool under its name.
func TestTheSpecRefusesAToolNamedAsTheOutputTool(t *testing.T) {
	src := "task:\n  type: llm\n  provider: bedrock\n  model: m\n  region: us-east-1\n  prompt: 'Find {{.q}}'\n  tools:\n    - {name: " + llm.OutputTool + ", exec: {argv: [x]}}\nvalidate:\n  json_schema: {type: object}\n"
	_, err := spec.Parse("spec.yaml", []byte(src), t.TempDir(), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "task.tools[0].name: \""+llm.OutputTool+"\" is the name of the tool bedrock") {
		t.Errorf("error %v, want task.tools[0].name refused as the output tool's name", err)
	}
}

// An agent's final answer in text where the output tool was offered: JSON
// (a ```json fence too) is the answer, to be validated as any; anything
// else is invalid, its feedback naming the tool.
func TestAnAgentsTextAnswerUnderASchemaIsTakenWhenItIsJSON(t *testing.T) {
	awsTestCredentials(t)
	defs := []agent.Def{{Name: "search", Parameters: json.RawMessage(`{"type":"object"}`)}}
	for _, tt := range []struct {
		name, text, output string
	}{
		{"json", `{"answer":"in text"}`, `{"answer":"in text"}`},
		{"fenced json", "```json\n{\"answer\": \"fenced\"}\n```", `{"answer":"fenced"}`},
		{"prose", "The answer is in text.", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, url := bedrockMock(t, mock.Config{Answers: []string{tt.text}})
			tk := newTask(t, url, "us-east-1", llm.Config{Model: mock.ModelAgent, Prompt: "hi", Output: llm.OutputJSON,
				Schema: json.RawMessage(`{"type":"object","required":["answer"],"properties":{"answer":{"type":"string"}}}`)})
			rep, err := tk.Next(t.Context(), task.Item{}, defs, nil)
			switch {
			case tt.output != "" && (err != nil || string(rep.Result.Output) != tt.output):
				t.Errorf("output %s, error %v; want %s taken as the answer", rep.Result.Output, err, tt.output)
			case tt.output == "" && (classify.Classify(err).Class != classify.Invalid || !strings.Contains(fmt.Sprint(err), `the tool "output" was not called`)):
				t.Errorf("error %v, want invalid with feedback naming the output tool", err)
			}
		})
	}
}
