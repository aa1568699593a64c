package agent

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Defaults of Config fields left zero.
const (
	DefaultMaxSteps             = 10
	DefaultMaxConsecutiveErrors = 3
	DefaultParallel             = 4
	// The conversation's bound (Config.MaxResultBytes, KeepWholeSteps,
	// OldResultBytes; docs/agents.md, "The conversation's size").
	DefaultMaxResultBytes = 32 << 10
	DefaultKeepWholeSteps = 3
	DefaultOldResultBytes = 1 << 10
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
	// Signature is an opaque token the provider issued with the call
	// (Gemini 3's thoughtSignature) and wants back, unchanged, whenever
	// the call is sent again; nil for none. It is kept in the step log
	// with the call, so a resumed item sends it too.
	Signature []byte
	// SignedBy names who issued Signature (the provider's wire and model,
	// "gemini/gemini-3-pro-preview"): a step sent to another provider or
	// model is sent without it (docs/agents.md, "Signed calls").
	SignedBy string
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
	// MaxResultBytes cuts every tool result to this many bytes before it
	// is recorded and sent; 0 means DefaultMaxResultBytes.
	MaxResultBytes int
	// KeepWholeSteps is how many of the latest steps are sent with their
	// results whole; older steps' results are sent cut to OldResultBytes.
	// 0 means DefaultKeepWholeSteps and DefaultOldResultBytes.
	KeepWholeSteps, OldResultBytes int
}

// Task runs agent items (task.Task). It is safe for concurrent use.
type Task struct {
	cfg   Config
	defs  []Def
	tools map[string]*Tool
	names string // the tools' names, for an unknown tool's feedback

	// log keeps the items' steps (Durable); nil keeps none. spent is
	// the transcript of an idx's latest record, 0 for none.
	log   StepLog
	spent func(idx int) int
	// job names the job in a stored call's Tags (InJob).
	job string
	// run tells this run's ask marks from a dead one's (askStored): drawn
	// by Durable, where a map of the tries this process sent grew by one
	// entry per model call over the whole job.
	run string
	// counted holds, per conversation, the answers whose usage this
	// process reported already: an attempt that replays them after a
	// provider error does not count their tokens twice, while a resumed
	// process counts them once (the spend was real).
	// Tasks made by WithModel share it: a conversation moved to another
	// route is one conversation.
	acct *accounting
}

// accounting is the answers this process counted, per conversation.
type accounting struct {
	mu      sync.Mutex
	counted map[conversation]int
}

// New checks cfg and builds the task.
func New(cfg Config) (*Task, error) {
	if cfg.Model == nil {
		return nil, errors.New("agent: no model")
	}
	if len(cfg.Tools) == 0 {
		return nil, errors.New("agent: no tools")
	}
	if cfg.MaxSteps < 0 || cfg.MaxConsecutiveErrors < 0 || cfg.Parallel < 0 || cfg.MaxResultBytes < 0 || cfg.KeepWholeSteps < 0 || cfg.OldResultBytes < 0 {
		return nil, errors.New("agent: the limits must not be negative")
	}
	t := &Task{cfg: cfg, tools: make(map[string]*Tool, len(cfg.Tools)), acct: &accounting{}}
	t.cfg.MaxSteps = cmpOr(cfg.MaxSteps, DefaultMaxSteps)
	t.cfg.MaxConsecutiveErrors = cmpOr(cfg.MaxConsecutiveErrors, DefaultMaxConsecutiveErrors)
	t.cfg.Parallel = cmpOr(cfg.Parallel, DefaultParallel)
	t.cfg.MaxResultBytes = cmpOr(cfg.MaxResultBytes, DefaultMaxResultBytes)
	t.cfg.KeepWholeSteps = cmpOr(cfg.KeepWholeSteps, DefaultKeepWholeSteps)
	t.cfg.OldResultBytes = cmpOr(cfg.OldResultBytes, DefaultOldResultBytes)
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

// Durable returns a Task like t whose items keep their steps in log as
// they happen: each model answer, a mark before each tool runs, each
// tool's result. An attempt replays what its item's conversation
// recorded — after a provider error, or in a process resumed after a
// crash — and asks the model only for the steps after it. spent (nil for
// none) returns the transcript number (task.Transcript.N) of idx's
// latest record: a run that starts such an item again (a resume with
// --retry-failures) starts a new transcript rather than replaying the
// one that record closed.
func (t *Task) Durable(log StepLog, spent func(idx int) int) *Task {
	return &Task{cfg: t.cfg, defs: t.defs, tools: t.tools, names: t.names, log: log, spent: spent, job: t.job, acct: &accounting{},
		run: rand.Text()}
}

// InJob returns a Task like t whose stored model calls (StoringModel)
// name job, the job's id, in their Tags: two jobs' items of one idx are
// two items to the provider's lookup.
func (t *Task) InJob(job string) *Task {
	c := *t
	c.job = job
	return &c
}

// WithModel returns a Task like t — its tools, limits, step log and the
// answers it counted — whose items ask m: the task of one route of a run
// with routes. An item the engine moves to another route (an outage)
// goes on there at its next step: the steps recorded on the route it left
// are replayed to m in m's own wire format, not asked again, and their
// usage is not counted twice.
func (t *Task) WithModel(m Model) *Task {
	c := *t
	c.cfg.Model = m
	return &c
}

// WithRunners returns a Task like t — its limits, step log and the
// answers it counted, as WithModel's — whose tools run through wrap's
// runner for each: wrap gets a tool's runner (an exec or http task) and
// returns it, or a copy of it configured for the run (an exec task that
// records its process groups, so that a resumed run ends what a killed
// one left running).
func (t *Task) WithRunners(wrap func(task.Task) task.Task) *Task {
	c := *t
	c.tools = make(map[string]*Tool, len(t.tools))
	c.cfg.Tools = make([]*Tool, len(t.cfg.Tools))
	for i, tool := range t.cfg.Tools {
		w := *tool
		w.runner = wrap(tool.runner)
		c.cfg.Tools[i] = &w
		c.tools[w.def.Name] = &w
	}
	return &c
}

// Runners returns the tools' runners, in the spec's order.
func (t *Task) Runners() []task.Task {
	out := make([]task.Task, len(t.cfg.Tools))
	for i, tool := range t.cfg.Tools {
		out[i] = tool.runner
	}
	return out
}

// reported returns how many of c's answers this process counted.
func (t *Task) reported(c conversation) int {
	t.acct.mu.Lock()
	defer t.acct.mu.Unlock()
	return t.acct.counted[c]
}

// report notes that this process counted c's first n answers.
func (t *Task) report(c conversation, n int) {
	t.acct.mu.Lock()
	defer t.acct.mu.Unlock()
	if t.acct.counted == nil {
		t.acct.counted = map[conversation]int{}
	}
	t.acct.counted[c] = max(t.acct.counted[c], n)
}

// loop is one attempt's conversation as it goes.
type loop struct {
	res         task.Result // every step's usage and cost, and the stats
	steps       []Step
	consecutive int
	j           *journal // nil without a step log
	// marked says the latest answer is a fresh one, kept with a start
	// mark for each of its calls (answer): none of them has run yet.
	marked bool
}

// Run runs one attempt of item's agent loop: model, tool calls, model,
// until a final answer, max_steps or max_consecutive_errors. With a step
// log (Durable) the steps its conversation recorded are replayed, not
// asked again. The Result carries every step's usage and cost (a
// replayed step's once per process) and the AgentStats, on failure too.
//
// Errors: the model's own (a provider error, invalid final output) as the
// llm task returns them; ctx's when it ends; no final answer within
// max_steps, max_consecutive_errors steps in a row feeding errors back,
// or an *InterruptedToolError, marked classify.Item; the step log's
// failure, marked classify.Fatal.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	l := &loop{res: task.Result{Agent: &task.AgentStats{}}}
	j, err := t.openJournal(ctx, item)
	if err != nil {
		return l.res, err
	}
	if j != nil {
		l.j = j
		l.res.Agent.Transcript = j.transcript
		defer func() { t.report(j.key(), j.reported) }()
	}
	for {
		if l.res.Agent.Steps >= t.cfg.MaxSteps {
			return l.res, classify.WithClass(
				fmt.Errorf("agent: no final answer within max_steps %d", t.cfg.MaxSteps), classify.Item, "agent steps")
		}
		n := l.res.Agent.Steps + 1
		rep, err := t.answer(ctx, item, l, n)
		if err != nil {
			l.res.Output = rep.Result.Output
			return l.res, err
		}
		if len(rep.Calls) == 0 {
			l.res.Output, l.res.CacheKey = rep.Result.Output, rep.Result.CacheKey
			return l.res, nil
		}
		outs, err := t.runCalls(ctx, item, l.j, n, rep.Calls, l.marked)
		l.marked = false
		if ie, ok := errors.AsType[*InterruptedToolError](err); ok {
			l.res.Agent.FailedTool = ie.Tool
		}
		if err != nil {
			return l.res, err
		}
		if err := ctx.Err(); err != nil {
			return l.res, fmt.Errorf("agent: %w", err)
		}
		step := Step{Text: rep.Text, Calls: rep.Calls, Outcomes: outs}
		l.steps = append(l.steps, step)
		if err := l.count(step, t.cfg.MaxConsecutiveErrors); err != nil {
			return l.res, err
		}
	}
}

// answer is the model's answer of step n: the journal's when it holds
// it, else the model's, asked now and kept (with the final answer's
// error, when it is one to replay). A fresh answer is written and
// fsynced the moment it arrives, before its calls are judged or run: the
// provider billed it when it answered, and a kill before the fsync pays
// for it again on resume (docs/agents.md, "Durable steps"). Its calls'
// start marks go in the same append, one fsync before the tools run.
func (t *Task) answer(ctx context.Context, item task.Item, l *loop, n int) (Reply, error) {
	if rep, err, ok := l.j.recorded(n); ok {
		l.account(rep.Result, n > l.j.reported)
		l.j.reported = max(l.j.reported, n)
		return rep, err
	}
	if err := l.checkBudget(ctx); err != nil {
		return Reply{}, err
	}
	rep, err := t.ask(ctx, item, l, n)
	l.account(rep.Result, true)
	if l.j == nil {
		return rep, err
	}
	e, keep := l.j.answerEntry(n, rep, err)
	if !keep {
		return rep, err
	}
	l.j.reported = max(l.j.reported, n)
	entries := []*entry{e}
	if err == nil {
		for i := range rep.Calls {
			entries = append(entries, l.j.startEntry(n, i))
		}
		l.marked = len(rep.Calls) > 0
	}
	if aerr := l.j.append(ctx, entries...); aerr != nil {
		l.marked = false
		return rep, aerr
	}
	return rep, err
}

// ask asks the model for step n: stored under the call's tags, with an
// ask mark before it, when the model stores its calls and the item keeps
// a journal (askStored), else plainly.
func (t *Task) ask(ctx context.Context, item task.Item, l *loop, n int) (Reply, error) {
	if l.j != nil {
		if sm, timeout, ok := t.storing(); ok {
			return t.askStored(ctx, item, l, n, sm, timeout)
		}
	}
	return t.cfg.Model.Next(ctx, item, t.defs, t.bounded(l.steps))
}

// checkBudget asks the run's StepCheck (the budget) before a model call
// that follows another answer of the attempt, asked or replayed: the
// engine checked the budget before the attempt, not between its steps.
// The check's error ends the attempt as it is, and the steps so far stay
// recorded for a resume to replay.
func (l *loop) checkBudget(ctx context.Context) error {
	if l.res.Agent.Steps == 0 {
		return nil
	}
	check := task.StepCheckFrom(ctx)
	if check == nil {
		return nil
	}
	return check(ctx, l.res.Agent.Steps, l.res.Usage.Total(), l.res.CostUSD)
}

// account adds one model answer to the attempt's result: to its steps
// always, to its usage and cost when counted (not a replay of an answer
// this process counted already).
func (l *loop) account(r task.Result, counted bool) {
	l.res.Agent.Steps++
	if counted {
		l.res.Usage = l.res.Usage.Add(r.Usage)
		l.res.CostUSD += r.CostUSD
	}
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
	var last, lastTool string
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
		last, lastTool = name+": "+o.Content, name
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
		st.FailedTool = lastTool
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

// bounded is steps as the model is sent them: the latest KeepWholeSteps
// whole, each older step's results cut to OldResultBytes, so that a long
// conversation grows by a bounded amount per step rather than by its
// tools' outputs (docs/agents.md, "The conversation's size"). The rule
// depends only on the steps, so a replayed conversation is sent as it
// was.
func (t *Task) bounded(steps []Step) []Step {
	old := len(steps) - t.cfg.KeepWholeSteps
	if old <= 0 {
		return steps
	}
	out := slices.Clone(steps)
	for i := range old {
		var outs []Outcome
		for k, o := range out[i].Outcomes {
			if len(o.Content) <= t.cfg.OldResultBytes {
				continue
			}
			if outs == nil {
				outs = slices.Clone(out[i].Outcomes)
			}
			outs[k].Content = fmt.Sprintf("%s [cut: %d of %d bytes shown; the result of a step older than the last %d]",
				cut(o.Content, t.cfg.OldResultBytes), t.cfg.OldResultBytes, len(o.Content), t.cfg.KeepWholeSteps)
		}
		if outs != nil {
			out[i].Outcomes = outs
		}
	}
	return out
}
