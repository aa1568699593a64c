package memory_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

// A job's records in memory: the latest record of each idx is its outcome.
func Example() {
	ctx := context.Background()
	var s memory.Store
	j, err := s.Create(ctx, store.Manifest{ID: "demo", Items: 3})
	if err != nil {
		panic(err)
	}
	defer j.Close()
	_ = j.Append(ctx,
		store.Record{Idx: 0, Output: json.RawMessage(`"ok"`)},
		store.Record{Idx: 1, Error: "HTTP 503", Class: classify.Retryable},
		store.Record{Idx: 1, Output: json.RawMessage(`"ok on resume"`)},
	)
	o, _ := j.Outcomes(ctx)
	fmt.Println(o.Get(0), o.Get(1), o.Get(2))
	_ = j.Scan(ctx, func(r store.Record) error {
		fmt.Println(r.Idx, string(r.Output))
		return nil
	})
	// Output:
	// succeeded succeeded pending
	// 0 "ok"
	// 1 "ok on resume"
}
