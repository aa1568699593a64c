package agent

import (
	"cmp"
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

// runCalls runs the calls of step's answer, at most Parallel at once,
// and returns their outcomes in the calls' order. With a journal, a call
// whose result it holds is not run again, and each result goes in as it
// comes. marked says the answer is fresh and its calls' start marks went
// in with it (Task.answer); otherwise (a replayed answer) the marks of
// the calls still to run go in now, before any runs. A call whose tool
// had started with no result recorded (the process running it died)
// runs again only when the tool is idempotent; otherwise the item fails
// with an *InterruptedToolError.
func (t *Task) runCalls(ctx context.Context, item task.Item, j *journal, step int, calls []Call, marked bool) ([]Outcome, error) {
	out := make([]Outcome, len(calls))
	runs := make([]*prepared, len(calls))
	// judged are the results of calls that run nothing (an unknown tool,
	// bad arguments): a replay judges them again, so a fresh answer's go
	// in with the first tool result rather than in an fsync of their own.
	var marks, judged []*entry
	for i, c := range calls {
		if o, ok := j.outcome(step, i); ok {
			out[i] = Outcome{CallID: c.ID, Name: c.Name, Content: o.Content, IsError: o.IsError}
			continue
		}
		p := t.prepare(ctx, item, c)
		if p.tool == nil {
			out[i] = t.bound(p.outcome)
			if j != nil {
				judged = append(judged, j.resultEntry(step, i, out[i]))
			}
			continue
		}
		if !marked && j.wasStarted(step, i) && !p.tool.idempotent {
			return nil, classify.WithClass(&InterruptedToolError{Tool: c.Name, Step: step, CallID: c.ID}, classify.Item, "agent tool interrupted")
		}
		runs[i] = p
		if j != nil && !marked {
			marks = append(marks, j.startEntry(step, i))
		}
	}
	if !marked {
		marks, judged = append(marks, judged...), nil
	}
	if err := j.append(ctx, marks...); err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var keepErr error
	var keepMu sync.Mutex
	// keep appends e, and the judged results when no append took them yet.
	keep := func(e ...*entry) {
		keepMu.Lock()
		e, judged = append(judged, e...), nil
		keepMu.Unlock()
		if err := j.append(ctx, e...); err != nil {
			keepMu.Lock()
			keepErr = cmp.Or(keepErr, err)
			keepMu.Unlock()
		}
	}
	sem := make(chan struct{}, t.cfg.Parallel)
	for i, p := range runs {
		if p == nil {
			continue
		}
		wg.Go(func() {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				out[i] = Outcome{CallID: p.call.ID, Name: p.call.Name, Content: ctx.Err().Error(), IsError: true}
				return
			}
			defer func() { <-sem }()
			out[i] = t.bound(p.run(ctx, t.cfg.Retry))
			if j == nil || ctx.Err() != nil {
				// Nowhere to keep it, or cut short: not the tool's result.
				return
			}
			keep(j.resultEntry(step, i, out[i]))
		})
	}
	wg.Wait()
	if len(judged) > 0 {
		keep() // no tool ran, or none finished
	}
	return out, keepErr
}

// prepared is a call ready to run its tool, or, with no tool, the
// outcome that says why it cannot run.
type prepared struct {
	call    Call
	tool    *Tool
	item    task.Item // the item's fields and the call's arguments
	outcome Outcome
}

// bound cuts an outcome's content to MaxResultBytes.
func (t *Task) bound(o Outcome) Outcome {
	o.Content = cut(o.Content, t.cfg.MaxResultBytes)
	return o
}

// prepare readies one call, or says why it cannot run: an unknown tool,
// arguments that are not an object or fail the schema, each an error
// outcome for the model to read.
func (t *Task) prepare(ctx context.Context, item task.Item, c Call) *prepared {
	p := &prepared{call: c, outcome: Outcome{CallID: c.ID, Name: c.Name, IsError: true}}
	tool, ok := t.tools[c.Name]
	if !ok {
		p.outcome.Content = fmt.Sprintf("unknown tool %q: the tools are %s", c.Name, t.names)
		return p
	}
	raw := c.Arguments
	if len(strings.TrimSpace(string(raw))) == 0 {
		raw = json.RawMessage(`{}`)
	}
	var args map[string]any
	if err := json.Unmarshal(raw, &args); err != nil {
		p.outcome.Content = fmt.Sprintf("the arguments are not a JSON object: %v", err)
		return p
	}
	if err := tool.schema.Validate(ctx, raw); err != nil {
		p.outcome.Content = "the arguments do not match the tool's schema: " + err.Error()
		return p
	}
	fields := maps.Clone(item.Fields)
	if fields == nil {
		fields = map[string]any{}
	}
	fields[ArgsField] = args
	p.tool = tool
	p.item = task.Item{Idx: item.Idx, ID: item.ID, Raw: item.Raw, Fields: fields}
	return p
}

// run runs a prepared call's tool; every failure is the outcome's error,
// for the model to read, after the retries policy allows.
func (p *prepared) run(ctx context.Context, policy retry.Policy) Outcome {
	o := Outcome{CallID: p.call.ID, Name: p.call.Name, IsError: true}
	res, err := retry.DoValue(ctx, policy, func(ctx context.Context) (task.Result, error) {
		return p.tool.runner.Run(ctx, p.item)
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
