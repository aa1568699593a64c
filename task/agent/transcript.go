package agent

import (
	"encoding/json"
	"fmt"

	"github.com/tenaxhq/tenax/task"
)

// TranscriptStep is one step of an item's transcript as its step log
// keeps it, for a reader (the console's item page): the model's answer,
// each call's result, and the consecutive-error count after it.
type TranscriptStep struct {
	// Conv is the conversation: 0 the first, k the k-th heal re-ask's.
	Conv int
	// Step numbers the model's answers from 1 within the conversation.
	Step int
	// Text is the answer's text beside its calls (or the final answer's).
	Text string
	// Calls are the tool calls the answer asked for, with their results.
	Calls []TranscriptCall
	// Final says the answer called no tool: Output is its output, and
	// Error the reason it was unusable (invalid, refused), if it was.
	Final  bool
	Output json.RawMessage
	Error  string
	Usage  task.Usage
	// CostUSD is the answer's cost, 0 when unpriced.
	CostUSD      float64
	FinishReason string
	// ConsecutiveErrors is the count toward max_consecutive_errors after
	// this step: one more than before when a result fed an error back, 0
	// when every call succeeded, unchanged while a call has no result.
	ConsecutiveErrors int
}

// TranscriptCall is one tool call of a step and its outcome.
type TranscriptCall struct {
	ID, Name string
	// Arguments are as the model wrote them (they need not be JSON).
	Arguments string
	// Started says the tool's run had begun (its start mark is in);
	// Done that its result is recorded: a call Started and not Done is
	// one the process died in (or is running now).
	Started, Done bool
	// Result is what went back to the model: the tool's output, or the
	// error fed back when IsError.
	Result  string
	IsError bool
}

// ReadTranscript reads an item's step log entries (as a StepLog's Steps
// returns them) and returns transcript n's steps, conversation by
// conversation; n 0 reads the latest transcript. It returns the
// transcript's number too (0 when the log holds none).
func ReadTranscript(raw [][]byte, n int) ([]TranscriptStep, int, error) {
	entries := make([]*entry, 0, len(raw))
	latest := 0
	for i, b := range raw {
		e := &entry{}
		if err := json.Unmarshal(b, e); err != nil {
			return nil, 0, fmt.Errorf("agent: the step log's entry %d: %w", i+1, err)
		}
		entries = append(entries, e)
		latest = max(latest, e.N)
	}
	if n == 0 {
		n = latest
	}
	var steps []TranscriptStep
	at := map[[2]int]int{} // conv, step → index in steps
	for _, e := range entries {
		if e.N != n {
			continue
		}
		k := [2]int{e.Conv, e.Step}
		if e.Kind == kindAnswer {
			if _, dup := at[k]; dup {
				continue // the journal keeps the first
			}
			at[k] = len(steps)
			steps = append(steps, answerStep(e))
			continue
		}
		i, ok := at[k]
		if !ok || e.Call == nil || *e.Call < 0 || *e.Call >= len(steps[i].Calls) {
			continue
		}
		c := &steps[i].Calls[*e.Call]
		switch e.Kind {
		case kindStart:
			c.Started = true
		case kindResult:
			c.Done, c.Result, c.IsError = true, e.Content, e.IsError
		}
	}
	countErrors(steps)
	return steps, n, nil
}

// answerStep is the step an answer entry opens.
func answerStep(e *entry) TranscriptStep {
	s := TranscriptStep{Conv: e.Conv, Step: e.Step, Text: e.Text, Final: len(e.Calls) == 0, Output: e.Output,
		CostUSD: e.CostUSD, FinishReason: e.FinishReason}
	if e.Usage != nil {
		s.Usage = *e.Usage
	}
	if e.Err != nil {
		s.Error = e.Err.Message
	}
	for _, c := range e.Calls {
		s.Calls = append(s.Calls, TranscriptCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return s
}

// countErrors sets each step's consecutive-error count as the loop
// counts it, conversation by conversation.
func countErrors(steps []TranscriptStep) {
	count, conv := 0, -1
	for i := range steps {
		s := &steps[i]
		if s.Conv != conv {
			count, conv = 0, s.Conv
		}
		if !s.Final {
			failed, done := false, true
			for _, c := range s.Calls {
				failed = failed || c.Done && c.IsError
				done = done && c.Done
			}
			switch {
			case failed:
				count++
			case done:
				count = 0
			}
		}
		s.ConsecutiveErrors = count
	}
}
