package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Example runs a flaky task over ten items: a retryable failure on every
// item's first call, and item 7 is simply bad.
func Example() {
	calls := map[int]int{}
	flaky := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
		calls[it.Idx]++
		switch {
		case it.Idx == 7:
			return task.Result{}, classify.WithClass(errors.New("400 bad request"), classify.Item, "example")
		case calls[it.Idx] == 1:
			return task.Result{}, classify.WithClass(errors.New("connection reset"), classify.Retryable, "example")
		}
		out, _ := json.Marshal(fmt.Sprintf("item %d done", it.Idx))
		return task.Result{Output: out}, nil
	})
	job := &memJob{}
	e := engine.New(engine.Config{
		Concurrency: 1, // the example's map needs no lock
		Retry:       retry.Policy{Backoff: retry.Backoff{Base: 1, Jitter: retry.JitterNone}},
		Total:       10,
	}, flaky, job)
	s, err := e.Run(context.Background(), items(10))
	if err != nil {
		panic(err)
	}
	fmt.Printf("succeeded %d, failed %d, pending %d, retries %d\n", s.Succeeded, s.Failed, s.Pending, s.Retries)
	fmt.Println("item 7:", job.byIdx()[7].Class)
	// Output:
	// succeeded 9, failed 1, pending 0, retries 9
	// item 7: item
}
