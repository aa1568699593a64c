package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/validate"
)

// ArgsField is the name under which a tool's runner templates see the
// call's arguments, beside the item's fields: {{.args.path}}.
const ArgsField = "args"

// Tool is one tool an agent may call: what the model is told of it, the
// compiled schema of its arguments, and what runs it.
type Tool struct {
	def    Def
	schema *validate.Schema
	runner task.Task
	// idempotent says a call may run twice with no harm.
	idempotent bool
}

// NewTool compiles def's parameters schema and pairs it with runner, an
// exec or http task whose templates see the item's fields and the call's
// arguments as .args. Parameters "" means any object.
func NewTool(def Def, runner task.Task, idempotent bool) (*Tool, error) {
	if def.Name == "" {
		return nil, errors.New("agent: a tool has no name")
	}
	if runner == nil {
		return nil, fmt.Errorf("agent: tool %q has nothing to run it", def.Name)
	}
	if len(def.Parameters) == 0 {
		def.Parameters = json.RawMessage(`{"type":"object"}`)
	}
	s, err := validate.JSONSchema(def.Parameters, def.Name+".parameters.json")
	if err != nil {
		return nil, fmt.Errorf("agent: tool %q: %w", def.Name, err)
	}
	return &Tool{def: def, schema: s.Named("tool " + def.Name + "'s parameters"), runner: runner, idempotent: idempotent}, nil
}

// Idempotent reports whether a call of the tool may run twice with no harm.
func (t *Tool) Idempotent() bool { return t.idempotent }

// runCalls runs the calls of one answer, at most Parallel at once, and
// returns their outcomes in the calls' order.
func (t *Task) runCalls(ctx context.Context, item task.Item, calls []Call) []Outcome {
	out := make([]Outcome, len(calls))
	sem := make(chan struct{}, t.cfg.Parallel)
	var wg sync.WaitGroup
	for i, c := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = Outcome{CallID: c.ID, Name: c.Name, Content: ctx.Err().Error(), IsError: true}
				return
			}
			defer func() { <-sem }()
			out[i] = t.call(ctx, item, c)
		}()
	}
	wg.Wait()
	return out
}

// call runs one call, or says why it cannot run: every failure is the
// outcome's error, for the model to read.
func (t *Task) call(ctx context.Context, item task.Item, c Call) Outcome {
	o := Outcome{CallID: c.ID, Name: c.Name, IsError: true}
	tool, ok := t.tools[c.Name]
	if !ok {
		o.Content = fmt.Sprintf("unknown tool %q: the tools are %s", c.Name, t.names)
		return o
	}
	raw := c.Arguments
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage(`{}`)
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		o.Content = fmt.Sprintf("the arguments are not a JSON object: %v", err)
		return o
	}
	if err := tool.schema.Validate(ctx, raw); err != nil {
		o.Content = "the arguments do not match the tool's schema: " + err.Error()
		return o
	}
	fields := maps.Clone(item.Fields)
	if fields == nil {
		fields = map[string]any{}
	}
	fields[ArgsField] = args
	run := task.Item{Idx: item.Idx, ID: item.ID, Raw: item.Raw, Fields: fields}
	res, err := retry.DoValue(ctx, t.cfg.Retry, func(ctx context.Context) (task.Result, error) {
		return tool.runner.Run(ctx, run)
	})
	if err != nil {
		o.Content = runError(err)
		return o
	}
	o.Content, o.IsError = text(res.Output), false
	return o
}

// runError is what the model is told of a failed run: the error, and the
// end of a command's stderr, where programs say what went wrong.
func runError(err error) string {
	msg := err.Error()
	if d := classify.Describe(err); d.Stderr != "" && !strings.Contains(msg, d.Stderr) {
		msg += "\nstderr: " + cut(strings.TrimSpace(d.Stderr), 2000)
	}
	return msg
}

// text is a runner's output as the model reads it: a JSON string's text,
// any other JSON as it is.
func text(out json.RawMessage) string {
	var s string
	if json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}
