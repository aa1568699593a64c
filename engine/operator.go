package engine

import (
	"context"

	"github.com/tenaxhq/tenax/store"
)

// Operator is the person a run asks when its breaker trips with
// TripPrompt and at check-ins. There is one such interface for every
// mode: the engine asks it of its own breaker, and an attached `tenax run
// --workers N` asks it of a job's shared breaker and check-ins
// (worker.Attendance), so one terminal type (console.Prompter) and one
// page type (web.Prompter) serve both.
type Operator interface {
	// Trip shows the report and returns the operator's decision;
	// TripNoAnswer when nobody answered (the input ended). What it
	// returns once ctx has ended is not used.
	Trip(ctx context.Context, r TripReport) TripDecision
	// CheckIn shows the run's latest records and reports whether to go
	// on. What it returns once ctx has ended is not used.
	CheckIn(ctx context.Context, c CheckIn) bool
}

// TripDecision is the operator's answer to a tripped breaker.
type TripDecision uint8

const (
	// TripAbortRun saves the checkpoint and stops (exit 3).
	TripAbortRun TripDecision = iota
	// TripContinue resets the breaker and resumes dispatch.
	TripContinue
	// TripNoAnswer: nobody answered (the terminal's input ended). The run
	// stops as on abort (exit 3), recorded as the breaker's stop, not the
	// operator's.
	TripNoAnswer
)

// String is the decision as `tenax breaker continue|abort` spells it.
func (d TripDecision) String() string {
	switch d {
	case TripAbortRun:
		return "abort"
	case TripContinue:
		return "continue"
	}
	return "no answer"
}

// TripReport is what the operator sees when the breaker opens.
type TripReport struct {
	// Reason says why it opened: "5 consecutive failures".
	Reason string
	// Last is the failure that opened it.
	Last *Failure
	// Stats are the run's counters at the moment of the trip.
	Stats Stats
	// Shared is set when the breaker is a job's shared breaker on
	// workers: the worker that tripped it, maybe in another process,
	// rendered the question, and Reason, Last and Stats are unset.
	Shared *SharedTrip
}

// SharedTrip is a trip of a job's shared breaker as the worker that
// tripped it wrote it down, for an operator attending the job.
type SharedTrip struct {
	JobID string
	// Trip numbers the breaker's trips: each trip is a new question.
	Trip int
	// Owner is the worker whose breaker tripped.
	Owner string
	// Summary and Failures are what the terminal's prompt shows
	// (console.NewTripQuestion): the breaker's summary, and each recent
	// failure in full, the one that tripped it first.
	Summary  string
	Failures []string
}

// TripSettled is how a trip the operator was asked about was settled
// without their answer: another operator answered first, or the breaker
// closed by itself. Only a job's shared breaker is settled elsewhere; an
// operator that wants to be told implements
// Settled(SharedTrip, TripSettled) beside Operator.
type TripSettled struct {
	// Answered is true when another operator answered: Decision is their
	// answer, By who they are (as they named themselves). False when the
	// breaker closed without an answer (its probes succeeded, or the
	// worker that tripped died), when it tripped again since
	// (TrippedAgain), or when how it was settled could not be read
	// (ReadErr).
	Answered bool
	Decision TripDecision
	By       string
	// TrippedAgain is the breaker's trip now when the question's trip
	// was settled elsewhere and the breaker tripped again before this
	// operator heard of it: the breaker holds the new trip, so how the
	// old one was settled is no longer known, only that it was. 0
	// otherwise.
	TrippedAgain int
	// ReadErr is why the breaker could not be read once the question was
	// taken back: the trip was settled, or the breaker closed, but how is
	// not known. nil otherwise.
	ReadErr error
}

// CheckIn is a run paused after every CheckinEvery items, so that the
// operator sees its latest results before it spends more.
type CheckIn struct {
	// JobID is set when the check-in holds a job's workers (an attached
	// `tenax run --workers N`), empty for one engine's run.
	JobID string
	// Stats are the run's counters; for a job on workers, Done, Failed
	// and Total count the job's items, whichever worker recorded them.
	Stats Stats
	// Latest holds the most recently recorded results, oldest first.
	Latest []store.Record
}
