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

func TestQuotaShareScalesLimitsAndRemaining(t *testing.T) {
	q := Quota{RequestsLimit: 6000, RequestsRemaining: 3001, TokensLimit: 3, TokensRemaining: -1, RequestsReset: time.Second}
	tests := []struct {
		name string
		f    float64
		want Quota
	}{
		{"a fourth", 0.25, Quota{RequestsLimit: 1500, RequestsRemaining: 750, TokensLimit: 1, TokensRemaining: -1, RequestsReset: time.Second}},
		{"all of it", 1, q},
		{"more than all", 2, q},
		{"none given", 0, q},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := q.share(tt.f); got != tt.want {
				t.Errorf("share(%v) = %+v, want %+v: limits scaled but kept at 1 or more, remaining scaled down, absent counts (-1) and resets kept", tt.f, got, tt.want)
			}
		})
	}
}
