package postgres_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
)

// The same job as with store/jsonl, kept in a database. It needs one to
// run, so it has no checked output.
func Example() {
	ctx := context.Background()
	s, err := postgres.Open(ctx, os.Getenv("TENAX_POSTGRES_DSN"))
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	job, err := s.Create(ctx, store.Manifest{Name: "translate", Items: 2, State: store.StateRunning})
	if err != nil {
		log.Fatal(err)
	}
	defer job.Close()
	if err := job.Append(ctx, store.Record{Idx: 0, Attempts: 1}); err != nil {
		log.Fatal(err)
	}
	outcomes, err := job.Outcomes(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(outcomes.Get(0), outcomes.Get(1)) // succeeded pending
}
