package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

// Example runs a flaky task over ten items, checkpointed in an in-memory
// store: a retryable failure on every item's first call, and item 7 is
// simply bad. Swap memory.Store for jsonl.Store or postgres.Store to keep
// the checkpoint.
func Example() {
	ctx := context.Background()
	var st memory.Store
	job, err := st.Create(ctx, store.Manifest{ID: "example", Items: 10})
	if err != nil {
		panic(err)
	}
	defer job.Close()

	var mu sync.Mutex
	calls := map[int]int{}
	flaky := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
		mu.Lock()
		calls[it.Idx]++
		n := calls[it.Idx]
		mu.Unlock()
		switch {
		case it.Idx == 7:
			return task.Result{}, classify.WithClass(errors.New("400 bad request"), classify.Item, "example")
		case n == 1:
			return task.Result{}, classify.WithClass(errors.New("connection reset"), classify.Retryable, "example")
		}
		out, _ := json.Marshal(fmt.Sprintf("item %d done", it.Idx))
		return task.Result{Output: out}, nil
	})

	next := 0
	items := engine.SourceFunc(func() (task.Item, error) {
		if next == 10 {
			return task.Item{}, io.EOF
		}
		it := task.Item{Idx: next, Raw: json.RawMessage(fmt.Sprintf(`{"n":%d}`, next))}
		next++
		return it, nil
	})

	e := engine.New(engine.Config{
		Concurrency: 4,
		Retry:       retry.Policy{Backoff: retry.Backoff{Base: 1, Jitter: retry.JitterNone}},
		Total:       10,
	}, flaky, job)
	s, err := e.Run(ctx, items)
	if err != nil {
		panic(err)
	}
	fmt.Printf("succeeded %d, failed %d, pending %d, retries %d\n", s.Succeeded, s.Failed, s.Pending, s.Retries)
	_ = job.Scan(ctx, func(r store.Record) error {
		if r.Failed() {
			fmt.Printf("item %d: %s (%s)\n", r.Idx, r.Class, r.Error)
		}
		return nil
	})
	// Output:
	// succeeded 9, failed 1, pending 0, retries 9
	// item 7: item (400 bad request)
}

// ExampleRunSlice runs a function over a slice with the engine's defaults:
// concurrency, retries of retryable errors, the breaker, a checkpoint in
// memory. The outcomes come back in the order of the items.
func ExampleRunSlice() {
	words := []string{"tenax", "holds", "on"}
	outcomes, _, err := engine.RunSlice(context.Background(), words, func(ctx context.Context, w string) (int, error) {
		return len(w), nil
	}, engine.Config{})
	if err != nil {
		panic(err)
	}
	for i, o := range outcomes {
		fmt.Println(words[i], o.Value, o.Err)
	}
	// Output:
	// tenax 5 <nil>
	// holds 5 <nil>
	// on 2 <nil>
}
