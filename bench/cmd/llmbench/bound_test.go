package main

import (
	"math/rand/v2"
	"testing"
	"time"
)

// TestBoundSendsAtTheRefill: without faults the perfect client's last call
// goes when the bucket has refilled what the run needs beyond what it held
// and kept, and the run ends a latency later; faults only make it longer.
func TestBoundSendsAtTheRefill(t *testing.T) {
	for _, tt := range []struct {
		name           string
		start, reserve int
		faults         float64
		want           time.Duration // 0: more than the run without faults
	}{
		{"a drained bucket", 0, 0, 0, 60*time.Second + 300*time.Millisecond},
		{"100 calls in the bucket at the start", 100, 0, 0, 50*time.Second + 300*time.Millisecond},
		{"100 in the bucket, 20 kept", 100, 20, 0, 52*time.Second + 300*time.Millisecond},
		{"2% of 429s and of 5xx", 0, 0, 0.02, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b := bound{Items: 600, RPM: 600, Latency: 300 * time.Millisecond, Start: tt.start, Reserve: tt.reserve,
				Sporadic429: tt.faults, Server5xx: tt.faults}
			got := b.once(rand.New(rand.NewPCG(1, 2)))
			switch {
			case tt.want > 0 && (got < tt.want-time.Millisecond || got > tt.want+time.Millisecond):
				t.Errorf("wall time %v, want %v: (600 - start + reserve) calls at 10 a second, then the latency", got, tt.want)
			case tt.want == 0 && got <= 60*time.Second+300*time.Millisecond:
				t.Errorf("wall time %v, want more than the 60.3 s without faults: retried calls spend the bucket too", got)
			}
		})
	}
}
