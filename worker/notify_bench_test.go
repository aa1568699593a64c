package worker_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// BenchmarkBreakerPropagation measures how long a change of a job's
// shared breaker, committed by another worker, takes to reach a worker
// running the job (its gate closing, then opening): each op is one trip
// and one close, and ms/change the mean of the two. "poll" is the worker
// without its listener, reading the breaker every 250 ms as before;
// "notify" is LISTEN/NOTIFY with the same poll beside it.
func BenchmarkBreakerPropagation(b *testing.B) {
	for _, mode := range []struct {
		name   string
		listen bool
	}{{"poll", false}, {"notify", true}} {
		b.Run(mode.name, func(b *testing.B) {
			ctx := b.Context()
			c, dsn, jobID := propagationJob(b)
			admin, err := pgx.Connect(ctx, dsn)
			if err != nil {
				b.Fatal(err)
			}
			defer admin.Close(context.Background())
			cfg := worker.Config{Jobs: []string{jobID}, Concurrency: 1}
			cfg.Options.Home, cfg.Options.Logger = b.TempDir(), quiet()
			worker.WrapTask(&cfg, func(task.Task) task.Task {
				// Items that never end while the benchmark runs: the job
				// stays the worker's.
				return task.Func(func(ctx context.Context, _ task.Item) (task.Result, error) {
					<-ctx.Done()
					return task.Result{}, ctx.Err()
				})
			})
			if !mode.listen {
				worker.NoListen(&cfg)
			}
			w, err := c.NewWorker(cfg)
			if err != nil {
				b.Fatal(err)
			}
			wctx, stop := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- w.Run(wctx) }()
			// The items never end by themselves: stop the calls too.
			defer func() { stop(); w.StopNow(); <-done }()
			gate := func(want bool) time.Duration {
				start := time.Now()
				for deadline := start.Add(time.Minute); ; time.Sleep(200 * time.Microsecond) {
					if closed, ok := worker.GateClosed(w, jobID); ok && closed == want {
						return time.Since(start)
					}
					if time.Now().After(deadline) {
						b.Fatalf("gave up waiting for the gate to be closed=%v", want)
					}
				}
			}
			gate(false)
			// A live owner of the trip, other than the worker measured.
			if _, err := admin.Exec(ctx, `INSERT INTO tenax_workers (id, host, pid, concurrency) VALUES ('other', 'h', 1, 1)`); err != nil {
				b.Fatal(err)
			}
			var total time.Duration
			b.ResetTimer()
			for range b.N {
				if _, err := admin.Exec(ctx, `UPDATE tenax_workers SET heartbeat = now() WHERE id = 'other'`); err != nil {
					b.Fatal(err)
				}
				if _, err := admin.Exec(ctx, `UPDATE tenax_breakers SET state = 'open', action = 'wait', owner = 'other', trips = trips + 1 WHERE job_id = $1`, jobID); err != nil {
					b.Fatal(err)
				}
				total += gate(true)
				if _, err := admin.Exec(ctx, `UPDATE tenax_breakers SET state = 'closed' WHERE job_id = $1`, jobID); err != nil {
					b.Fatal(err)
				}
				total += gate(false)
			}
			b.ReportMetric(float64(total.Microseconds())/1000/float64(2*b.N), "ms/change")
		})
	}
}

// propagationJob opens a client on a schema of its own and enqueues a job
// of a few items for workers, returning the schema's DSN and the job's id.
func propagationJob(b *testing.B) (*worker.Client, string, string) {
	dsn := pgtest.AbsentDSN(b, "tenax_wbench_")
	c, err := worker.Open(b.Context(), dsn)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	dir := b.TempDir()
	var in strings.Builder
	for i := range 8 {
		fmt.Fprintf(&in, "{\"id\": \"w%d\", \"word\": \"word%d\"}\n", i, i)
	}
	spec := "name: propagation\ninput: items.jsonl\ntask:\n  type: llm\n  provider: mock\n  model: mock-json\n  output: json\n  prompt: \"Describe {{.word}}\"\n"
	for name, data := range map[string]string{"items.jsonl": in.String(), "job.yaml": spec} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cr, err := job.Create(b.Context(), filepath.Join(dir, "job.yaml"), c.Store(), job.Options{Home: b.TempDir(), Logger: quiet()})
	if err != nil {
		b.Fatal(err)
	}
	defer cr.Job.Close()
	e, err := c.Enqueue(b.Context(), cr)
	if err != nil {
		b.Fatal(err)
	}
	return c, dsn, e.JobID
}
