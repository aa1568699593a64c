package engine

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
)

// passed is what a pass run in the background came back with, and when.
type passed struct {
	t   ticket
	err error
	at  time.Time
}

// passInBackground starts g.pass and returns where its outcome arrives.
func passInBackground(ctx context.Context, g *gate, tokens int, refuseCooling func() bool) <-chan passed {
	done := make(chan passed, 1)
	go func() {
		tk, err := g.pass(ctx, tokens, false, refuseCooling)
		done <- passed{tk, err, time.Now()}
	}()
	return done
}

// TestTheBudgetComesBeforeEveryWait: a spent budget stops the call at
// once, whatever else would hold it: it is the gate's first stage, so a
// paused run or a tripped breaker does not keep a run that cannot spend
// waiting for the operator.
func TestTheBudgetComesBeforeEveryWait(t *testing.T) {
	tests := []struct {
		name  string
		block func(g *gate)
	}{
		{"a paused gate", func(g *gate) { g.pause() }},
		{"a tripped breaker", func(g *gate) { g.br.TripUntil(time.Now().Add(time.Hour)) }},
		{"a provider cooldown", func(g *gate) { g.cooldown(time.Now().Add(time.Hour)) }},
		{"a full call slot", func(g *gate) { g.conc.tryAcquire() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newGate(Config{Concurrency: 1, Budget: Budget{MaxTokens: 100}}, breaker.New(breaker.Settings{}),
					func() (int64, float64) { return 100, 0 })
				tt.block(g)
				begin := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				out := <-passInBackground(ctx, g, 10, nil)
				var reached *BudgetError
				if !errors.As(out.err, &reached) {
					t.Fatalf("pass with a spent budget and %s returned %v, want a *BudgetError: the budget is the first stage", tt.name, out.err)
				}
				if d := out.at.Sub(begin); d != 0 {
					t.Errorf("the spent budget was reported after %v, want at once: the call waited on %s first", d, tt.name)
				}
			})
		})
	}
}

// TestAPausedRouteGateWaitsRatherThanRefusingOnItsBreaker: the pause
// comes before the breaker, so a route's gate (which refuses a call its
// breaker gives no permit) holds its call while the run is paused instead
// of sending it to another route, and refuses only once unpaused.
func TestAPausedRouteGateWaitsRatherThanRefusingOnItsBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(Config{Concurrency: 1}, breaker.New(breaker.Settings{}), func() (int64, float64) { return 0, 0 })
		g.refuse = true
		g.br.TripUntil(time.Now().Add(time.Hour))
		g.pause()
		done := passInBackground(context.Background(), g, 0, nil)
		synctest.Wait()
		select {
		case out := <-done:
			t.Fatalf("a paused gate came back with %v, want it to wait: the pause is checked before the breaker", out.err)
		default:
		}
		g.unpause()
		if out := <-done; !errors.Is(out.err, errRouteRefused) {
			t.Fatalf("unpaused, the route's gate with a tripped breaker returned %v, want errRouteRefused", out.err)
		}
	})
}

// TestATrippedBreakerIsWaitedOnBeforeTheCooldown: the run breaker comes
// before the provider's cooldown, so a call that would refuse a cooldown
// (a route's item that may choose again) first waits for the breaker to
// let it through, and meets the cooldown only then.
func TestATrippedBreakerIsWaitedOnBeforeTheCooldown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const breakerFor = 10 * time.Second
		begin := time.Now()
		g := newGate(Config{Concurrency: 1}, breaker.New(breaker.Settings{}), func() (int64, float64) { return 0, 0 })
		g.br.TripUntil(begin.Add(breakerFor))
		g.cooldown(begin.Add(time.Hour))
		done := passInBackground(context.Background(), g, 0, func() bool { return true })
		synctest.Wait()
		select {
		case out := <-done:
			t.Fatalf("the call came back with %v at once, want it to wait on the tripped breaker: the breaker is checked before the cooldown", out.err)
		default:
		}
		out := <-done
		if !errors.Is(out.err, errRouteCooling) {
			t.Fatalf("once the breaker let it through, the call returned %v, want errRouteCooling", out.err)
		}
		if waited := out.at.Sub(begin); waited != breakerFor {
			t.Errorf("the call met the cooldown after %v, want %v: it waits out the breaker first, then the cooldown", waited, breakerFor)
		}
	})
}

// TestACallWaitingOnALimiterHoldsNoSlot: the slot is the last stage, so
// a call waiting for its turn in the request limiter holds no call slot
// (a full set of slots means concurrency binds, adaptive concurrency's
// signal to grow), and takes one only when its turn comes.
func TestACallWaitingOnALimiterHoldsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(Config{Concurrency: 1, RequestsPerMinute: 60}, breaker.New(breaker.Settings{}), func() (int64, float64) { return 0, 0 })
		first, err := g.pass(context.Background(), 0, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		g.callEnded(&first, outcomeSuccess, false)
		begin := time.Now()
		done := passInBackground(context.Background(), g, 0, nil)
		synctest.Wait()
		select {
		case out := <-done:
			t.Fatalf("the second call came back with %v at once, want it to wait a second for its turn at 60 a minute", out.err)
		default:
		}
		g.conc.mu.Lock()
		used := g.conc.used
		g.conc.mu.Unlock()
		if used != 0 {
			t.Fatalf("%d call slots are held while the only call waits on the request limiter, want 0: the slot is taken last", used)
		}
		out := <-done
		if out.err != nil {
			t.Fatal(out.err)
		}
		if !out.t.slot {
			t.Error("the call let through holds no slot, want one")
		}
		if waited := out.at.Sub(begin); waited != time.Second {
			t.Errorf("the call went after %v, want 1s: its turn at 60 a minute", waited)
		}
		g.callEnded(&out.t, outcomeSuccess, false)
	})
}

// BenchmarkGatePass is one call's way through an open gate and back: the
// hot path every call takes, which allocates nothing.
func BenchmarkGatePass(b *testing.B) {
	g := newGate(Config{Concurrency: 4}, breaker.New(breaker.Settings{}), func() (int64, float64) { return 0, 0 })
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tk, err := g.pass(ctx, 10, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		g.callEnded(&tk, outcomeSuccess, false)
	}
}
