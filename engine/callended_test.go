package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// TestCallEndedCarriesEachCallsLatencyAndClass runs one item through
// [retryable, invalid output, valid output], each call taking a known
// (fake) time, and checks that every call emits one CallEnded with its own
// latency — not the backoff before it, not the item's whole time — and the
// class the engine gave it.
func TestCallEndedCarriesEachCallsLatencyAndClass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		took := []time.Duration{300 * time.Millisecond, 2 * time.Second, 50 * time.Millisecond}
		answers := []func() (task.Result, error){
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) { return ok("wrong") },
			func() (task.Result, error) { return ok("valid") },
		}
		var calls int
		tk := task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
			n := calls
			calls++
			time.Sleep(took[n])
			return answers[n]()
		})
		var mu sync.Mutex
		var ended []engine.Event
		cfg := engine.Config{Concurrency: 1, Retry: fastRetry, Validator: onlyValid, OnEvent: func(ev engine.Event) {
			if ev.Kind == engine.CallEnded {
				mu.Lock()
				ended = append(ended, ev)
				mu.Unlock()
			}
		}}
		if _, err := engine.New(cfg, tk, newMemJob()).Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		want := []classify.Class{classify.Retryable, classify.Invalid, classify.Unknown}
		if len(ended) != len(want) {
			t.Fatalf("%d CallEnded events for %d calls", len(ended), len(want))
		}
		for i, ev := range ended {
			if ev.Elapsed != took[i] {
				t.Errorf("call %d: Elapsed %s, want the call's own %s", i+1, ev.Elapsed, took[i])
			}
			if ev.Decision.Class != want[i] {
				t.Errorf("call %d: class %s, want %s", i+1, ev.Decision.Class, want[i])
			}
			if (ev.Err != nil) != (i == 0) {
				t.Errorf("call %d: Err %v: want the task's error for the failed call only (an invalid answer is an answer)", i+1, ev.Err)
			}
		}
	})
}

// TestCacheHitsEmitNoCallEnded: an answer from the response cache is no
// call, so it has no latency to report.
func TestCacheHitsEmitNoCallEnded(t *testing.T) {
	tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
		r, err := ok("valid")
		r.CacheHit = true
		return r, err
	})
	var n int
	cfg := engine.Config{Concurrency: 1, OnEvent: func(ev engine.Event) {
		if ev.Kind == engine.CallEnded {
			n++
		}
	}}
	if _, err := engine.New(cfg, tk, newMemJob()).Run(context.Background(), items(3)); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d CallEnded events for 3 answers from the cache, want none", n)
	}
}
