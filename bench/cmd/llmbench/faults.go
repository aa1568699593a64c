package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/tenaxhq/tenax/job"
)

// faults is the fault-overhead scenario: the same job through tenax's
// in-process mock provider, once with no faults and once with a share of
// calls answered 500 (retryable), with the same latency and concurrency.
type faults struct {
	Items, Concurrency, Rounds int
	Server                     float64
	Latency, Base              time.Duration
}

// faultsRun is what one run measured.
type faultsRun struct {
	elapsed                           time.Duration
	succeeded, failed, calls, retries int
}

func (f faults) run(ctx context.Context, out io.Writer) error {
	fmt.Fprintf(out, "faults: %d items, latency %v, concurrency %d, retry.backoff.base %v (proportional jitter), server errors %.0f%%\n",
		f.Items, f.Latency, f.Concurrency, f.Base, 100*f.Server)
	fmt.Fprintf(out, "%-5s %-7s %8s %6s %6s %6s %7s  %s\n", "round", "faults", "seconds", "ok", "failed", "calls", "retries", "load")
	var clean, faulty []float64
	for round := 1; round <= f.Rounds; round++ {
		for _, share := range []float64{0, f.Server} {
			load := loadAverage()
			r, err := f.once(ctx, share)
			if err != nil {
				return err
			}
			if share == 0 {
				clean = append(clean, r.elapsed.Seconds())
			} else {
				faulty = append(faulty, r.elapsed.Seconds())
			}
			fmt.Fprintf(out, "%-5d %6.0f%% %8.3f %6d %6d %6d %7d  %s\n", round, 100*share, r.elapsed.Seconds(), r.succeeded, r.failed, r.calls, r.retries, load)
		}
	}
	c, fy := median(clean), median(faulty)
	fmt.Fprintf(out, "\nmedian no faults %.3f s, with faults %.3f s: %.2fx\n", c, fy, fy/c)
	return nil
}

func (f faults) once(ctx context.Context, server float64) (faultsRun, error) {
	spec := fmt.Sprintf(`name: faults
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-echo
  prompt: "{{.word}}"
retry:
  backoff: {base: %s}
concurrency: {max: %d}
cache: {enabled: false}
mock:
  latency: %s
  errors: {server: %g}
`, f.Base, f.Concurrency, f.Latency, server)
	path, cleanup, err := workDir(spec, f.Items)
	if err != nil {
		return faultsRun{}, err
	}
	defer cleanup()
	start := time.Now()
	res, err := job.Run(ctx, path, job.Options{Home: filepath.Join(filepath.Dir(path), "home"), Logger: quietLogger()})
	elapsed := time.Since(start)
	if err != nil {
		return faultsRun{}, err
	}
	return faultsRun{elapsed: elapsed, succeeded: res.Succeeded, failed: res.Failed, calls: res.Summary.Calls, retries: res.Summary.Retries}, nil
}
