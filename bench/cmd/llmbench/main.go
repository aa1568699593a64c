// Command llmbench measures tenax's LLM jobs against its mock provider,
// running whole jobs through job.Run as `tenax run` does:
//
//	llmbench goodput [flags]  requests per minute that succeed under the
//	                          mock's hidden rate limit, and the share of
//	                          requests it answered 429
//	llmbench faults [flags]   wall time of a job whose calls fail with
//	                          retryable errors, over the same job without
//	llmbench cpu [flags]      CPU per call of a job against a mock served
//	                          by a separate process, and the connections
//	                          it opened
//	llmbench plot [flags]     an SVG of the per-second series goodput
//	                          -series wrote
//	llmbench bound [flags]    the goodput scenario's ceiling: a perfect
//	                          client's wall time under the same faults
//	                          and tenax's default retry delays
//
// Each scenario runs its variants in turn, round after round, so that a
// change in the machine's load falls on all of them alike, and prints one
// line per run and the median of each variant. docs/benchmarks.md records
// a run and what it means.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "llmbench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("want a scenario: goodput or faults")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	switch args[0] {
	case "goodput":
		var g goodput
		fs.IntVar(&g.Items, "items", 5000, "requests (items) per run")
		fs.IntVar(&g.RPM, "rpm", 6000, "the mock's limit of requests per minute (a bucket refilled continuously)")
		fs.IntVar(&g.Concurrency, "concurrency", 64, "concurrency.max")
		fs.BoolVar(&g.Prefill, "prefill", false, "empty the mock's request bucket before each job, so the job meets the limit in steady state")
		fs.BoolVar(&g.NoHeaders, "noheaders", false, "strip the mock's x-ratelimit-* headers, so only 429s say where the limit is")
		fs.IntVar(&g.Rounds, "rounds", 3, "rounds of adaptive and fixed concurrency")
		fs.Int64Var(&g.Seed, "seed", 1, "the mock's random seed in the first round, one more in each next round")
		fs.StringVar(&g.Variants, "variants", "adaptive,fixed", "which variants to run, in order: adaptive, fixed, told, cookbook, cookbook-half")
		fs.DurationVar(&g.Latency, "latency", 0, "the mock's answer latency")
		fs.Float64Var(&g.Sporadic429, "sporadic429", 0, "share of requests the mock answers 429 at random, whatever the limit")
		fs.Float64Var(&g.Server5xx, "server5xx", 0, "share of requests the mock answers 500 at random")
		fs.StringVar(&g.Cookbook, "cookbook", "", "path of the OpenAI cookbook's api_request_parallel_processor.py, for the cookbook variants")
		fs.StringVar(&g.Python, "python", "python3", "the Python that runs it (with aiohttp: Debian's python3-aiohttp)")
		fs.StringVar(&g.Series, "series", "", "directory for a CSV per run of successes and the concurrency limit by second")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return g.run(ctx, out)
	case "plot":
		var p plot
		fs.StringVar(&p.Dir, "series", "", "the directory goodput -series wrote")
		fs.StringVar(&p.Out, "o", "goodput.svg", "the SVG to write")
		fs.StringVar(&p.Title, "title", "goodput against a hidden rate limit", "the chart's title")
		fs.IntVar(&p.RPM, "rpm", 0, "the hidden limit, drawn as a line")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return p.run(out)
	case "cpu":
		var c cpu
		fs.IntVar(&c.Items, "items", 2000, "calls per run")
		fs.IntVar(&c.Concurrency, "concurrency", 32, "concurrency.max")
		fs.IntVar(&c.Rounds, "rounds", 3, "runs")
		fs.DurationVar(&c.Latency, "latency", 0, "the mock's answer latency")
		fs.StringVar(&c.Profile, "cpuprofile", "", "write each run's CPU profile to this path, suffixed .ROUND.MODE (the cache: on, off, file, pg; or peer-http, peer-sdk)")
		fs.StringVar(&c.Provider, "provider", "openai", "the wire format of the calls: openai or anthropic")
		fs.StringVar(&c.Cache, "cache", "on", "the response caches, in turn each round: a comma-separated list of on (the store's default), off, file (cache.dir) and pg (the database's, with -store), or both (on,off)")
		fs.StringVar(&c.Peers, "peers", "", "Go programs without tenax run beside it in the same rounds, for the ratio of tenax's CPU per call to the call's own: a comma-separated list of http (net/http and encoding/json) and sdk (the openai SDK alone); openai only")
		fs.StringVar(&c.Store, "store", "", "a postgres:// URL: the jobs, and the pg cache, in that database (default: the JSONL store in a fresh home)")
		fs.IntVar(&c.Warmup, "warmup", 500, "calls of an uncounted job of each cache mode before the rounds, so that no mode pays the process's first job; 0 for none")
		fs.Uint64Var(&c.HeapFloor, "heapfloor", 32<<20, "the heap floor in bytes the jobs run under, as the tenax command holds one unless GOGC is set; 0 for Go's own")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return c.run(ctx, out)
	case "mockserve":
		latency := fs.Duration("latency", 0, "the mock's answer latency")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return mockServe(*latency)
	case "bound":
		var b bound
		fs.IntVar(&b.Items, "items", 8000, "requests (items) per run")
		fs.IntVar(&b.RPM, "rpm", 6000, "the limit of requests per minute (a bucket refilled continuously)")
		fs.IntVar(&b.Runs, "runs", 500, "runs simulated")
		fs.DurationVar(&b.Latency, "latency", 300*time.Millisecond, "the answer latency")
		fs.Float64Var(&b.Sporadic429, "sporadic429", 0.02, "share of requests answered 429 at random")
		fs.Float64Var(&b.Server5xx, "server5xx", 0.02, "share of requests answered 500 at random")
		fs.IntVar(&b.Start, "start", 0, "requests in the bucket when the job starts")
		fs.IntVar(&b.Reserve, "reserve", 0, "requests the client leaves in the bucket")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return b.run(out)
	case "faults":
		var f faults
		fs.IntVar(&f.Items, "items", 2000, "items per run")
		fs.Float64Var(&f.Server, "server", 0.2, "share of calls the mock answers 500")
		fs.DurationVar(&f.Latency, "latency", 20*time.Millisecond, "the mock's answer latency")
		fs.IntVar(&f.Concurrency, "concurrency", 32, "concurrency.max")
		fs.DurationVar(&f.Base, "base", 50*time.Millisecond, "retry.backoff.base")
		fs.IntVar(&f.Rounds, "rounds", 3, "rounds of the clean and the faulty job")
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		return f.run(ctx, out)
	}
	return fmt.Errorf("unknown scenario %q: want goodput or faults", args[0])
}

// workDir writes a job's spec and its input, items lines of {"word": …},
// into a fresh temporary directory, and returns the spec's path.
func workDir(spec string, items int) (string, func(), error) {
	dir, err := os.MkdirTemp("", "llmbench-")
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	var b strings.Builder
	for i := range items {
		fmt.Fprintf(&b, "{\"word\": \"w%d\"}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(b.String()), 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		cleanup()
		return "", nil, err
	}
	return path, cleanup, nil
}

// quietLogger drops the job's log lines: only the figures are printed.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// loadAverage is /proc/loadavg's first three fields, noted with each run.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

// median returns the median of xs (the mean of the middle two for an even
// count).
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
