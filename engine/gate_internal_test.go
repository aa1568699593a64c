package engine

import (
	"context"
	"testing"
	"testing/synctest"
	"time"
)

// TestWaitingOutACooldownDoesNotTakeItsProbe: an item that finds the
// cooldown over while it waits must leave the half-open breaker's one probe
// to whoever calls; taking it and dropping it left every item waiting for a
// probe that never came.
func TestWaitingOutACooldownDoesNotTakeItsProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newGate(Config{Concurrency: 1}, nil, func() (int64, float64) { return 0, 0 })
		g.cooldown(time.Now().Add(time.Second))
		time.Sleep(time.Second) // the cooldown is over, not yet half-open
		if err := g.waitCooldown(context.Background()); err != nil {
			t.Fatal(err)
		}
		p, err := g.cool.Allow()
		if err != nil {
			t.Fatalf("after waiting, the probe is not there to take: %v", err)
		}
		if !p.Probe() {
			t.Fatal("the first permit after a cooldown must be its probe")
		}
		p.Success()
	})
}
