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
