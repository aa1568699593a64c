package bench

import (
	"sync"
	"testing"
	"time"
)

// BenchmarkPrimitives prices, on the machine at hand, the primitives the
// libraries' figures are made of, so that readers can scale the
// comparison to their own machine: a clock read (gobreaker reads it
// twice per call, failsafe-go once per execution, tenax's closed breaker
// never), an uncontended mutex, and the timer that every library waits
// on per retry (the peers for a zero delay, tenax for its 1ns minimum).
func BenchmarkPrimitives(b *testing.B) {
	b.Run("op=time.Now", func(b *testing.B) {
		var last time.Time
		for b.Loop() {
			last = time.Now()
		}
		if last.IsZero() {
			b.Error("time.Now returned the zero time")
		}
	})
	b.Run("op=mutex", func(b *testing.B) {
		var (
			mu sync.Mutex
			n  int
		)
		for b.Loop() {
			mu.Lock()
			n++
			mu.Unlock()
		}
		if n == 0 {
			b.Error("the loop never ran")
		}
	})
	for _, d := range []time.Duration{0, time.Nanosecond} {
		b.Run("op=timer-"+d.String(), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				t := time.NewTimer(d)
				<-t.C
			}
		})
	}
}
