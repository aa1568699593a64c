package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Defaults of Config fields left zero.
const (
	DefaultMaxSteps             = 10
	DefaultMaxConsecutiveErrors = 3
	DefaultParallel             = 4
)

// Def is a tool as the model is told of it.
type Def struct {
	Name        string
	Description string
	// Parameters is the JSON Schema of the call's arguments.
	Parameters json.RawMessage
}

// Call is one tool call the model asked for.
type Call struct {
	// ID is the provider's id of the call, which its result must name.
	ID   string
	Name string
	// Arguments are the call's arguments as the model wrote them: JSON
	// that may not parse, or not match the tool's schema.
	Arguments json.RawMessage
}

// Outcome is a tool call's result as it goes back to the model.
type Outcome struct {
	CallID, Name string
	// Content is the tool's output, or the error fed back.
	Content string
	// IsError says Content is an error.
	IsError bool
}

// Step is one finished step of the conversation: the model's answer
// (its text and its calls) and the calls' outcomes, in the calls' order.
type Step struct {
	Text     string
	Calls    []Call
	Outcomes []Outcome
}

// Reply is one answer of the model. With no Calls it is the final
// answer, and Result.Output its output.
type Reply struct {
	Text  string
	Calls []Call
	// Result is the call's usage, cost, finish reason and quota, and for
	// a final answer its output.
	Result task.Result
}

// Model is the model of an agent: package task/llm's Task with tools.
type Model interface {
	// Next asks the model once for item, told of defs, with the steps so
	// far appended to the item's conversation. A final answer whose
	// output is unusable comes back as the llm task's error (a
	// *task.OutputError, classified invalid), beside its Reply.
	Next(ctx context.Context, item task.Item, defs []Def, steps []Step) (Reply, error)
}

// Config describes an agent task.
type Config struct {
	Model Model
	Tools []*Tool
	// MaxSteps bounds the model's answers per attempt; 0 means
	// DefaultMaxSteps. An attempt that reaches it with no final answer
	// fails the item.
	MaxSteps int
	// MaxConsecutiveErrors fails the item when this many steps in a row
	// fed errors back; 0 means DefaultMaxConsecutiveErrors.
	MaxConsecutiveErrors int
	// Parallel bounds the calls of one answer run at once; 0 means
	// DefaultParallel.
	Parallel int
	// Retry retries a run's retryable failure before the model sees it
	// (the job's retry policy).
	Retry retry.Policy
}

// Task runs agent items (task.Task). It is safe for concurrent use.
type Task struct {
	cfg   Config
	defs  []Def
	tools map[string]*Tool
	names string // the tools' names, for an unknown tool's feedback
}

// New checks cfg and builds the task.
func New(cfg Config) (*Task, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model")
	}
	if len(cfg.Tools) == 0 {
		return nil, errors.New("agent: no tools")
	}
	if cfg.MaxSteps < 0 || cfg.MaxConsecutiveErrors < 0 || cfg.Parallel < 0 {
		return nil, errors.New("agent: max_steps, max_consecutive_errors and parallel must not be negative")
	}
	t := &Task{cfg: cfg, tools: make(map[string]*Tool, len(cfg.Tools))}
	t.cfg.MaxSteps = cmpOr(cfg.MaxSteps, DefaultMaxSteps)
	t.cfg.MaxConsecutiveErrors = cmpOr(cfg.MaxConsecutiveErrors, DefaultMaxConsecutiveErrors)
	t.cfg.Parallel = cmpOr(cfg.Parallel, DefaultParallel)
	for _, tool := range cfg.Tools {
		if _, dup := t.tools[tool.def.Name]; dup {
			return nil, fmt.Errorf("agent: two tools are named %q", tool.def.Name)
		}
		t.tools[tool.def.Name] = tool
		t.defs = append(t.defs, tool.def)
	}
	t.names = strings.Join(slices.Sorted(maps.Keys(t.tools)), ", ")
	return t, nil
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Defs returns the tools as the model is told of them.
func (t *Task) Defs() []Def { return t.defs }

// loop is one attempt's conversation as it goes.
type loop struct {
	res         task.Result // every step's usage and cost, and the stats
	steps       []Step
	consecutive int
}

// Run runs one attempt of item's agent loop: model, tool calls, model,
// until a final answer, max_steps or max_consecutive_errors. The Result
// carries every step's usage and cost and the AgentStats, on failure too.
//
// Errors: the model's own (a provider error, invalid final output) as the
// llm task returns them; ctx's when it ends; no final answer within
// max_steps, or max_consecutive_errors steps in a row feeding errors
// back, marked classify.Item.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	l := &loop{res: task.Result{Agent: &task.AgentStats{}}}
	for {
		if l.res.Agent.Steps >= t.cfg.MaxSteps {
			return l.res, classify.WithClass(
				fmt.Errorf("agent: no final answer within max_steps %d", t.cfg.MaxSteps), classify.Item, "agent steps")
		}
		rep, err := t.cfg.Model.Next(ctx, item, t.defs, l.steps)
		l.account(rep.Result)
		if err != nil {
			l.res.Output = rep.Result.Output
			return l.res, err
		}
		if len(rep.Calls) == 0 {
			l.res.Output, l.res.CacheKey = rep.Result.Output, rep.Result.CacheKey
			return l.res, nil
		}
		step := Step{Text: rep.Text, Calls: rep.Calls, Outcomes: t.runCalls(ctx, item, rep.Calls)}
		if err := ctx.Err(); err != nil {
			return l.res, fmt.Errorf("agent: %w", err)
		}
		l.steps = append(l.steps, step)
		if err := l.count(step, t.cfg.MaxConsecutiveErrors); err != nil {
			return l.res, err
		}
	}
}

// account adds one model call to the attempt's result.
func (l *loop) account(r task.Result) {
	l.res.Agent.Steps++
	l.res.Usage = l.res.Usage.Add(r.Usage)
	l.res.CostUSD += r.CostUSD
	if r.FinishReason != "" {
		l.res.FinishReason = r.FinishReason
	}
	if r.Quota != nil {
		l.res.Quota = r.Quota
	}
}

// count records a finished step's calls and errors. Any step whose calls
// all succeeded resets the consecutive-error count — a recovery after
// errors too, which is the counter bug this loop's design comes from
// (TestConsecutiveErrorsCountFromTheLastRecovery).
func (l *loop) count(step Step, limit int) error {
	st := l.res.Agent
	failed := false
	var last string
	for i, o := range step.Outcomes {
		name := step.Calls[i].Name
		if st.ToolCalls == nil {
			st.ToolCalls = map[string]int{}
		}
		st.ToolCalls[name]++
		if !o.IsError {
			continue
		}
		failed = true
		if st.ToolErrors == nil {
			st.ToolErrors = map[string]int{}
		}
		st.ToolErrors[name]++
		st.ErrorsFedBack++
		last = name + ": " + o.Content
		if len(st.Errors) < task.MaxAgentErrors {
			st.Errors = append(st.Errors, cut(last, task.MaxAgentErrorBytes))
		}
	}
	if !failed {
		l.consecutive = 0
		return nil
	}
	l.consecutive++
	st.ConsecutiveErrorsPeak = max(st.ConsecutiveErrorsPeak, l.consecutive)
	if l.consecutive >= limit {
		return classify.WithClass(
			fmt.Errorf("agent: %d steps in a row fed errors back (max_consecutive_errors %d); the last: %s", l.consecutive, limit, cut(last, task.MaxAgentErrorBytes)),
			classify.Item, "agent errors")
	}
	return nil
}

// cut shortens s to at most n bytes and an ellipsis, dropping a rune the
// cut splits.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
