package worker_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/worker"
)

// Enqueue a job's items on one machine, run workers on any number of
// others. It needs a database, so it is compiled but not run here.
func Example() {
	ctx := context.Background()
	c, err := worker.Open(ctx, os.Getenv("TENAX_STORE")) // postgres://…?search_path=batch
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// On the machine with the spec and the input: `tenax run job.yaml --workers 0`.
	cr, err := job.Create(ctx, "job.yaml", c.Store(), job.Options{})
	if err != nil {
		log.Fatal(err)
	}
	e, err := c.Enqueue(ctx, cr)
	cr.Job.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %s: %d items in queue %s\n", e.JobID, e.Items, e.Queue)

	// On every worker machine: `tenax worker --job ID`.
	w, err := c.NewWorker(worker.Config{Jobs: []string{e.JobID}, Concurrency: 16})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil { // until ctx ends: then a graceful stop
		log.Fatal(err)
	}
}
