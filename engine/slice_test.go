package engine_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
)

// TestRunSliceOutcomesFollowTheItems: each item's value, error, class and
// calls, in the order of the items, whatever order they ended in.
func TestRunSliceOutcomesFollowTheItems(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("boom")
		var mu sync.Mutex
		calls := map[int]int{}
		f := func(ctx context.Context, n int) (string, error) {
			mu.Lock()
			calls[n]++
			c := calls[n]
			mu.Unlock()
			// Later items end first.
			time.Sleep(time.Duration(10-n) * time.Millisecond)
			switch {
			case n == 3:
				return "", fmt.Errorf("item 3: %w", boom)
			case n == 5 && c < 3:
				return "", errors.New("connection refused")
			}
			return fmt.Sprint("v", n), nil
		}
		items := []int{0, 1, 2, 3, 4, 5, 6}
		outcomes, s, err := engine.RunSlice(t.Context(), items, f, engine.Config{Concurrency: 4})
		if err != nil {
			t.Fatal(err)
		}
		for i, o := range outcomes {
			switch i {
			case 3:
				if !errors.Is(o.Err, boom) || o.Class != classify.Item || o.Attempts != 1 || o.Value != "" {
					t.Errorf("item 3: %+v, want f's error, class item, 1 call", o)
				}
			case 5:
				if o.Err != nil || o.Value != "v5" || o.Attempts != 3 {
					t.Errorf("item 5: %+v, want v5 after 3 calls", o)
				}
			default:
				if o.Err != nil || o.Value != fmt.Sprint("v", i) || o.Attempts != 1 {
					t.Errorf("item %d: %+v", i, o)
				}
			}
		}
		if s.Succeeded != 6 || s.Failed != 1 || s.Pending != 0 {
			t.Errorf("summary %+v", s)
		}
	})
}

func TestRunSliceRetriesErrorsWithoutSignalWhenAsked(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		cfg := engine.Config{Retry: retry.Policy{MaxAttempts: 3, Classifier: classify.Classifier{Otherwise: classify.Retryable}}}
		outcomes, _, err := engine.RunSlice(t.Context(), []string{"x"}, func(context.Context, string) (bool, error) {
			calls++
			return false, errors.New("boom")
		}, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if calls != 3 || outcomes[0].Attempts != 3 || outcomes[0].Class != classify.Retryable {
			t.Errorf("%d calls, outcome %+v; want 3 calls, class retryable", calls, outcomes[0])
		}
	})
}

// TestRunSliceItemsAfterTheBreakerAreNotRun: the breaker stops the run and
// the items it left say so.
func TestRunSliceItemsAfterTheBreakerAreNotRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		items := make([]int, 20)
		outcomes, s, err := engine.RunSlice(t.Context(), items, func(context.Context, int) (int, error) {
			return 0, classify.WithClass(errors.New("401 invalid api key"), classify.Fatal, "status 401")
		}, engine.Config{Concurrency: 1, Breaker: breaker.Settings{}})
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBreaker {
			t.Fatalf("stop %v, want the breaker", s.Stop)
		}
		failed, notRun := 0, 0
		for _, o := range outcomes {
			switch {
			case errors.Is(o.Err, engine.ErrNotRun):
				notRun++
			case o.Class == classify.Fatal:
				failed++
			}
		}
		if failed != s.Failed || notRun != s.Pending || failed+notRun != len(items) || notRun == 0 {
			t.Errorf("%d failed, %d not run; summary %+v", failed, notRun, s)
		}
	})
}

// TestRunSliceCanceledLeavesItemsNotRun: a canceled context ends the run.
func TestRunSliceCanceledLeavesItemsNotRun(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	outcomes, _, err := engine.RunSlice(ctx, []int{1, 2}, func(context.Context, int) (int, error) { return 1, nil }, engine.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range outcomes {
		if !errors.Is(o.Err, engine.ErrNotRun) {
			t.Errorf("item %d: %+v, want ErrNotRun", i, o)
		}
	}
}
