package worker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/tenaxhq/tenax/engine"
)

// Settler is an engine.Operator attending a job that is told how a trip
// it was asked about was settled when the answer was not its own: another
// operator answered first (TripSettled.By), or the breaker closed by
// itself. Its Trip has returned before. console.Prompter is one.
type Settler interface {
	Settled(q engine.SharedTrip, s engine.TripSettled)
}

// OperatorName is who answers a breaker from this process, as other
// operators are told: what, on which host, which process.
func OperatorName(what string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "an unknown host"
	}
	return fmt.Sprintf("%s on %s (pid %d)", what, host, os.Getpid())
}

// Attend asks op each trip of job jobID's shared breaker (on_trip:
// prompt) until ctx ends, as a TripReport whose Shared holds the question
// as the worker that tripped wrote it, and writes op's answers as the
// operator's decision, as `tenax breaker continue|abort` does, by by. The
// first answer wins: when another operator answers first, or the breaker
// closes, the question is taken back from op (Trip's context ends) and
// op, when it is a Settler, is told how it was settled. TripNoAnswer, or
// an answer after Trip's context ended, is no answer: tenax breaker can
// still answer.
//
// When the job's spec sets checkin_every N, Attend also holds a check-in
// after every N items finished from now on, by any worker: it pauses the
// job's queue, waits until the items the workers had taken are recorded,
// and asks op (CheckIn). Go on resumes the queue; abort stops the job on
// every worker (Stop), its items pending until `tenax resume`.
func (c *Client) Attend(ctx context.Context, jobID, by string, op engine.Operator) error {
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
	// pollEvery, set by tests of the notifications, replaces Serve's
	// ticks.
	pollEvery time.Duration
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
func (a *Attendance) Serve(ctx context.Context, by string, op engine.Operator) error {
	c, jobID, checkins := a.c, a.jobID, a.checkins
	if checkins != nil {
		defer func() {
			ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			checkins.close(ctx)
		}()
	}
	// The breaker's row is read as its changes are announced (a trip,
	// an answer elsewhere), and at each tick: the attended mark, the
	// check-ins (whose count and drain no row announces) and the safety
	// net of a notification lost with its connection.
	lctx, stopListening := context.WithCancel(ctx)
	changes := c.listenJob(lctx, jobID)
	defer func() {
		stopListening()
		<-changes.done
	}()
	t := time.NewTicker(a.tick(checkins != nil, changes))
	defer t.Stop()
	asked := 0 // the trip asked about last
	for {
		changed := changes.next()
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			c.attend(ctx, jobID)
			if checkins != nil {
				if err := checkins.step(ctx, by, op); err != nil {
					return err
				}
			}
			t.Reset(a.tick(checkins != nil, changes))
		case <-changed:
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
		q := engine.SharedTrip{JobID: jobID, Trip: b.Trips, Owner: b.Owner, Summary: b.Summary, Failures: b.Failures}
		if err := c.ask(ctx, changes, q, by, op); err != nil {
			return err
		}
	}
}

// attended is how long an attending terminal's mark speaks for it: a
// trip after that, with on_trip unset, finds nobody to ask and aborts.
const attended = 5 * time.Second

// attendMarkEvery is how often an attending terminal that listens, and
// holds no check-ins, marks the job attended and reads its breaker's row
// anyway: well within attended.
const attendMarkEvery = time.Second

// tick is how often Serve ticks: every sharedPollInterval while it holds
// check-ins (their count and the drain of the items taken announce
// nothing) or does not listen, else every attendMarkEvery; a test's
// pollEvery, when set, replaces both.
func (a *Attendance) tick(checkins bool, changes *jobNews) time.Duration {
	switch {
	case a.pollEvery > 0:
		return a.pollEvery
	case checkins || !changes.listening.Load():
		return sharedPollInterval
	}
	return attendMarkEvery
}

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
func (c *Client) ask(ctx context.Context, changes *jobNews, q engine.SharedTrip, by string, op engine.Operator) error {
	type reply struct {
		d  Decision
		ok bool
	}
	qctx, cancel := context.WithCancel(ctx)
	defer cancel()
	replies := make(chan reply, 1)
	go func() {
		d := op.Trip(qctx, engine.TripReport{Shared: &q})
		switch {
		case qctx.Err() != nil || d == engine.TripNoAnswer:
			// Nobody answered here: tenax breaker continue|abort still can.
			replies <- reply{}
		case d == engine.TripContinue:
			replies <- reply{Continue, true}
		default:
			replies <- reply{Abort, true}
		}
	}()
	// A safety net beside the announcements: every sharedSafetyInterval
	// while listening, else every sharedPollInterval.
	t := time.NewTimer(changes.safety())
	defer t.Stop()
	for {
		changed := changes.next()
		select {
		case r := <-replies:
			if !r.ok {
				return nil
			}
			err := c.DecideTrip(ctx, q.JobID, q.Trip, r.d, by)
			var ae *AnsweredError
			switch {
			case errors.As(err, &ae):
				settled(op, q, answered(ae.Decision, ae.By))
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
		case <-changed:
		}
		t.Reset(changes.safety())
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
func (c *Client) settled(ctx context.Context, q engine.SharedTrip, op engine.Operator) {
	b, err := c.breaker(ctx, q.JobID)
	if err != nil {
		if ctx.Err() != nil {
			// The operator stopped attending: as in ask, nothing is told.
			return
		}
		// TripSettled{} would say the breaker closed without an answer:
		// a guess presented as the truth.
		settled(op, q, engine.TripSettled{ReadErr: err})
		return
	}
	if b.Trips != q.Trip {
		// Telling this as "closed without an answer" was untrue: the
		// trip was settled, and the breaker is open again.
		settled(op, q, engine.TripSettled{TrippedAgain: b.Trips})
		return
	}
	settled(op, q, answered(Decision(b.Decision), b.DecidedBy))
}

// settled tells op, when it is a Settler, how q was settled.
func settled(op engine.Operator, q engine.SharedTrip, s engine.TripSettled) {
	if st, ok := op.(Settler); ok {
		st.Settled(q, s)
	}
}

// answered is a trip settled by d, by by; no decision ("") is a breaker
// that closed without an answer.
func answered(d Decision, by string) engine.TripSettled {
	switch d {
	case Continue:
		return engine.TripSettled{Answered: true, Decision: engine.TripContinue, By: by}
	case Abort:
		return engine.TripSettled{Answered: true, Decision: engine.TripAbortRun, By: by}
	}
	return engine.TripSettled{}
}
