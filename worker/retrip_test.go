package worker_test

import (
	"context"
	"testing"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// TestAnAnswerAfterANewTripIsToldTheBreakerTrippedAgain: a terminal whose
// answer to trip 1 came after another operator had answered it and the
// breaker had tripped again was told the breaker closed without an answer
// (Answer{}). It is told the trip was settled and the breaker tripped
// again, and which trip it is on.
func TestAnAnswerAfterANewTripIsToldTheBreakerTrippedAgain(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	release := make(chan struct{})
	// Trip 1's answer comes only once the breaker tripped again; trip 2
	// is aborted, which ends the job.
	op := &operator{answer: func(_ context.Context, q worker.Question) (worker.Decision, bool) {
		if q.Trip == 1 {
			<-release
			return worker.Continue, true
		}
		return worker.Abort, true
	}}
	attend(t, c, e.JobID, "a slow terminal", op)
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the terminal to be asked trip 1", func() (bool, error) {
		asked, _ := op.seen()
		return len(asked) == 1, nil
	})
	if err := c.Decide(t.Context(), e.JobID, worker.Continue, "tenax breaker elsewhere"); err != nil {
		t.Fatalf("the first answer: %v", err)
	}
	var trips int
	waitFor(t, "the breaker to trip again", func() (bool, error) {
		p, err := c.Progress(t.Context(), e.JobID)
		trips = p.Breaker.Trips
		return trips >= 2, err
	})
	close(release)
	waitFor(t, "the terminal to be told how trip 1 was settled", func() (bool, error) {
		_, settled := op.seen()
		return len(settled) == 1, nil
	})
	if _, settled := op.seen(); settled[0].Decision != "" || settled[0].TrippedAgain < trips {
		t.Errorf("told %+v, want trip 1 settled and the breaker tripped again (trip %d or later)", settled[0], trips)
	}
	waitFor(t, "the job to be aborted at trip 2", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
}
