package engine_test

import (
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// TestCarriedTriesKeepAnItemOffTheRoutesItLeftInWaves: an item a batch
// job's waves moved off route a reaches the online tail with a in its
// tries; with fallbacks.outage the tail sends it to b, not back to a,
// and its record lists a's error before anything the tail adds.
func TestCarriedTriesKeepAnItemOffTheRoutesItLeftInWaves(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := &routeTask{fn: always(func() (task.Result, error) { return task.Result{}, err503 })}
		b := &routeTask{fn: answerB}
		left := store.Try{Route: "a", Model: "m-a", Error: "batch request expired", Class: classify.Retryable}
		carried := map[int]*engine.Carried{}
		for i := range 10 {
			carried[i] = &engine.Carried{Tries: []store.Try{left}}
		}
		cfg := engine.Config{Concurrency: 4, Retry: fastRetry, Carried: carried,
			Routes:    []engine.Route{{Name: "a", Model: "m-a", Task: a}, {Name: "b", Model: "m-b", Task: b}},
			Fallbacks: engine.Fallbacks{Outage: true}}
		sum, recs := routeRun(t, cfg, 10)
		if sum.Succeeded != 10 {
			t.Fatalf("%d of 10 succeeded (stop %v: %s)", sum.Succeeded, sum.Stop, sum.StopDetail)
		}
		if n := a.called(); n != 0 {
			t.Errorf("route a was called %d times; the items had left it in their waves", n)
		}
		for idx, r := range recs {
			if r.Route != "b" || len(r.Tries) != 1 || r.Tries[0] != left {
				t.Errorf("item %d: route %q, tries %+v; want b with the carried try on a", idx, r.Route, r.Tries)
			}
		}
	})
}
