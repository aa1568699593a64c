package engine_test

import (
	"context"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// TestRouteStatsShowCallsInFlightAndToldAndLearnedLimits: while every
// call of a routed run is under way, each route's stats count its calls
// in flight (adding up to the run's); a route the spec told its limits
// reports them as told, one that was told none reports what it learned
// from the provider's headers; at the run's end nothing is in flight.
func TestRouteStatsShowCallsInFlightAndToldAndLearnedLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		answer := func(q *task.Quota) func(task.Item, int) (task.Result, error) {
			return func(task.Item, int) (task.Result, error) {
				<-release
				res, err := ok("x")
				res.Quota = q
				return res, err
			}
		}
		learned := &task.Quota{RequestsLimit: 3000, RequestsRemaining: 2990, TokensLimit: 90000, TokensRemaining: 89000}
		told := &routeTask{fn: answer(nil)}
		learner := &routeTask{fn: answer(learned)}
		cfg := engine.Config{Concurrency: 6, Retry: fastRetry, Routing: engine.RoutingLeastLoaded,
			Routes: []engine.Route{
				{Name: "told", Task: told, RequestsPerMinute: 6000, TokensPerMinute: 500000},
				{Name: "learner", Task: learner},
			}}
		e := engine.New(cfg, nil, newMemJob())
		done := make(chan engine.Summary)
		go func() {
			sum, err := e.Run(context.Background(), items(12))
			if err != nil {
				t.Errorf("Run: %v", err)
			}
			done <- sum
		}()
		synctest.Wait()
		st := e.Stats()
		if len(st.Routes) != 2 {
			t.Fatalf("route stats %+v, want two routes", st.Routes)
		}
		a, b := st.Routes[0], st.Routes[1]
		if a.InFlight+b.InFlight != 6 || a.InFlight == 0 || b.InFlight == 0 || st.InFlight != 6 {
			t.Errorf("in flight: told %d, learner %d, run %d; want 6 between both routes, as the run's", a.InFlight, b.InFlight, st.InFlight)
		}
		if a.RequestsPerMinute != 6000 || a.TokensPerMinute != 500000 || b.RequestsPerMinute != 0 || b.TokensPerMinute != 0 {
			t.Errorf("told limits: told %d rpm %d tpm, learner %d rpm %d tpm; want 6000 and 500000, then none",
				a.RequestsPerMinute, a.TokensPerMinute, b.RequestsPerMinute, b.TokensPerMinute)
		}
		if b.RequestsPerMinuteLearned != 0 {
			t.Errorf("the learner learned %d rpm before any answer", b.RequestsPerMinuteLearned)
		}
		close(release)
		sum := <-done
		if sum.Succeeded != 12 {
			t.Fatalf("%d succeeded, want 12", sum.Succeeded)
		}
		a, b = sum.Routes[0], sum.Routes[1]
		if a.InFlight != 0 || b.InFlight != 0 {
			t.Errorf("after the run, in flight: told %d, learner %d; want 0", a.InFlight, b.InFlight)
		}
		if b.RequestsPerMinuteLearned != 3000 || b.TokensPerMinuteLearned != 90000 {
			t.Errorf("the learner learned %d rpm %d tpm, want the headers' 3000 and 90000", b.RequestsPerMinuteLearned, b.TokensPerMinuteLearned)
		}
		if a.RequestsPerMinuteLearned != 0 || a.TokensPerMinuteLearned != 0 {
			t.Errorf("the told route learned %d rpm %d tpm; a told limit is not learned", a.RequestsPerMinuteLearned, a.TokensPerMinuteLearned)
		}
	})
}
