package engine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// TestARecordCountsItsCallsAnswered429: the page charts 429s from the
// records alone (they survive the run and come from every worker), so
// each record counts its item's calls the provider rate limited.
func TestARecordCountsItsCallsAnswered429(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		tk := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			if it.Idx == 0 && calls.Add(1) <= 2 {
				return task.Result{}, classify.WithClass(hinted429{time.Millisecond}, classify.Retryable, "test")
			}
			return ok("x")
		})
		j := newMemJob()
		if _, err := engine.New(engine.Config{Concurrency: 2, Retry: fastRetry}, tk, j).Run(context.Background(), items(2)); err != nil {
			t.Fatal(err)
		}
		recs := j.byIdx()
		first := recs[0]
		if got := first.RateLimited; got != 2 || first.Failed() {
			t.Errorf("item 0's record counts %d calls answered 429 (failed %v), want 2 and a success after them", got, first.Failed())
		}
		if got := recs[1].RateLimited; got != 0 {
			t.Errorf("item 1's record counts %d calls answered 429, want 0", got)
		}
	})
}
