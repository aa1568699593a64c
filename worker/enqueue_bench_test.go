package worker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/worker"
)

// BenchmarkEnqueue creates and enqueues a job of TENAX_BENCH_ITEMS items
// (default 200,000) of {"id": "eN", "word": "wordN"}, each round into a
// schema of its own, and reports the seconds of job.Create (the input's
// scan) and of Enqueue apart. Profile it with -cpuprofile.
func BenchmarkEnqueue(b *testing.B) {
	pgtest.Require(b)
	n := 200_000
	if s := os.Getenv("TENAX_BENCH_ITEMS"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatalf("TENAX_BENCH_ITEMS: %v", err)
		}
	}
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "items.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		fmt.Fprintf(f, "{\"id\": \"e%d\", \"word\": \"word%d\"}\n", i, i)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	spec := "name: enqueue\ninput: items.jsonl\ntask: {type: llm, provider: mock, model: mock-json, prompt: \"Say {{.word}}\"}\ncache: {enabled: false}\n"
	specPath := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(specPath, []byte(spec), 0o644); err != nil {
		b.Fatal(err)
	}
	var create, enq time.Duration
	rounds := 0
	for b.Loop() {
		b.StopTimer()
		c, err := worker.Open(b.Context(), pgtest.AbsentDSN(b, "tenax_wbench_"))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		cr, err := job.Create(b.Context(), specPath, c.Store(), job.Options{Home: b.TempDir(), Logger: quiet()})
		if err != nil {
			b.Fatal(err)
		}
		created := time.Now()
		e, err := c.Enqueue(b.Context(), cr)
		if err != nil {
			b.Fatal(err)
		}
		enq += time.Since(created)
		create += created.Sub(start)
		rounds++
		if e.Items != n {
			b.Fatalf("enqueued %d items, want %d", e.Items, n)
		}
		b.StopTimer()
		cr.Job.Close()
		c.Close()
		b.StartTimer()
	}
	b.ReportMetric(create.Seconds()/float64(rounds), "create-s/op")
	b.ReportMetric(enq.Seconds()/float64(rounds), "enqueue-s/op")
}
