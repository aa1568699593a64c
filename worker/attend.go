package worker

import (
	"context"
	"errors"
	"time"
)

// Question is a job's shared breaker waiting for the operator's answer
// (on_trip: prompt), as the worker that tripped wrote it.
type Question struct {
	JobID string
	// Trip numbers the breaker's trips: each trip is a new question.
	Trip int
	// Owner is the worker whose breaker tripped.
	Owner string
	// Summary and Failures are what the single-process prompt shows
	// (console.TripQuestion): the breaker's summary, and each recent
	// failure in full, the one that tripped it first.
	Summary  string
	Failures []string
}

// Answer is how a question was settled.
type Answer struct {
	// Decision is "" when the breaker closed without an answer (its
	// probes succeeded, or the worker that tripped died), when it
	// tripped again since (TrippedAgain), or when how it was settled
	// could not be read (ReadErr).
	Decision Decision
	// By is who answered, as Decide was told.
	By string
	// TrippedAgain is the breaker's trip now when the question's trip
	// was settled elsewhere and the breaker tripped again before this
	// operator heard of it: the row holds the new trip, so how the old
	// one was settled is no longer known, only that it was. 0 otherwise.
	TrippedAgain int
	// ReadErr is why the breaker's row could not be read once the
	// question was taken back: the trip was settled, or the breaker
	// closed, but how is not known. nil otherwise.
	ReadErr error
}

// Operator is a person attached to a job who can answer its breaker's
// questions: the terminal of `tenax run SPEC --workers N`.
type Operator interface {
	// Ask asks q and returns the answer; ok is false when there is none
	// because ctx ended (the question was settled elsewhere, or the
	// operator stopped attending).
	Ask(ctx context.Context, q Question) (d Decision, ok bool)
	// Settled tells the operator how q was settled when the answer was
	// not theirs: another operator answered first (a.By), or the breaker
	// closed by itself. Ask has returned before.
	Settled(q Question, a Answer)
	// CheckIn shows a check-in (the spec's checkin_every) and reports
	// whether to go on; ok is false when there is no answer because ctx
	// ended.
	CheckIn(ctx context.Context, c CheckIn) (goOn, ok bool)
}

// Attend asks op each question of job jobID's shared breaker until ctx
// ends, and writes op's answers as the operator's decision, as
// `tenax breaker continue|abort` does, by by. The first answer wins:
// when another operator answers first, or the breaker closes, the
// question is taken back from op (Ask's context ends) and op is told how
// it was settled.
//
// When the job's spec sets checkin_every N, Attend also holds a check-in
// after every N items finished from now on, by any worker: it pauses the
// job's queue, waits until the items the workers had taken are recorded,
// and asks op (CheckIn). Go on resumes the queue; abort stops the job on
// every worker (Stop), its items pending until `tenax resume`.
func (c *Client) Attend(ctx context.Context, jobID, by string, op Operator) error {
	a, err := c.BeginAttending(ctx, jobID)
	if err != nil {
		return err
	}
	return a.Serve(ctx, by, op)
}

// Attendance is a terminal's attendance of a job, begun: the job is marked
// attended and its check-ins count from here.
type Attendance struct {
	c        *Client
	jobID    string
	checkins *checkins
}

// BeginAttending marks job jobID attended and starts its check-ins; Serve
// then asks the questions. A process that starts workers of its own
// begins attending first: check-ins count the items recorded after
// BeginAttending, and workers started before it could finish the first
// check-in's items unseen (a job of quick items ran to its end without a
// check-in).
func (c *Client) BeginAttending(ctx context.Context, jobID string) (*Attendance, error) {
	c.attend(ctx, jobID)
	checkins, err := c.newCheckins(ctx, jobID)
	if err != nil {
		return nil, err
	}
	return &Attendance{c: c, jobID: jobID, checkins: checkins}, nil
}

// Serve is Attend after BeginAttending: it asks op each question and
// holds each check-in until ctx ends.
func (a *Attendance) Serve(ctx context.Context, by string, op Operator) error {
	c, jobID, checkins := a.c, a.jobID, a.checkins
	if checkins != nil {
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			checkins.close(ctx)
		}()
	}
	t := time.NewTicker(sharedPollInterval)
	defer t.Stop()
	asked := 0 // the trip asked about last
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		c.attend(ctx, jobID)
		if checkins != nil {
			if err := checkins.step(ctx, by, op); err != nil {
				return err
			}
		}
		b, err := c.breaker(ctx, jobID)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		// A question without its summary is not written yet (the worker
		// that tripped writes it just after opening the breaker).
		if b.State != "open" || b.Action != "prompt" || b.Decision != "" || b.Summary == "" || b.Trips == asked {
			continue
		}
		asked = b.Trips
		q := Question{JobID: jobID, Trip: b.Trips, Owner: b.Owner, Summary: b.Summary, Failures: b.Failures}
		if err := c.ask(ctx, t, q, by, op); err != nil {
			return err
		}
	}
}

// attended is how long an attending terminal's mark speaks for it: a
// trip after that, with on_trip unset, finds nobody to ask and aborts.
const attended = 5 * time.Second

// attend marks job jobID as attended by a terminal now. A failed mark is
// only a missed beat: the next tick marks it again.
func (c *Client) attend(ctx context.Context, jobID string) {
	_, _ = c.pool.Exec(ctx, `INSERT INTO tenax_breakers (job_id, attended) VALUES ($1, now())
		ON CONFLICT (job_id) DO UPDATE SET attended = now()`, jobID)
}

// isAttended reports whether a terminal attended job jobID within
// attended.
func (c *Client) isAttended(ctx context.Context, jobID string) bool {
	var ok bool
	err := c.pool.QueryRow(ctx, `SELECT coalesce(attended > now() - $2::interval, false) FROM tenax_breakers WHERE job_id = $1`, jobID, attended).Scan(&ok)
	return err == nil && ok
}

// ask asks op one question, racing its answer against the breaker's row.
func (c *Client) ask(ctx context.Context, t *time.Ticker, q Question, by string, op Operator) error {
	type reply struct {
		d  Decision
		ok bool
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	replies := make(chan reply, 1)
	go func() {
		d, ok := op.Ask(qctx, q)
		replies <- reply{d, ok}
	}()
	for {
		select {
		case r := <-replies:
			if !r.ok {
				return nil
			}
			err := c.DecideTrip(ctx, q.JobID, q.Trip, r.d, by)
			var ae *AnsweredError
			switch {
			case errors.As(err, &ae):
				op.Settled(q, Answer{Decision: ae.Decision, By: ae.By})
			case errors.Is(err, ErrBreakerClosed), errors.Is(err, ErrTripSettled):
				c.settled(ctx, q, op)
			case err != nil && ctx.Err() == nil:
				return err
			}
			return nil
		case <-ctx.Done():
			cancel()
			<-replies
			return nil
		case <-t.C:
		}
		b, err := c.breaker(ctx, q.JobID)
		if err != nil || (b.State == "open" && b.Decision == "" && b.Trips == q.Trip) {
			continue
		}
		cancel()
		if r := <-replies; r.ok {
			// Answered here at the same moment: the database decides
			// whose answer came first.
			if err := c.DecideTrip(ctx, q.JobID, q.Trip, r.d, by); err == nil {
				return nil
			}
		}
		c.settled(ctx, q, op)
		return nil
	}
}

// settled tells op how q was settled, from the breaker's row.
func (c *Client) settled(ctx context.Context, q Question, op Operator) {
	b, err := c.breaker(ctx, q.JobID)
	if err != nil {
		if ctx.Err() != nil {
			// The operator stopped attending: as in ask, nothing is told.
			return
		}
		// Answer{} would say the breaker closed without an answer: a
		// guess presented as the truth.
		op.Settled(q, Answer{ReadErr: err})
		return
	}
	if b.Trips != q.Trip {
		// Telling this as "closed without an answer" was untrue: the
		// trip was settled, and the breaker is open again.
		op.Settled(q, Answer{TrippedAgain: b.Trips})
		return
	}
	op.Settled(q, Answer{Decision: Decision(b.Decision), By: b.DecidedBy})
}
