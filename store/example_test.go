package store_test

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

// Export writes the latest record of every item, in idx order, whatever
// order the items finished in; the filter keeps only the failures.
func ExampleExport() {
	home, err := os.MkdirTemp("", "tenax-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(home)
	ctx := context.Background()
	s := &jsonl.Store{Home: home}
	job, err := s.Create(ctx, store.Manifest{Created: time.Date(2024, 5, 1, 9, 30, 0, 0, time.UTC)})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	_ = job.Append(ctx,
		store.Record{Idx: 1, Output: json.RawMessage(`{"es":"hola"}`), Attempts: 1},
		store.Record{Idx: 0, Error: "HTTP 422: text too long", Class: classify.Item, Attempts: 1},
		store.Record{Idx: 2, Error: "timeout", Class: classify.Retryable, Attempts: 5},
		store.Record{Idx: 2, Output: json.RawMessage(`{"es":"adiós"}`), Attempts: 1},
	)
	fmt.Println("everything:")
	if err := store.Export(ctx, job, os.Stdout, store.FormatCSV, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Println("failures:")
	failed := func(r store.Record) bool { return r.Failed() }
	if err := store.Export(ctx, job, os.Stdout, store.FormatCSV, failed); err != nil {
		log.Fatal(err)
	}
	// Output:
	// everything:
	// _idx,id,class,error,attempts,output
	// 0,,item,HTTP 422: text too long,1,
	// 1,,,,1,"{""es"":""hola""}"
	// 2,,,,1,"{""es"":""adiós""}"
	// failures:
	// _idx,id,class,error,attempts,output
	// 0,,item,HTTP 422: text too long,1,
}
