package spec

import (
	"errors"
	"strings"
	"testing"
)

const agentTask = "task:\n  type: llm\n  provider: mock\n  model: mock-agent\n  prompt: 'Find {{.q}}'\n"

func TestToolsParse(t *testing.T) {
	s := parse(t, agentTask+`  max_steps: 6
  max_consecutive_errors: 2
  tools:
    - name: grep
      description: searches the notes
      parameters: {type: object, properties: {pattern: {type: string}}, required: [pattern]}
      exec: {argv: [grep, -r, --, '{{.args.pattern}}', notes]}
      idempotent: true
    - name: page
      http: {url: 'http://127.0.0.1:9/{{.args.id}}'}
`, nil)
	tools := s.Task.Tools
	if len(tools) != 2 || tools[0].Name != "grep" || !tools[0].Idempotent || tools[0].Exec.Argv[3] != "{{.args.pattern}}" ||
		tools[1].HTTP.URL != "http://127.0.0.1:9/{{.args.id}}" || !strings.Contains(string(tools[0].Parameters.JSON), `"required":["pattern"]`) {
		t.Errorf("tools read as %+v", tools)
	}
	if s.Task.MaxSteps != 6 || s.Task.MaxConsecutiveErrors != 2 {
		t.Errorf("max_steps %d, max_consecutive_errors %d; want 6 and 2", s.Task.MaxSteps, s.Task.MaxConsecutiveErrors)
	}
}

func TestBadToolsAreReportedClearly(t *testing.T) {
	cases := []struct {
		name, tools, want string
	}{
		{"unknown key", "    - {name: a, exec: {argv: [x]}, paramters: {}}\n", `unknown key "paramters" in task.tools[0]`},
		{"missing name", "    - {exec: {argv: [x]}}\n", "task.tools[0].name: missing"},
		{"bad name", "    - {name: 'a b', exec: {argv: [x]}}\n", `task.tools[0].name: "a b": want letters`},
		{"duplicate names", "    - {name: a, exec: {argv: [x]}}\n    - {name: a, exec: {argv: [y]}}\n", `task.tools[1].name: "a" is also task.tools[0]'s name`},
		{"bad schema", "    - {name: a, exec: {argv: [x]}, parameters: {type: objekt}}\n", "task.tools[0].parameters: not a JSON Schema"},
		{"no runner", "    - {name: a}\n", "task.tools[0]: has nothing to run it"},
		{"two runners", "    - {name: a, exec: {argv: [x]}, http: {url: 'http://h'}}\n", "task.tools[0]: give exec or http, not both"},
		{"empty argv", "    - {name: a, exec: {argv: []}}\n", "task.tools[0].exec.argv: missing or empty"},
		{"unknown exec key", "    - {name: a, exec: {args: [x]}}\n", `unknown key "args" in task.tools[0].exec`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("spec.yaml", []byte(agentTask+"  tools:\n"+c.tools), "/specs", envOf(nil))
			var errs Errors
			if !errors.As(err, &errs) || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

func TestAgentLimitsWithoutToolsAreAMistake(t *testing.T) {
	_, err := Parse("spec.yaml", []byte(agentTask+"  max_steps: 4\n"), "/specs", envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "task.max_steps: applies to an llm task with tools only") {
		t.Errorf("error %v, want max_steps to apply with tools only", err)
	}
}

func TestToolsInBatchModeAreRefusedWithTheReason(t *testing.T) {
	_, err := Parse("spec.yaml", []byte(agentTask+"  mode: batch\n  tools:\n    - {name: a, exec: {argv: [x]}}\n"), "/specs", envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "task.mode: batch mode does not take tools") || !strings.Contains(err.Error(), "docs/batch.md") {
		t.Errorf("error %v, want task.mode's refusal naming docs/batch.md", err)
	}
}

func TestTheConversationBoundsKeysParse(t *testing.T) {
	s := parse(t, agentTask+"  max_tool_result_bytes: 4096\n  keep_whole_steps: 2\n  old_tool_result_bytes: 256\n  tools:\n    - {name: a, exec: {argv: [x]}}\n", nil)
	if s.Task.MaxToolResultBytes != 4096 || s.Task.KeepWholeSteps != 2 || s.Task.OldToolResultBytes != 256 {
		t.Errorf("read %d, %d, %d; want 4096, 2, 256", s.Task.MaxToolResultBytes, s.Task.KeepWholeSteps, s.Task.OldToolResultBytes)
	}
}

func TestBadConversationBoundsAreReportedClearly(t *testing.T) {
	cases := []struct{ name, keys, want string }{
		{"tiny result cut", "  max_tool_result_bytes: 10\n", "task.max_tool_result_bytes: must be at least 64 bytes"},
		{"negative old cut", "  old_tool_result_bytes: -1\n", "task.old_tool_result_bytes: must be at least 64 bytes"},
		{"negative steps", "  keep_whole_steps: -2\n", "task.keep_whole_steps: must be at least 1"},
		{"old longer than new", "  max_tool_result_bytes: 512\n  old_tool_result_bytes: 1024\n", "task.old_tool_result_bytes: 1024 is more than max_tool_result_bytes (512)"},
		{"old longer than the default", "  old_tool_result_bytes: 40000\n", "is more than max_tool_result_bytes (32768)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("spec.yaml", []byte(agentTask+c.keys+"  tools:\n    - {name: a, exec: {argv: [x]}}\n"), "/specs", envOf(nil))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	_, err := Parse("spec.yaml", []byte(agentTask+"  keep_whole_steps: 2\n"), "/specs", envOf(nil))
	if err == nil || !strings.Contains(err.Error(), "task.keep_whole_steps: applies to an llm task with tools only") {
		t.Errorf("keep_whole_steps without tools: error %v", err)
	}
}

// TestAnAgentRunsOnRoutesOfEveryProvider: bedrock, gemini and vertex
// take tools now (they were refused: "does not take tools yet").
func TestAnAgentRunsOnRoutesOfEveryProvider(t *testing.T) {
	src := `task:
  type: llm
  prompt: 'Find {{.q}}'
  tools:
    - {name: a, exec: {argv: [x]}}
routes:
  - {name: one, provider: openai, model: gpt-4o-mini, api_key: k}
  - {name: two, provider: gemini, model: gemini-2.5-flash, api_key: k}
  - {name: three, provider: bedrock, model: us.amazon.nova-lite-v1:0, region: us-east-1}
  - {name: four, provider: vertex, model: gemini-2.5-flash, region: us-central1}
`
	if _, err := Parse("spec.yaml", []byte(src), "/specs", envOf(nil)); err != nil {
		t.Errorf("routes of openai, gemini, bedrock and vertex for an agent: %v", err)
	}
	bedrockTask := "task:\n  type: llm\n  provider: bedrock\n  model: m\n  region: us-east-1\n  prompt: 'Find {{.q}}'\n  tools:\n    - {name: a, exec: {argv: [x]}}\n"
	if _, err := Parse("spec.yaml", []byte(bedrockTask), "/specs", envOf(nil)); err != nil {
		t.Errorf("an agent on bedrock: %v", err)
	}
}

// An agent with validate.json_schema runs on bedrock: the schema is sent
// as one more tool, output, beside the agent's. Before, the spec refused
// it ("bedrock asks for validate.json_schema's JSON with a tool the model
// must call").
func TestAnAgentWithASchemaIsTakenOnBedrock(t *testing.T) {
	src := `task:
  type: llm
  prompt: 'Find {{.q}}'
  tools:
    - {name: a, exec: {argv: [x]}}
validate:
  json_schema: {type: object}
routes:
  - {name: one, provider: openai, model: gpt-4o-mini, api_key: k}
  - {name: two, provider: bedrock, model: m, region: us-east-1}
`
	if _, err := Parse("spec.yaml", []byte(src), "/specs", envOf(nil)); err != nil {
		t.Errorf("an agent with a schema on a bedrock route: %v", err)
	}
}

// A tool named output would clash with the tool bedrock is sent the
// schema as: refused at its name, on the task's provider or a route's;
// without a schema, or with no bedrock anywhere, the name is free.
func TestAToolNamedOutputClashesWithBedrocksOutputTool(t *testing.T) {
	const agent = `task:
  type: llm
  prompt: 'Find {{.q}}'
  tools:
    - {name: a, exec: {argv: [x]}}
    - {name: output, exec: {argv: [y]}}
`
	const schema = "validate:\n  json_schema: {type: object}\n"
	const bedrockTask = "  provider: bedrock\n  model: m\n  region: us-east-1\n"
	const routes = "routes:\n  - {name: one, provider: openai, model: gpt-4o-mini, api_key: k}\n  - {name: two, provider: bedrock, model: m, region: us-east-1}\n"
	const openaiTask = "  provider: openai\n  model: gpt-4o-mini\n  api_key: k\n"
	for _, tt := range []struct {
		name, src, want string
	}{
		{"the task's provider", agent + bedrockTask + schema, `task.tools[1].name: "output" is the name of the tool bedrock (task.provider) is sent validate.json_schema's answer as`},
		{"a route's", agent + schema + routes, `task.tools[1].name: "output" is the name of the tool bedrock (routes[1].provider) is sent validate.json_schema's answer as`},
		{"no schema", agent + bedrockTask, ""},
		{"no bedrock", agent + openaiTask + schema, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("spec.yaml", []byte(tt.src), "/specs", envOf(nil))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("error %v, want the name output taken where no output tool is sent", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
