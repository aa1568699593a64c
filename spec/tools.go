package spec

import (
	"cmp"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/internal/lazyregexp"
	"github.com/tenaxhq/tenax/validate"
)

// Tool is one tool an llm task's model may call (task.tools): with tools
// the task runs as an agent (docs/agents.md). Exactly one of Exec and
// HTTP runs it, templated over the item's fields and the call's
// arguments (.args), never through a shell.
type Tool struct {
	// Name is what the model calls the tool by: letters, digits, _ and -,
	// at most 64.
	Name string `yaml:"name"`
	// Description tells the model what the tool does.
	Description string `yaml:"description"`
	// Parameters is the JSON Schema of the call's arguments, inline; unset
	// means any object.
	Parameters Object `yaml:"parameters"`
	// Exec runs the tool as a command.
	Exec *ToolExec `yaml:"exec"`
	// HTTP runs the tool as a request.
	HTTP *ToolHTTP `yaml:"http"`
	// Idempotent says a call may run twice with no harm: a call that had
	// started when its process died, with no result recorded, is run
	// again on resume only when it is set; otherwise the item fails
	// naming the tool. Default false, the safe side (docs/agents.md,
	// "Durable steps").
	Idempotent bool `yaml:"idempotent"`
}

// ToolExec is a tool's command, as an exec task's keys.
type ToolExec struct {
	Argv    []string          `yaml:"argv"`
	Stdin   string            `yaml:"stdin"`
	Env     map[string]string `yaml:"env"`
	Dir     string            `yaml:"dir"`
	Timeout time.Duration     `yaml:"timeout"`
}

// ToolHTTP is a tool's request, as an http task's keys.
type ToolHTTP struct {
	Method  string            `yaml:"method"`
	URL     string            `yaml:"url"`
	Headers map[string]string `yaml:"headers"`
	Body    string            `yaml:"body"`
	Timeout time.Duration     `yaml:"timeout"`
}

// toolName is what both providers accept as a tool's name.
var toolName = lazyregexp.New(`^[A-Za-z0-9_-]{1,64}$`)

// toolProviders are the providers an agent's tools are sent to.
var toolProviders = []string{"openai", "azure", "anthropic", "bedrock", "gemini", "vertex", "mock"}

// agentKeys are the task keys of an agent's limits: a spec error without
// tools.
var agentKeys = []string{"max_steps", "max_consecutive_errors", "max_tool_result_bytes", "keep_whole_steps", "old_tool_result_bytes"}

// minToolResultBytes is the least a tool result may be cut to: below it
// an error fed back (its first line names the tool and the failure) would
// not survive the cut.
const minToolResultBytes = 64

// checkConversationBound checks the keys of the conversation's bound
// (docs/agents.md, "The conversation's size").
func (d *decoder) checkConversationBound(t *Task) {
	for _, c := range []struct {
		key string
		v   int
	}{{"max_tool_result_bytes", t.MaxToolResultBytes}, {"old_tool_result_bytes", t.OldToolResultBytes}} {
		if c.v != 0 && c.v < minToolResultBytes {
			d.problem("task."+c.key, nil, "must be at least %d bytes (unset: the default), got %d", minToolResultBytes, c.v)
		}
	}
	if t.KeepWholeSteps < 0 {
		d.problem("task.keep_whole_steps", nil, "must be at least 1 (unset: 3), got %d", t.KeepWholeSteps)
	}
	if most := cmp.Or(t.MaxToolResultBytes, 32<<10); t.OldToolResultBytes > most {
		d.problem("task.old_tool_result_bytes", nil, "%d is more than max_tool_result_bytes (%d): an old step's results are cut shorter than a new one's, not longer", t.OldToolResultBytes, most)
	}
}

// checkTools checks task.tools and the agent's limits.
func (d *decoder) checkTools(t *Task) {
	if len(t.Tools) == 0 {
		for _, k := range agentKeys {
			if d.isSet("task." + k) {
				d.problem("task."+k, nil, "applies to an llm task with tools only")
			}
		}
		return
	}
	if t.MaxSteps < 0 {
		d.problem("task.max_steps", nil, "must be at least 1, got %d", t.MaxSteps)
	}
	if t.MaxConsecutiveErrors < 0 {
		d.problem("task.max_consecutive_errors", nil, "must be at least 1, got %d", t.MaxConsecutiveErrors)
	}
	d.checkConversationBound(t)
	seen := map[string]int{}
	for i, tool := range t.Tools {
		d.checkTool(fmt.Sprintf("task.tools[%d]", i), tool, seen, i)
	}
}

func (d *decoder) checkTool(p string, tool Tool, seen map[string]int, i int) {
	switch {
	case tool.Name == "":
		d.problem(p+".name", []string{p}, "missing (what the model calls the tool by)")
	case !toolName().MatchString(tool.Name):
		d.problem(p+".name", nil, "%s: want letters, digits, _ and -, at most 64", quote(tool.Name))
	default:
		if j, dup := seen[tool.Name]; dup {
			d.problem(p+".name", nil, "%s is also task.tools[%d]'s name", quote(tool.Name), j)
		}
		seen[tool.Name] = i
	}
	switch {
	case tool.Exec == nil && tool.HTTP == nil:
		d.problem(p, nil, "has nothing to run it: give exec (an argv) or http (a url)")
	case tool.Exec != nil && tool.HTTP != nil:
		d.problem(p, nil, "give exec or http, not both")
	case tool.Exec != nil && (len(tool.Exec.Argv) == 0 || tool.Exec.Argv[0] == ""):
		d.problem(p+".exec.argv", []string{p + ".exec"}, "missing or empty (a list: program, then arguments)")
	case tool.HTTP != nil && tool.HTTP.URL == "":
		d.problem(p+".http.url", []string{p + ".http"}, "missing")
	}
	if len(tool.Parameters.JSON) > 0 {
		if _, err := validate.JSONSchema(tool.Parameters.JSON, tool.Name+".parameters"); err != nil {
			d.problem(p+".parameters", nil, "not a JSON Schema: %v", err)
		}
	}
}

// outputTool is the name of the tool bedrock is sent a schema's
// structured output as (llm.OutputTool): beside an agent's tools, its
// call is the final answer.
const outputTool = "output"

// checkOutputToolName refuses an agent's tool named as the output tool
// where the output tool is sent beside it: with validate.json_schema on
// bedrock, the task's provider or a route's. Two tools of one name in
// toolConfig are refused by Converse, and a call of either would be
// ambiguous.
func (d *decoder) checkOutputToolName(s *Spec) {
	if !s.Validate.JSONSchema.IsSet() {
		return
	}
	where := ""
	if s.Task.Provider == "bedrock" {
		where = "task.provider"
	}
	for i, r := range s.Routes {
		if where == "" && r.Provider == "bedrock" {
			where = fmt.Sprintf("routes[%d].provider", i)
		}
	}
	if where == "" {
		return
	}
	for i, tool := range s.Task.Tools {
		if tool.Name == outputTool {
			d.problem(fmt.Sprintf("task.tools[%d].name", i), nil,
				"%s is the name of the tool bedrock (%s) is sent validate.json_schema's answer as, beside the agent's tools: rename this tool", quote(outputTool), where)
		}
	}
}
