package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"
)

// series is a run's goodput and concurrency limit over time, by second.
type series struct {
	mu     sync.Mutex
	ok     []int // successes finished in each second
	limits []int // the concurrency limit at the end of each second (-1: unchanged)
}

func newSeries() *series { return &series{} }

func (s *series) grow(sec int) {
	for len(s.ok) <= sec {
		s.ok = append(s.ok, 0)
		s.limits = append(s.limits, -1)
	}
}

func (s *series) success(at time.Duration) { s.add(at, 1) }

func (s *series) add(at time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := int(at / time.Second)
	s.grow(sec)
	s.ok[sec] += n
}

func (s *series) limit(at time.Duration, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec := int(at / time.Second)
	s.grow(sec)
	s.limits[sec] = n
}

// reached returns the end of the first second in which at least perSec
// successes finished, 0 if none did.
func (s *series) reached(perSec float64) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, n := range s.ok {
		if float64(n) >= perSec {
			return time.Duration(i+1) * time.Second
		}
	}
	return 0
}

// write saves the series as CSV: second,ok,limit (the limit carried forward;
// empty when the variant has none).
func (s *series) write(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	b.WriteString("second,ok,limit\n")
	limit := -1
	for i, n := range s.ok {
		if s.limits[i] >= 0 {
			limit = s.limits[i]
		}
		l := ""
		if limit >= 0 {
			l = fmt.Sprint(limit)
		}
		fmt.Fprintf(&b, "%d,%d,%s\n", i+1, n, l)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// steady is the median of the successes per second over the middle 80% of
// the run: the pace once started and before the last retries trail off.
func (s *series) steady() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.ok)
	if n < 5 {
		return 0
	}
	var xs []float64
	for _, v := range s.ok[n/10 : n-n/10] {
		xs = append(xs, float64(v))
	}
	return median(xs)
}
