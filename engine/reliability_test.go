package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// stormTransport sends every request that starts before end to down (a mock
// answering 500 to everything) and every later one to up (a healthy mock):
// a provider outage that starts at once and ends at a fixed instant.
// It notes when each storm call started.
type stormTransport struct {
	end      time.Time
	down, up http.RoundTripper

	mu     sync.Mutex
	starts []time.Time // of the calls sent to down
}

func (s *stormTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	if now.Before(s.end) {
		s.mu.Lock()
		s.starts = append(s.starts, now)
		s.mu.Unlock()
		return s.down.RoundTrip(req)
	}
	return s.up.RoundTrip(req)
}

// startedBy counts the storm calls that started at or before at.
func (s *stormTransport) startedBy(at time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, st := range s.starts {
		if !st.After(at) {
			n++
		}
	}
	return n
}

// TestReliabilityFaultStorm runs 500 items through the real LLM task
// against a provider that answers 500 to every call for the first 30s (of
// fake time) and then recovers, with the breaker on wait. It checks that
// the job finishes with every item recorded exactly once, that the storm
// cost no more calls than the breaker allows, and that the items the storm
// failed succeed on a --retry-failures pass.
//
// The bound on calls made during the storm (answered 500), from how the
// engine counts (engine/item.go):
//
//   - A 500 is retryable: it counts toward the breaker only when it exhausts
//     its item's retries, i.e. on the item's A-th consecutive failure
//     (A = retry max_attempts). No call succeeds during the storm, so no
//     success ever resets the breaker's count, and every item that takes
//     part makes at most A storm calls before it is recorded failed.
//   - Closed: the breaker opens at the T-th exhausted item (T = threshold),
//     so T items with A calls each: T×A. When it opens, at most 2C−1 other
//     items are under way (C = concurrency: an item resting before its
//     retry gives its place to another, up to 2C items; the tripping item
//     is one of them); each of them has made at most A calls with permits
//     given while the breaker was closed (the last may still be under
//     way): (2C−1)×A. No permit is given while the breaker is open, so
//     every later call is a half-open probe.
//   - Open → half-open after R (reset_timeout): P probes (P = probes) are
//     let through. A probe that fails re-opens the breaker at once, whether
//     or not it exhausted its item, and the R wait starts over, so the
//     half-open windows that start during a storm of length S are at most
//     ⌊S/R⌋ (the first opens at R after the first trip, which is after the
//     storm began).
//
// Calls during the storm ≤ T×A + (2C−1)×A + P×⌊S/R⌋ = 5×3 + 15×3 + 1×6 = 66.
func TestReliabilityFaultStorm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const (
			n           = 500
			concurrency = 8
			maxAttempts = 3
			threshold   = 5
			probes      = 1
			storm       = 30 * time.Second
			resetAfter  = 5 * time.Second
		)
		bound := int64(threshold*maxAttempts + (2*concurrency-1)*maxAttempts + probes*int(storm/resetAfter))

		latency := mock.Config{Latency: 20 * time.Millisecond, LatencyMax: 80 * time.Millisecond}
		downCfg := latency
		downCfg.Seed, downCfg.Faults = 1, mock.Faults{Server: 1}
		upCfg := latency
		upCfg.Seed = 2
		down, up := mock.New(downCfg), mock.New(upCfg)
		start := time.Now()
		st := &stormTransport{end: start.Add(storm), down: down.Transport(), up: up.Transport()}
		tk, err := llm.New(llm.Config{
			Provider:   llm.ProviderMock,
			Model:      mock.ModelJSON,
			Prompt:     "Describe item {{.n}} as JSON.",
			Output:     llm.OutputJSON,
			Timeout:    10 * time.Second,
			HTTPClient: &http.Client{Transport: st},
		})
		if err != nil {
			t.Fatal(err)
		}

		var (
			mu          sync.Mutex
			opens       int
			halfOpens   int
			firstOpenAt time.Duration
		)
		cfg := engine.Config{
			Concurrency: concurrency,
			Retry: retry.Policy{MaxAttempts: maxAttempts, Backoff: retry.Backoff{
				Base: 50 * time.Millisecond, Multiplier: 2, Max: time.Second, Jitter: retry.JitterNone,
			}},
			Breaker: breaker.Settings{
				Threshold: threshold, ResetTimeout: resetAfter, Probes: probes,
				OnStateChange: func(from, to breaker.State, _ breaker.Counts) {
					mu.Lock()
					defer mu.Unlock()
					switch to {
					case breaker.Open:
						if opens == 0 {
							firstOpenAt = time.Since(start)
						}
						opens++
					case breaker.HalfOpen:
						halfOpens++
					}
				},
			},
			OnTrip: engine.TripWait,
			Total:  n,
		}
		job := newMemJob()
		s, err := engine.New(cfg, tk, job).Run(context.Background(), items(n))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopNone || s.Pending != 0 || s.Done != n {
			t.Fatalf("stop=%s (%s) done=%d pending=%d: with on_trip wait the job must run to the end, every item recorded",
				s.Stop, s.StopDetail, s.Done, s.Pending)
		}
		recs := oneRecordPerIdx(t, job, n)

		stormCalls := down.Stats().Requests
		mu.Lock()
		beforeTrip := st.startedBy(start.Add(firstOpenAt))
		t.Logf("storm %s, breaker first opened at %s, opened %d times, half-open %d times",
			storm, firstOpenAt.Round(time.Millisecond), opens, halfOpens)
		t.Logf("storm calls started before the first trip: %d (bound T×A + (2C−1)×A = %d); after it: %d (bound P×⌊S/R⌋ = %d)",
			beforeTrip, (threshold+2*concurrency-1)*maxAttempts, int(stormCalls)-beforeTrip, probes*int(storm/resetAfter))
		mu.Unlock()
		if int(stormCalls)-beforeTrip > probes*int(storm/resetAfter) {
			t.Errorf("%d storm calls started after the first trip, want at most P×⌊S/R⌋ = %d: an open or half-open breaker let through more than its probes",
				int(stormCalls)-beforeTrip, probes*int(storm/resetAfter))
		}
		t.Logf("calls during the storm: %d (bound T×A + (2C−1)×A + P×⌊S/R⌋ = %d); calls after it: %d; run took %s of fake time",
			stormCalls, bound, up.Stats().Requests, s.Elapsed.Round(time.Millisecond))
		if stormCalls > bound {
			t.Errorf("%d calls during the storm, want at most %d: the breaker let more calls through than it should", stormCalls, bound)
		}
		if stormCalls < threshold*maxAttempts {
			t.Errorf("%d calls during the storm, want at least T×A = %d: the storm never reached the breaker, the test proves nothing",
				stormCalls, threshold*maxAttempts)
		}

		// The items the storm failed are exactly those that exhausted their
		// retries against it: class retryable, A calls each, and no more
		// of them than the storm calls allow.
		var failed []int
		for idx, rec := range recs {
			if !rec.Failed() {
				continue
			}
			failed = append(failed, idx)
			if rec.Class != classify.Retryable || rec.Attempts != maxAttempts {
				t.Errorf("item %d failed with class %s after %d attempts, want retryable after %d: only the storm's 500s may fail an item",
					idx, rec.Class, rec.Attempts, maxAttempts)
			}
		}
		t.Logf("items: %d succeeded, %d failed by the storm (retryable, retries exhausted)", n-len(failed), len(failed))
		if len(failed) < threshold || int64(len(failed)*maxAttempts) > stormCalls {
			t.Errorf("%d items failed, want between T = %d and storm calls / A = %d", len(failed), threshold, stormCalls/maxAttempts)
		}

		// --retry-failures: the provider is up again, so one pass over the
		// failed items brings every one of them to success.
		retryJob := newMemJob()
		s2, err := engine.New(engine.Config{Concurrency: concurrency, Retry: cfg.Retry, Total: len(failed)}, tk, retryJob).
			Run(context.Background(), itemsAt(failed))
		if err != nil {
			t.Fatal(err)
		}
		if s2.Succeeded != len(failed) || s2.Failed != 0 {
			t.Errorf("retry-failures pass: %d succeeded, %d failed, want all %d to succeed once the provider is back",
				s2.Succeeded, s2.Failed, len(failed))
		}
	})
}

// oneRecordPerIdx checks that job holds exactly one record for each idx in
// [0, n) and returns them by idx.
func oneRecordPerIdx(t *testing.T, job *memJob, n int) map[int]store.Record {
	t.Helper()
	job.mu.Lock()
	defer job.mu.Unlock()
	recs := make(map[int]store.Record, n)
	for _, r := range job.records {
		if _, dup := recs[r.Idx]; dup {
			t.Errorf("idx %d has two records", r.Idx)
		}
		recs[r.Idx] = r
	}
	for idx := range n {
		if _, ok := recs[idx]; !ok {
			t.Errorf("idx %d has no record: item lost", idx)
		}
	}
	return recs
}

// itemsAt returns a Source of the items {"n": idx} for the given idx.
func itemsAt(idx []int) engine.Source {
	i := 0
	return engine.SourceFunc(func() (task.Item, error) {
		if i >= len(idx) {
			return task.Item{}, io.EOF
		}
		n := idx[i]
		i++
		return task.Item{Idx: n, Fields: map[string]any{"n": n}, Raw: json.RawMessage(fmt.Sprintf(`{"n":%d}`, n))}, nil
	})
}
