package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// waitingPrompter takes its time before it answers, and looks at the
// run's breaker meanwhile.
type waitingPrompter struct {
	e      *engine.Engine
	wait   time.Duration
	answer engine.TripDecision
	seen   []breaker.State
}

func (p *waitingPrompter) Trip(context.Context, engine.TripReport) engine.TripDecision {
	time.Sleep(p.wait)
	p.seen = append(p.seen, p.e.Stats().Breaker)
	return p.answer
}

func (p *waitingPrompter) CheckIn(context.Context, engine.CheckIn) bool { return true }

// The breaker showed half_open on the page, in the terminal and in
// /metrics while the run still waited for the operator: its reset timeout
// had passed, and reading its state turned it half-open, though nothing
// was let through before Continue.
func TestABreakerAwaitingTheOperatorReadsOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var states []breaker.State
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) { return task.Result{}, errFatal })
		p := &waitingPrompter{wait: 5 * time.Minute, answer: engine.TripAbortRun}
		e := engine.New(engine.Config{
			Concurrency: 1, Breaker: breaker.Settings{Threshold: 3, ResetTimeout: time.Second},
			OnTrip: engine.TripPrompt, Operator: p, Total: 10,
			OnEvent: func(ev engine.Event) {
				if ev.Kind == engine.BreakerChanged {
					mu.Lock()
					states = append(states, ev.State)
					mu.Unlock()
				}
			},
		}, tk, newMemJob())
		p.e = e
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.seen) != 1 || p.seen[0] != breaker.Open || s.Breaker != breaker.Open {
			t.Errorf("the breaker read %v while the operator was asked, %v at the end; want open", p.seen, s.Breaker)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, st := range states {
			if st == breaker.HalfOpen {
				t.Errorf("breaker events %v: half_open while waiting for the operator", states)
			}
		}
	})
}

// End of input at the breaker prompt was recorded as "aborted by the
// operator": nobody answered. The run stops as on abort, and says that.
func TestNoAnswerAtTheBreakerPromptIsNotTheOperatorsAbort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) { return task.Result{}, errFatal })
		p := &waitingPrompter{answer: engine.TripNoAnswer}
		e := engine.New(engine.Config{Concurrency: 1, Breaker: breaker.Settings{Threshold: 3}, OnTrip: engine.TripPrompt, Operator: p, Total: 10}, tk, newMemJob())
		p.e = e
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBreaker || !strings.Contains(s.StopDetail, "no operator answered") || strings.Contains(s.StopDetail, "by the operator") {
			t.Errorf("stop %s %q; want the breaker's stop, saying no operator answered", s.Stop, s.StopDetail)
		}
	})
}

// Rate and ETA counted the breaker's pause: right after Continue the page
// said 1.5 items/s and an ETA of 32 minutes for a run that needed two.
// The run's Stats say how long dispatch stood paused for the operator, so
// that a rate can leave it out.
func TestStatsTellHowLongTheOperatorPausedDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls sync.Map
		tk := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
			time.Sleep(time.Second)
			if _, again := calls.LoadOrStore(it.Idx, true); !again && it.Idx < 3 {
				return task.Result{}, errFatal
			}
			return ok("x")
		})
		p := &waitingPrompter{wait: 10 * time.Minute, answer: engine.TripContinue}
		e := engine.New(engine.Config{Concurrency: 1, Breaker: breaker.Settings{Threshold: 3}, OnTrip: engine.TripPrompt, Operator: p, Total: 10}, tk, newMemJob())
		p.e = e
		start := time.Now()
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.seen) != 1 {
			t.Fatalf("asked %d times; want 1", len(p.seen))
		}
		if s.Paused != 10*time.Minute || !s.PausedSince.IsZero() || s.Resumed.Sub(start) < 10*time.Minute {
			t.Errorf("paused %v, pause begun %v, resumed %v after the start; want 10m0s, none under way, after 10m", s.Paused, s.PausedSince, s.Resumed.Sub(start))
		}
		if open := time.Since(start) - s.Paused; open != 10*time.Second {
			t.Errorf("dispatch was open %v; want 10s (ten calls of a second)", open)
		}
	})
}
