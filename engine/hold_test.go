package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// slowTask answers every call after a second of (fake) time, counting
// the calls it started.
func slowTask(started *atomic.Int64) task.Task {
	return task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
		started.Add(1)
		time.Sleep(time.Second)
		return task.Result{Output: []byte(`{"ok":true}`)}, nil
	})
}

func TestAPausedRunStartsNoCallUntilContinue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var started atomic.Int64
		e := engine.New(engine.Config{Concurrency: 2, Total: 10}, slowTask(&started), newMemJob())
		done := make(chan engine.Summary)
		go func() {
			s, _ := e.Run(context.Background(), items(10))
			done <- s
		}()
		time.Sleep(500 * time.Millisecond)
		if !e.Pause("alice on the web page") {
			t.Fatal("Pause of a running run reported false")
		}
		if e.Pause("bob") {
			t.Error("a second Pause reported true: the first pause stands")
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		s := e.Stats()
		if got := started.Load(); got != 2 {
			t.Errorf("%d calls started by an hour into the pause, want the 2 in flight when it began", got)
		}
		if s.Done != 2 || s.InFlight != 0 {
			t.Errorf("paused: done %d, in flight %d; want the 2 calls in flight finished and recorded", s.Done, s.InFlight)
		}
		if s.Hold == nil || s.Hold.By != "alice on the web page" {
			t.Fatalf("Stats().Hold = %+v, want alice's pause", s.Hold)
		}
		if s.PausedSince.IsZero() {
			t.Error("the operator's pause does not count as paused time: the rate would count it")
		}
		if !e.Continue("alice") {
			t.Fatal("Continue of a paused run reported false")
		}
		sum := <-done
		if sum.Done != 10 || sum.Stop != engine.StopNone {
			t.Errorf("after Continue the run ended with %d done, stop %v; want all 10, no stop", sum.Done, sum.Stop)
		}
		if sum.Hold != nil {
			t.Errorf("the summary still holds %+v after Continue", sum.Hold)
		}
	})
}

func TestStopWhilePausedEndsAsTheOperatorsStopWithEveryCallRecorded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var started atomic.Int64
		j := newMemJob()
		e := engine.New(engine.Config{Concurrency: 3, Total: 10}, slowTask(&started), j)
		done := make(chan engine.Summary)
		go func() {
			s, _ := e.Run(context.Background(), items(10))
			done <- s
		}()
		time.Sleep(500 * time.Millisecond)
		e.Pause("alice")
		// Stopped with the three calls still in flight: they finish and
		// are recorded, nothing else starts.
		e.Stop(engine.StopOperator, "stopped by alice")
		sum := <-done
		if sum.Stop != engine.StopOperator || sum.Done != 3 || sum.Pending != 7 {
			t.Errorf("stop: %v, %d done, %d pending; want the operator's stop, the 3 in flight done, 7 pending", sum.Stop, sum.Done, sum.Pending)
		}
		if n := len(j.records); n != 3 {
			t.Errorf("%d records written, want the 3 calls in flight at the stop", n)
		}
		if e.Pause("bob") {
			t.Error("Pause of a stopped run reported true")
		}
	})
}

func TestATripAnsweredContinueLeavesTheOperatorsPauseInForce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		var e *engine.Engine
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			if calls.Add(1) <= 2 {
				return task.Result{}, errFatal
			}
			return task.Result{Output: []byte(`{}`)}, nil
		})
		p := &holdingPrompter{}
		e = engine.New(engine.Config{
			Concurrency: 1, Breaker: breaker.Settings{Threshold: 2, ResetTimeout: time.Second},
			OnTrip: engine.TripPrompt, Operator: p, Total: 10,
		}, tk, newMemJob())
		p.e = e
		done := make(chan engine.Summary)
		go func() {
			s, _ := e.Run(context.Background(), items(10))
			done <- s
		}()
		time.Sleep(time.Hour)
		synctest.Wait()
		if got := calls.Load(); got != 2 {
			t.Errorf("%d calls after the trip answered Continue under the operator's pause, want the 2 that tripped it", got)
		}
		e.Continue("alice")
		if s := <-done; s.Done != 10 {
			t.Errorf("%d done after Continue, want 10", s.Done)
		}
	})
}

// holdingPrompter pauses the run as the operator, then answers the trip
// Continue.
type holdingPrompter struct{ e *engine.Engine }

func (p *holdingPrompter) Trip(context.Context, engine.TripReport) engine.TripDecision {
	p.e.Pause("alice")
	return engine.TripContinue
}

func (p *holdingPrompter) CheckIn(context.Context, engine.CheckIn) bool { return true }
