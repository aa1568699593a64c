package engine

import (
	"testing"
	"time"
)

func TestPaceFor(t *testing.T) {
	cases := []struct {
		name      string
		remaining int
		reset     time.Duration
		inFlight  int
		want      time.Duration
		pause     bool
	}{
		{"no header", -1, time.Second, 8, 0, false},
		{"plenty left", 100, time.Second, 8, 0, false},
		{"exactly as many as in flight", 8, time.Second, 8, 0, false},
		{"nothing left: the whole reset", 0, 6 * time.Second, 8, 6 * time.Second, true},
		{"three left: a quarter each", 3, 4 * time.Second, 8, time.Second, true},
		{"no reset given", 0, 0, 8, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, pause := paceFor(c.remaining, c.reset, c.inFlight)
			if got != c.want || pause != c.pause {
				t.Errorf("paceFor(%d, %v, %d) = %v, %v; want %v, %v", c.remaining, c.reset, c.inFlight, got, pause, c.want, c.pause)
			}
		})
	}
}
