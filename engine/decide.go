package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// The per-item core: after each call, one item's state and the call's
// answer decide what happens next. Every driver asks the same question
// (the engine after each call, batch waves after each request's result)
// and does what the answer says with its own means (a sleep or the next
// wave, a record written now or at the wave's end), so the rules of
// docs/classes.md and docs/heal.md live here once:
//
//   - any call that worked resets the retry streak, a valid output and an
//     invalid one alike (the streak counts consecutive failed calls);
//   - an invalid output spends heal budget, never retry budget, and is
//     re-asked with feedback until the heal budget ends;
//   - a validator that cannot run (an error marked classify.Fatal) fails
//     the item: the setup is wrong, not the output;
//   - a retryable error is retried after the Retrier's delay (the
//     server's hint capped by retry.Policy.MaxHint, or the backoff), until
//     MaxAttempts failures in a row or the wait would pass MaxElapsed;
//   - a call the run canceled leaves the item pending; one canceled by
//     something else (the task's own context, a user's rule) fails it, so
//     that an item never vanishes into pending while the run goes on;
//   - any other error fails the item with its class.

// Rules are the settings of the per-item decisions that are not the
// retry policy (each item's Retrier carries that). One Rules value serves
// every item of a run; it is only read.
type Rules struct {
	// Heal bounds the re-asks of an item whose output is invalid.
	Heal heal.Budget
	// NoHeal fails an invalid output at once, without re-asking.
	NoHeal bool
	// Hints are matched against validation errors and added to feedback.
	Hints []heal.Hint
}

// State is one item's state across its calls: what the decisions read
// and move, and what its record counts. Retrier must be set (from
// retry.Policy.Start, or Continue for an item that spent calls before).
type State struct {
	// Retrier holds the retry streak and MaxElapsed's clock.
	Retrier *retry.Retrier
	// Tracker is the heal tracker, made at the first invalid output.
	Tracker *heal.Tracker
	// Calls counts the answers decided on; Generations those of calls
	// that worked, valid or not; Heals the re-asks decided (feedback is
	// numbered by them).
	Calls, Generations, Heals int
	// LastOutput is the last output, for a failure's record.
	LastOutput json.RawMessage
	// CacheHit says the last output was served from the cache (to the
	// first question or to a re-ask) and did not prove invalid: the
	// record's cache_hit.
	CacheHit bool
	// RateLimited counts the answers that were a provider's 429.
	RateLimited int
	// FirstKey is the response cache's key of the item's first question
	// (the request without feedback), once a call answered it: a healed
	// answer is remembered under it (Next.Remember).
	FirstKey string

	// Spent is what the item's calls cost and said: the record's usage,
	// cost and finish_reason (State.Account adds each call's).
	Spent
	// Started is when the item's first call was readied: its record's
	// duration counts from it, across waves and runs that carried it.
	Started time.Time
}

// Answer is one call's outcome as the decisions read it.
type Answer struct {
	// Result is the call's result; it is read when Err is nil.
	Result task.Result
	// Err is the call's error; a *task.OutputError is an output that
	// cannot be used (a call that worked).
	Err error
	// Invalid is the validator's verdict on Result.Output: nil when it
	// passed, or when Err is not nil.
	Invalid error
	// Canceled says the call's own context ended: the run canceled it.
	Canceled bool
	// Stopped says the run has stopped dispatching, so that a call
	// classified canceled was the run's doing. Read only when Err is
	// neither nil nor a *task.OutputError.
	Stopped bool
}

// Step is what an item does after a call.
type Step uint8

// The steps an item takes after a call.
const (
	// StepRecord records the item as succeeded with Answer.Result.Output.
	StepRecord Step = iota
	// StepRetry calls again after Next.Delay.
	StepRetry
	// StepReask calls again at once with Next.Feedback.
	StepReask
	// StepFail records the item as failed with Next.Err and
	// Next.Decision's class.
	StepFail
	// StepPending leaves the item without a record, for a resume.
	StepPending
)

var stepNames = [...]string{"record", "retry", "reask", "fail", "pending"}

func (s Step) String() string {
	if int(s) < len(stepNames) {
		return stepNames[s]
	}
	return fmt.Sprintf("Step(%d)", s)
}

// Next is the decision after a call.
type Next struct {
	Step Step
	// Delay is the wait before the retry (StepRetry).
	Delay time.Duration
	// Feedback is the re-ask's (StepReask).
	Feedback *task.Feedback
	// Err is the error retried (StepRetry), re-asked about (StepReask)
	// or recorded (StepFail).
	Err error
	// Cause names what is wrong, for the failure's fingerprint: Err
	// without the heal loop's reason for stopping.
	Cause error
	// Decision is Err's class and why.
	Decision classify.Decision
	// Attempt numbers the retry in its streak (StepRetry) or the re-ask
	// (StepReask).
	Attempt int
	// Reject says the output proved invalid after a call that worked
	// outright: a response cache that holds it (Result.CacheKey) should
	// forget it.
	Reject bool
	// Remember is, on a StepRecord after re-asks, the cache key of the
	// item's first question (State.FirstKey): the response cache should
	// store the healed output under it too, so that the next job asking
	// the same question is served the answer that passed, with no
	// re-ask and no bad answer run again. "" otherwise.
	Remember string
}

// Decide moves s by one call's answer a and says what the item does next.
// It takes no lock and does no I/O: the validator ran before (a.Invalid),
// and the caller writes records, waits and emits events. It calls the
// retry policy's OnRetry hook when it decides to retry.
func (r *Rules) Decide(s *State, a Answer) Next {
	s.Calls++
	if a.Err == nil {
		return r.generated(s, a)
	}
	// errors.AsType, unlike errors.As, moves no variable to the heap on
	// every call, the successful ones included.
	if outErr, ok := errors.AsType[*task.OutputError](a.Err); ok {
		// The call worked; its output is unusable. It resets the retry
		// streak and spends heal budget, as docs/heal.md ("The loop") requires.
		s.Retrier.Success()
		s.Generations++
		s.LastOutput = mustJSONString(outErr.Output)
		s.CacheHit = false
		if s.Heals == 0 && a.Result.CacheKey != "" {
			s.FirstKey = a.Result.CacheKey
		}
		return r.reask(s, outErr.Output, outErr.Err)
	}
	if isRateLimit(a.Err) {
		s.RateLimited++
	}
	delay, d, stop := s.Retrier.Failure(a.Err)
	if a.Canceled || (d.Class == classify.Canceled && a.Stopped) {
		return Next{Step: StepPending, Err: a.Err, Decision: d}
	}
	if d.Class == classify.Canceled {
		// Canceled, but not by the run: the item must not vanish into
		// pending while the run goes on, so it fails as this item's
		// problem.
		return Next{Step: StepFail, Err: a.Err, Cause: a.Err, Decision: classify.Decision{Class: classify.Item, Reason: "canceled, but not by the run: " + d.Reason}}
	}
	if stop != nil {
		return Next{Step: StepFail, Err: a.Err, Cause: a.Err, Decision: d}
	}
	return Next{Step: StepRetry, Delay: delay, Err: a.Err, Decision: d, Attempt: s.Retrier.Consecutive()}
}

// generated decides on an output: record it, or re-ask, or fail.
func (r *Rules) generated(s *State, a Answer) Next {
	s.Retrier.Success()
	s.Generations++
	s.LastOutput = a.Result.Output
	// Whether the output to record came from the cache: a re-ask served
	// from it is a hit as much as a first question.
	s.CacheHit = a.Result.CacheHit
	if s.Heals == 0 && a.Result.CacheKey != "" {
		s.FirstKey = a.Result.CacheKey
	}
	if a.Invalid == nil {
		if s.Tracker != nil {
			// A healed item keeps what was healed: the output passed, so
			// every error the re-asks tracked is now fixed.
			s.Tracker.Observe(nil)
		}
		if s.Heals > 0 && s.FirstKey != "" && a.Result.CacheKey != s.FirstKey {
			return Next{Step: StepRecord, Remember: s.FirstKey}
		}
		return Next{Step: StepRecord}
	}
	if a.Canceled {
		// The validator was cut short by the run: its verdict says
		// nothing about the output.
		return Next{Step: StepPending, Err: a.Invalid}
	}
	if marked, ok := errors.AsType[*classify.Error](a.Invalid); ok && marked.Class == classify.Fatal {
		// The validator itself cannot run: the setup is wrong. Other
		// validation errors are invalid whatever their words say.
		return Next{Step: StepFail, Err: a.Invalid, Cause: a.Invalid, Decision: classify.Decision{Class: classify.Fatal, Reason: marked.Reason}}
	}
	s.CacheHit = false
	n := r.reask(s, heal.OutputText(a.Result.Output), a.Invalid)
	n.Reject = true
	return n
}

// reask spends heal budget on an invalid output and builds the re-ask's
// feedback, or fails the item once the budget is spent.
func (r *Rules) reask(s *State, output string, verr error) Next {
	if r.NoHeal {
		return Next{Step: StepFail, Err: verr, Cause: verr, Decision: classify.Decision{Class: classify.Invalid, Reason: "heal disabled"}}
	}
	if s.Tracker == nil {
		s.Tracker = heal.NewTracker(r.Heal)
	}
	msg, stop := heal.Reask(s.Tracker, heal.ValidationCheck, output, verr, r.Hints)
	if stop != nil {
		return Next{Step: StepFail, Err: fmt.Errorf("%w (%v)", verr, stop), Cause: verr, Decision: classify.Decision{Class: classify.Invalid, Reason: heal.StopReason(stop)}}
	}
	s.Heals++
	n := s.Heals
	return Next{
		Step:     StepReask,
		Feedback: &task.Feedback{PreviousOutput: output, Message: msg, Attempt: n},
		Err:      verr,
		Cause:    verr,
		Decision: classify.Decision{Class: classify.Invalid, Reason: "validation"},
		Attempt:  n,
	}
}

// isOutputError reports whether err is an output that cannot be used: a
// call that worked.
func isOutputError(err error) bool {
	_, ok := errors.AsType[*task.OutputError](err)
	return ok
}
