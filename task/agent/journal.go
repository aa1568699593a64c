package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// StepLog keeps an agent's steps as they happen, per item: package
// store's StepLog, which every store's job offers.
type StepLog interface {
	// AppendSteps makes entries durable, in order, before it returns.
	AppendSteps(ctx context.Context, idx int, entries ...[]byte) error
	// Steps returns the item's entries, oldest first.
	Steps(ctx context.Context, idx int) ([][]byte, error)
	// StepsLocation names the log, for the record's transcript.
	StepsLocation() string
}

// The kinds of a journal entry.
const (
	// kindAnswer is a model's answer: its calls, or the final answer.
	kindAnswer = "answer"
	// kindStart marks a call's tool as started, before it runs: a start
	// with no result is a run the process died in.
	kindStart = "start"
	// kindResult is a call's outcome, as it went back to the model.
	kindResult = "result"
	// kindAsk marks a model call as sent, with store on (StoringModel):
	// an ask with no answer is a call the process died in, whose answer
	// the provider may hold.
	kindAsk = "ask"
)

// entry is one line of an item's journal in the StepLog.
type entry struct {
	Kind string `json:"kind"`
	// N is the item's transcript (task.Transcript.N), Conv its
	// conversation within it: 0 the first, k the k-th heal re-ask's.
	N    int `json:"n"`
	Conv int `json:"conv"`
	// Step numbers the model's answers from 1; Call is a call's place in
	// its step's answer (start, result).
	Step int  `json:"step"`
	Call *int `json:"call,omitempty"`

	// An answer's.
	Text         string          `json:"text,omitempty"`
	Calls        []loggedCall    `json:"calls,omitempty"`
	Output       json.RawMessage `json:"output,omitempty"`
	Err          *loggedError    `json:"error,omitempty"`
	Usage        *task.Usage     `json:"usage,omitempty"`
	CostUSD      float64         `json:"cost_usd,omitempty"`
	FinishReason string          `json:"finish_reason,omitempty"`

	// A result's.
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`

	// An ask's: the try of the step (Tags.Try) and when it was sent, in
	// Unix milliseconds.
	// Run is the run that sent it (Task's run): an unanswered ask of
	// another run is one whose process died with the call in flight.
	Try int    `json:"try,omitempty"`
	At  int64  `json:"at,omitempty"`
	Run string `json:"run,omitempty"`
}

// loggedCall is a Call in the journal: arguments as the model wrote
// them, which need not be JSON.
type loggedCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	// Signature (base64 in the JSON) and SignedBy are the Call's.
	Signature []byte `json:"signature,omitempty"`
	SignedBy  string `json:"signed_by,omitempty"`
}

// loggedError is a final answer's error: an answer the model gave whose
// output is unusable (invalid, refused, filtered), which a replay
// returns again rather than asking again.
type loggedError struct {
	Message string         `json:"message"`
	Class   classify.Class `json:"class"`
	// Invalid is a *task.OutputError: Output and Reason are its fields.
	Invalid bool   `json:"invalid,omitempty"`
	Output  string `json:"output,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// journal is one conversation of an item in the StepLog: what was
// recorded of it when the attempt began, and where new entries go.
type journal struct {
	log        StepLog
	idx        int
	n, conv    int
	answers    []*entry // by step - 1
	results    map[[2]int]*entry
	started    map[[2]int]bool
	asks       map[int]*entry // the latest ask of each step
	reported   int            // answers whose usage this process already counted
	transcript *task.Transcript
}

// openJournal reads item's entries and picks its conversation: the
// latest transcript unless spent says a record already closed it (the
// item is run again after a failure: a new transcript), and in it the
// conversation of the item's heal re-ask.
func (t *Task) openJournal(ctx context.Context, item task.Item) (*journal, error) {
	if t.log == nil {
		return nil, nil
	}
	raw, err := t.log.Steps(ctx, item.Idx)
	if err != nil {
		return nil, stepLogError(item.Idx, err)
	}
	entries := make([]*entry, 0, len(raw))
	latest := 0
	for i, b := range raw {
		e := &entry{}
		if err := json.Unmarshal(b, e); err != nil {
			return nil, stepLogError(item.Idx, fmt.Errorf("entry %d: %w", i+1, err))
		}
		entries = append(entries, e)
		latest = max(latest, e.N)
	}
	j := &journal{log: t.log, idx: item.Idx, n: max(latest, 1), results: map[[2]int]*entry{}, started: map[[2]int]bool{},
		asks: map[int]*entry{}}
	if t.spent != nil {
		if spent := t.spent(item.Idx); j.n <= spent {
			j.n = spent + 1
		}
	}
	if item.Feedback != nil {
		j.conv = item.Feedback.Attempt
	}
	for _, e := range entries {
		if e.N != j.n || e.Conv != j.conv {
			continue
		}
		switch e.Kind {
		case kindAnswer:
			if e.Step == len(j.answers)+1 {
				j.answers = append(j.answers, e)
			}
		case kindStart:
			if e.Call != nil {
				j.started[[2]int{e.Step, *e.Call}] = true
			}
		case kindResult:
			if e.Call != nil {
				j.results[[2]int{e.Step, *e.Call}] = e
			}
		case kindAsk:
			if last := j.asks[e.Step]; last == nil || e.Try > last.Try {
				j.asks[e.Step] = e
			}
		}
	}
	j.reported = t.reported(j.key())
	j.transcript = &task.Transcript{Log: t.log.StepsLocation(), Idx: item.Idx, N: j.n}
	return j, nil
}

// conversation names a journal's conversation in Task.counted.
type conversation struct{ idx, n, conv int }

func (j *journal) key() conversation { return conversation{j.idx, j.n, j.conv} }

// recorded returns step's answer as the journal holds it, and whether it
// does.
func (j *journal) recorded(step int) (Reply, error, bool) {
	if j == nil || step > len(j.answers) {
		return Reply{}, nil, false
	}
	e := j.answers[step-1]
	rep := Reply{Text: e.Text, Result: task.Result{Output: e.Output, CostUSD: e.CostUSD, FinishReason: e.FinishReason}}
	if e.Usage != nil {
		rep.Result.Usage = *e.Usage
	}
	for _, c := range e.Calls {
		rep.Calls = append(rep.Calls, Call{ID: c.ID, Name: c.Name, Arguments: json.RawMessage(c.Arguments),
			Signature: c.Signature, SignedBy: c.SignedBy})
	}
	return rep, e.Err.replay(), true
}

// replay is the error a recorded final answer came with.
func (le *loggedError) replay() error {
	if le == nil {
		return nil
	}
	if le.Invalid {
		return &task.OutputError{Output: le.Output, Err: errors.New(le.Reason)}
	}
	return classify.WithClass(errors.New(le.Message), le.Class, "agent replay")
}

// answerEntry is rep, the model's answer of step, as the journal keeps
// it; err is the final answer's error, kept when the engine will not ask
// again for it (a retryable one, a paused turn, is asked again).
func (j *journal) answerEntry(step int, rep Reply, err error) (*entry, bool) {
	e := &entry{Kind: kindAnswer, N: j.n, Conv: j.conv, Step: step, Text: rep.Text, Output: rep.Result.Output,
		CostUSD: rep.Result.CostUSD, FinishReason: rep.Result.FinishReason}
	if u := rep.Result.Usage; u != (task.Usage{}) {
		e.Usage = &u
	}
	for _, c := range rep.Calls {
		e.Calls = append(e.Calls, loggedCall{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments),
			Signature: c.Signature, SignedBy: c.SignedBy})
	}
	if err == nil {
		return e, true
	}
	d := classify.Classify(err)
	if oe, ok := errors.AsType[*task.OutputError](err); ok {
		e.Err = &loggedError{Message: err.Error(), Class: d.Class, Invalid: true, Output: oe.Output, Reason: oe.Err.Error()}
		return e, true
	}
	if rep.Result.FinishReason == "" || d.Class == classify.Retryable {
		// No answer came (a provider's error), or one the engine asks
		// again for: nothing to replay.
		return nil, false
	}
	e.Err = &loggedError{Message: err.Error(), Class: d.Class}
	return e, true
}

// outcome returns call i of step's recorded result.
func (j *journal) outcome(step, i int) (Outcome, bool) {
	if j == nil {
		return Outcome{}, false
	}
	e, ok := j.results[[2]int{step, i}]
	if !ok {
		return Outcome{}, false
	}
	return Outcome{Content: e.Content, IsError: e.IsError}, true
}

func (j *journal) wasStarted(step, i int) bool { return j != nil && j.started[[2]int{step, i}] }

func (j *journal) startEntry(step, i int) *entry {
	return &entry{Kind: kindStart, N: j.n, Conv: j.conv, Step: step, Call: &i}
}

func (j *journal) askEntry(step, try int, run string, at time.Time) *entry {
	return &entry{Kind: kindAsk, N: j.n, Conv: j.conv, Step: step, Try: try, At: at.UnixMilli(), Run: run}
}

func (j *journal) resultEntry(step, i int, o Outcome) *entry {
	return &entry{Kind: kindResult, N: j.n, Conv: j.conv, Step: step, Call: &i, Content: o.Content, IsError: o.IsError}
}

// append makes entries durable in the item's journal.
func (j *journal) append(ctx context.Context, entries ...*entry) error {
	if j == nil || len(entries) == 0 {
		return nil
	}
	raw := make([][]byte, len(entries))
	for i, e := range entries {
		b, err := json.Marshal(e)
		if err != nil {
			return stepLogError(j.idx, err)
		}
		raw[i] = b
	}
	if err := j.log.AppendSteps(ctx, j.idx, raw...); err != nil {
		return stepLogError(j.idx, err)
	}
	return nil
}

// stepLogError is a failure of the step log: tenax's own storage, not
// the item's, and no retry of the item helps, so it is fatal (it trips
// the breaker and stops the run; the steps recorded stay).
func stepLogError(idx int, err error) error {
	return classify.WithClass(fmt.Errorf("agent: the step log of item %d: %w", idx, err), classify.Fatal, "agent step log")
}

// InterruptedToolError fails an item whose tool had started when the
// process running it died, with no result recorded, and is not
// idempotent: running it again could do twice what it does once.
type InterruptedToolError struct {
	Tool   string
	Step   int
	CallID string
}

func (e *InterruptedToolError) Error() string {
	return fmt.Sprintf("agent: tool %q (step %d, call %s) had started when the run stopped and its result was not recorded; "+
		"it is not idempotent, so it is not run again: mark it `idempotent: true` if running it twice does no harm, "+
		"or re-run the item from its first step with `tenax resume --retry-failures`", e.Tool, e.Step, e.CallID)
}
