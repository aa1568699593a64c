package worker

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"

	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
)

// OperatorName is who answers a breaker from this process, as other
// operators are told: what, on which host, which process.
func OperatorName(what string) string {
	host, err := os.Hostname()
	if err != nil {
		host = "an unknown host"
	}
	return fmt.Sprintf("%s on %s (pid %d)", what, host, os.Getpid())
}

// TerminalOperator asks an attached run's terminal the questions of the
// job's shared breaker and its check-ins, with the single-process prompt,
// and tells it how a question it did not answer was settled.
type TerminalOperator struct {
	prompter *console.Prompter
	out      io.Writer
	asking   atomic.Bool
}

// NewTerminalOperator asks with p and writes what it tells to out.
func NewTerminalOperator(p *console.Prompter, out io.Writer) *TerminalOperator {
	return &TerminalOperator{prompter: p, out: out}
}

// Asking reports whether a question is on screen, so that progress lines
// hold off until it is answered.
func (o *TerminalOperator) Asking() bool { return o.asking.Load() }

// Ask puts the trip to the terminal and waits for its answer.
func (o *TerminalOperator) Ask(ctx context.Context, q Question) (Decision, bool) {
	o.asking.Store(true)
	defer o.asking.Store(false)
	fmt.Fprintf(o.out, "\ntenax: job %s: the circuit breaker tripped on worker %s; every worker holds the job's items until you answer (here, or tenax breaker continue|abort %s)\n", q.JobID, q.Owner, q.JobID)
	d := o.prompter.AskTrip(ctx, console.TripQuestion{Summary: q.Summary, Failures: q.Failures})
	if ctx.Err() != nil || d == engine.TripNoAnswer {
		// Nobody answered here: tenax breaker continue|abort still can.
		return "", false
	}
	if d == engine.TripContinue {
		return Continue, true
	}
	return Abort, true
}

// Settled tells the terminal how a question it did not answer ended.
func (o *TerminalOperator) Settled(q Question, a Answer) {
	if a.ReadErr != nil {
		fmt.Fprintf(o.out, "tenax: job %s: trip %d of the circuit breaker was answered elsewhere or closed by itself, but reading how failed: %v\n", q.JobID, q.Trip, a.ReadErr)
		return
	}
	if a.TrippedAgain != 0 {
		fmt.Fprintf(o.out, "tenax: job %s: trip %d of the circuit breaker was answered elsewhere (or closed by itself), and it has tripped again since (trip %d)\n", q.JobID, q.Trip, a.TrippedAgain)
		return
	}
	if a.Decision == "" {
		fmt.Fprintf(o.out, "tenax: job %s: the circuit breaker closed before an answer came from here\n", q.JobID)
		return
	}
	fmt.Fprintf(o.out, "tenax: job %s: answered elsewhere: %s, by %s\n", q.JobID, a.Decision, cmp.Or(a.By, "another operator"))
}

// CheckIn asks a check-in of the job with the single-process prompt.
func (o *TerminalOperator) CheckIn(ctx context.Context, c CheckIn) (goOn, ok bool) {
	o.asking.Store(true)
	defer o.asking.Store(false)
	fmt.Fprintf(o.out, "\ntenax: job %s: paused for a check-in; every worker holds the job's items until you answer\n", c.JobID)
	goOn = o.prompter.Checkin(ctx, c.Latest, engine.Stats{Done: c.Done, Total: c.Total, Failed: c.Failed})
	if ctx.Err() != nil {
		return false, false
	}
	return goOn, true
}
