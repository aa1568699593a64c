package engine_test

import (
	"context"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// slowly answers each call after its own time, sleeping (synctest's
// clock moves by exactly that much): takes[call-1], the last repeated;
// a call whose fail is set fails with a 503.
func slowly(takes []time.Duration, fail []bool) func(task.Item, int) (task.Result, error) {
	return func(_ task.Item, call int) (task.Result, error) {
		i := min(call, len(takes)) - 1
		time.Sleep(takes[i])
		if i < len(fail) && fail[i] {
			return task.Result{}, err503
		}
		return ok("answer")
	}
}

// one is a single named route a running fn.
func one(fn func(task.Item, int) (task.Result, error)) func() []engine.Route {
	return func() []engine.Route { return []engine.Route{{Name: "a", Task: &routeTask{fn: fn}}} }
}

// TestEveryRouteACallWentToKeepsItsCallTime: a record's call_ms is the
// time its item's calls took on the record's route — each call's own
// time summed, the backoff between them left out — and each try's the
// time they took on the route it left; the item's duration_ms still
// counts everything.
func TestEveryRouteACallWentToKeepsItsCallTime(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		name      string
		routes    func() []engine.Route
		plain     func(task.Item, int) (task.Result, error) // the task without routes
		wantCall  int64
		wantTries []int64
		minItemMS int64
	}{
		{name: "one call on a route", routes: one(slowly([]time.Duration{250 * ms}, nil)), wantCall: 250, minItemMS: 250},
		{name: "a retry on a route: both calls, not the backoff",
			routes:   one(slowly([]time.Duration{100 * ms, 50 * ms}, []bool{true, false})),
			wantCall: 150, minItemMS: 150 + 10},
		{name: "a job without routes names no route and keeps no call time",
			plain: slowly([]time.Duration{250 * ms}, nil), wantCall: 0, minItemMS: 250},
		{name: "an outage moves the item: the try keeps the time on the route it left",
			routes: func() []engine.Route {
				return []engine.Route{
					{Name: "a", Task: &routeTask{fn: slowly([]time.Duration{300 * ms}, []bool{true})}},
					// Tier 1: a, in tier 0, serves first, every run.
					{Name: "b", Tier: 1, Task: &routeTask{fn: slowly([]time.Duration{40 * ms}, nil)}},
				}
			},
			wantCall: 40, wantTries: []int64{300}, minItemMS: 340},
		{name: "a sub-millisecond call is rounded up, never none",
			routes: one(slowly([]time.Duration{time.Microsecond}, nil)), wantCall: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				job := newMemJob()
				cfg := engine.Config{Concurrency: 1, Retry: fastRetry, Fallbacks: engine.Fallbacks{Outage: true},
					Breaker: breaker.Settings{Threshold: 5, ResetTimeout: time.Hour}}
				var tk task.Task = &routeTask{fn: c.plain}
				if c.routes != nil {
					cfg.Routes = c.routes()
				}
				if _, err := engine.New(cfg, tk, job).Run(context.Background(), items(1)); err != nil {
					t.Fatalf("Run: %v", err)
				}
				rec, found := job.byIdx()[0]
				if !found {
					t.Fatal("the item has no record")
				}
				var tries []int64
				for _, try := range rec.Tries {
					tries = append(tries, try.CallMS)
				}
				if rec.CallMS != c.wantCall || !slices.Equal(tries, c.wantTries) {
					t.Errorf("call_ms %d, tries' call_ms %v; want %d and %v (record %+v)", rec.CallMS, tries, c.wantCall, c.wantTries, rec)
				}
				if rec.DurationMS < c.minItemMS {
					t.Errorf("duration_ms %d, want at least %d: the item's whole time, every call and backoff", rec.DurationMS, c.minItemMS)
				}
			})
		})
	}
}

// TestRecordsOfUntimedItemsHaveNoCallTime: a cache hit makes no call, so
// its record has no call time, however long the cache took.
func TestRecordsOfUntimedItemsHaveNoCallTime(t *testing.T) {
	// A cache hit makes no call: nothing to time.
	synctest.Test(t, func(t *testing.T) {
		job := newMemJob()
		tk := task.Func(func(context.Context, task.Item) (task.Result, error) {
			time.Sleep(time.Second)
			return task.Result{Output: []byte(`"cached"`), CacheHit: true}, nil
		})
		if _, err := engine.New(engine.Config{Concurrency: 1, Retry: fastRetry}, tk, job).Run(context.Background(), items(1)); err != nil {
			t.Fatalf("Run: %v", err)
		}
		if rec := job.byIdx()[0]; rec.CallMS != 0 || !rec.CacheHit {
			t.Errorf("a cache hit's record has call_ms %d (cache_hit %v), want none: no call was made", rec.CallMS, rec.CacheHit)
		}
	})
}
