package main

import (
	"container/heap"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/tenaxhq/tenax/retry"
)

// bound is the goodput scenario without HTTP or an engine: a perfect
// client that sends every request the moment the provider's bucket holds
// it, a retry as soon as its delay has passed (before any first attempt),
// against the faults the mock draws, with the delays of tenax's default
// retry policy (a sporadic 429's hint, a 5xx's backoff). Its wall time is
// the least a run can take without shortening a retry's wait: the ceiling
// of "% of the limit over the whole run" that the retry tail leaves.
type bound struct {
	Items, RPM, Runs       int
	Latency                time.Duration
	Sporadic429, Server5xx float64
	// Start is what the bucket holds when the job starts; Reserve what
	// the client leaves in it.
	Start, Reserve int
}

// attempt is an item's call waiting for its retry delay to pass.
type attempt struct {
	ready time.Duration
	n     int // the retry's number, 1 for the first retry
}

type attempts []attempt

func (a attempts) Len() int           { return len(a) }
func (a attempts) Less(i, j int) bool { return a[i].ready < a[j].ready }
func (a attempts) Swap(i, j int)      { a[i], a[j] = a[j], a[i] }
func (a *attempts) Push(x any)        { *a = append(*a, x.(attempt)) }
func (a *attempts) Pop() any {
	old := *a
	x := old[len(old)-1]
	*a = old[:len(old)-1]
	return x
}

// once simulates one run and returns its wall time: until the last success.
func (b bound) once(rnd *rand.Rand) time.Duration {
	perCall := time.Minute / time.Duration(b.RPM)
	hint := perCall.Round(time.Millisecond) // the mock's sporadic 429 hint
	var policy retry.Backoff                // the default: 1 s, doubling, ±50%
	var retries attempts
	var now, last time.Duration
	// The bucket, in calls, as of now.
	tokens := float64(b.Start - b.Reserve)
	next := 0
	for next < b.Items || len(retries) > 0 {
		if tokens < 1 {
			now += time.Duration((1 - tokens) * float64(perCall))
			tokens = 1
		}
		n := 0
		switch {
		case len(retries) > 0 && retries[0].ready <= now:
			n = heap.Pop(&retries).(attempt).n
		case next < b.Items:
			next++
		default:
			a := heap.Pop(&retries).(attempt)
			tokens += float64(a.ready-now) / float64(perCall)
			now, n = a.ready, a.n
		}
		tokens--
		done := now + b.Latency
		switch u := rnd.Float64(); {
		case u < b.Sporadic429:
			heap.Push(&retries, attempt{done + hint, n + 1})
		case u < b.Sporadic429+b.Server5xx:
			heap.Push(&retries, attempt{done + policy.Delay(n+1, 0, rnd), n + 1})
		default:
			last = max(last, done)
		}
	}
	return last
}

func (b bound) run(out io.Writer) error {
	if b.RPM <= 0 || b.Items <= 0 || b.Runs <= 0 {
		return fmt.Errorf("bound: want -rpm, -items and -runs above 0")
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	var pct, secs []float64
	reached := 0
	for range b.Runs {
		w := b.once(rnd)
		p := 100 * float64(b.Items) / w.Minutes() / float64(b.RPM)
		if p >= 95 {
			reached++
		}
		pct = append(pct, p)
		secs = append(secs, w.Seconds())
	}
	sort.Float64s(pct)
	sort.Float64s(secs)
	fmt.Fprintf(out, "bound: %d requests, limit %d rpm, latency %v, sporadic 429s %.0f%%, 5xx %.0f%%, %d in the bucket at the start, %d kept, %d runs\n",
		b.Items, b.RPM, b.Latency, 100*b.Sporadic429, 100*b.Server5xx, b.Start, b.Reserve, b.Runs)
	fmt.Fprintf(out, "wall time median %.2f s (p10 %.2f, p90 %.2f); %% of the limit median %.1f%% (p10 %.1f%%, p90 %.1f%%); runs at 95%% or more: %.0f%%\n",
		median(secs), secs[len(secs)/10], secs[len(secs)*9/10], median(pct), pct[len(pct)/10], pct[len(pct)*9/10], 100*float64(reached)/float64(b.Runs))
	return nil
}
