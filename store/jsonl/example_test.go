package jsonl_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// A run appends a record per finished item; a resume reads back each
// item's latest outcome and skips what is done.
func Example() {
	home, err := os.MkdirTemp("", "tenax-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	ctx := context.Background()
	s := &jsonl.Store{Home: home}

	job, err := s.Create(ctx, store.Manifest{
		Created:   time.Date(2024, 5, 1, 9, 30, 0, 0, time.UTC),
		InputPath: "units.jsonl",
		Items:     4,
		State:     store.StateRunning,
	})
	if err != nil {
		log.Fatal(err)
	}
	id := job.Manifest().ID
	err = job.Append(ctx,
		store.Record{Idx: 0, Output: json.RawMessage(`{"es":"hola"}`), Attempts: 1},
		store.Record{Idx: 2, Error: "HTTP 503", Class: classify.Retryable, Attempts: 5},
	)
	if err != nil {
		log.Fatal(err)
	}
	// Close flushes and fsyncs; the process could now die.
	if err := job.Close(); err != nil {
		log.Fatal(err)
	}

	job, err = s.Open(ctx, id)
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	outcomes, err := job.Outcomes(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("job", id)
	for idx := range job.Manifest().Items {
		fmt.Println(idx, outcomes.Get(idx))
	}
	// Output:
	// job job_20240501_093000
	// 0 succeeded
	// 1 pending
	// 2 failed
	// 3 pending
}
