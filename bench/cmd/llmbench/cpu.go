package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	pgcache "github.com/tenaxhq/tenax/cache/postgres"
	"github.com/tenaxhq/tenax/internal/heapfloor"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store/postgres"
)

// cpu measures the CPU tenax spends per LLM call: a job of Items calls at
// Concurrency against a mock served by a separate process (this binary
// re-run as `llmbench mockserve`), so the mock's own CPU is not counted.
// The figure is the job's user+system CPU (getrusage over the job.Run)
// divided by the calls; the mock reports the TCP connections it accepted.
// Provider picks the wire format: openai (chat completions) or anthropic
// (messages), both of which the mock answers.
//
// Cache is the response caches to run, in turn each round, the order
// rotated every round: a comma-separated list of "on" (the default of the
// job's store: a file cache in the home, or with Store the cache in the
// database), "off" (cache: {enabled: false}), "file" (cache.dir set: a
// file cache whatever the store) and "pg" (the cache in Store's database,
// which it needs); "both" is on,off. Every call is a miss: each round runs
// in a fresh directory, and the database's cache is cleared before each
// run. Store, a postgres:// URL, keeps the jobs in that database (opened
// once, not counted); its server's CPU is another process's and is not
// counted either. Each mode's figure is printed per round, with its ratio
// to off and to each of Peers, and the medians.
//
// Warmup is the calls of a job of each cache mode run before the rounds
// and not counted: a process's first job pays for growing the heap to its
// floor and for the SDK's first encodings (some 100–200 ms of CPU at 20 ms,
// whatever the cache), and without it the mode that runs first in round 0
// (on, with -cache both) carried that cost alone. A `tenax run` pays it
// once; the warm-up's figure is printed apart.
//
// HeapFloor is the garbage collector's heap floor the jobs run under, as
// the tenax command holds one (cmd/tenax's heapFloor, 32 MiB) unless GOGC
// is set: a job run by `tenax run` collects its heap at that floor, and
// the CPU of a call measured without it counts collections a user's run
// does not make. 0 measures under Go's own 4 MB floor.
type cpu struct {
	Items, Concurrency, Rounds int
	Latency                    time.Duration
	Profile                    string
	Provider                   string
	Cache                      string
	Warmup                     int
	HeapFloor                  uint64
	Store                      string
	// Peers are Go programs without tenax that make the same calls in
	// the same rounds (peer.go): a comma-separated list of http (net/http
	// and encoding/json) and sdk (the openai SDK alone). Each is a run of
	// its own, "peer-http" or "peer-sdk", rotated with the cache modes;
	// only the openai provider has them.
	Peers string
}

// cacheModes are the runs of a round, in order, for c.Cache and c.Peers:
// rotated by round, so that no mode always runs first.
func (c cpu) cacheModes(round int) ([]string, error) {
	list := c.Cache
	switch list {
	case "":
		list = "on"
	case "both":
		list = "on,off"
	}
	modes := strings.Split(list, ",")
	for _, m := range modes {
		switch m {
		case "on", "off", "file":
		case "pg":
			if c.Store == "" {
				return nil, fmt.Errorf("cache pg: needs -store postgres://…")
			}
		default:
			return nil, fmt.Errorf("cache %q: want on, off, file, pg (comma-separated) or both", m)
		}
	}
	if c.Peers != "" {
		if c.Provider != "" && c.Provider != "openai" {
			return nil, fmt.Errorf("peers: only the openai provider has them, not %q", c.Provider)
		}
		for _, p := range strings.Split(c.Peers, ",") {
			if peers[p] == nil {
				return nil, fmt.Errorf("peer %q: want http or sdk (comma-separated)", p)
			}
			modes = append(modes, "peer-"+p)
		}
	}
	r := round % len(modes)
	return append(modes[r:len(modes):len(modes)], modes[:r]...), nil
}

func (c cpu) run(ctx context.Context, out io.Writer) error {
	if c.Provider != "openai" && c.Provider != "anthropic" {
		return fmt.Errorf("provider %q: want openai or anthropic", c.Provider)
	}
	if _, err := c.cacheModes(0); err != nil {
		return err
	}
	floor := "Go's own (4 MB)"
	if _, set := os.LookupEnv("GOGC"); !set && c.HeapFloor > 0 {
		defer heapfloor.Hold(c.HeapFloor)()
		floor = fmt.Sprintf("%d MiB", c.HeapFloor>>20)
	}
	var st *postgres.Store
	if c.Store != "" {
		var err error
		if st, err = postgres.Open(ctx, c.Store); err != nil {
			return err
		}
		defer st.Close()
	}
	fmt.Fprintf(out, "cpu: %d calls to %s at concurrency %d, mock latency %v, cache %s, store %s, heap floor %s, load %s\n",
		c.Items, c.Provider, c.Concurrency, c.Latency, c.cacheName(), c.storeName(), floor, loadAverage())
	if err := c.warmUp(ctx, out, st); err != nil {
		return err
	}
	perCall := map[string][]float64{}
	var order []string
	for round := range c.Rounds {
		modes, _ := c.cacheModes(round)
		us := map[string]float64{}
		for _, mode := range modes {
			r, err := c.once(ctx, round, mode, st)
			if err != nil {
				return err
			}
			if _, seen := perCall[mode]; !seen {
				order = append(order, mode)
			}
			us[mode] = r.us
			perCall[mode] = append(perCall[mode], r.us)
			fmt.Fprintf(out, "round %d, %s: %d calls in %.2f s, %6.1f µs CPU per call (%.1f system), %.0f allocations and %.1f KiB allocated per call, %d connections accepted by the mock\n",
				round, modeName(mode), r.calls, r.wall.Seconds(), r.us, r.sysUs, r.allocs, r.kib, r.conns)
		}
		for _, pair := range ratioPairs(modes) {
			fmt.Fprintf(out, "round %d: %s / %s %.2fx\n", round, modeName(pair[0]), modeName(pair[1]), us[pair[0]]/us[pair[1]])
		}
	}
	for _, mode := range order {
		fmt.Fprintf(out, "median, %s: %.1f µs CPU per call\n", modeName(mode), median(perCall[mode]))
	}
	for _, pair := range ratioPairs(order) {
		fmt.Fprintf(out, "medians: %s / %s %.2fx\n", modeName(pair[0]), modeName(pair[1]), median(perCall[pair[0]])/median(perCall[pair[1]]))
	}
	return nil
}

// modeName is how a run's mode is printed: "cache on" for tenax with its
// cache on, "peer sdk" for the SDK alone.
func modeName(mode string) string {
	if p, ok := strings.CutPrefix(mode, "peer-"); ok {
		return "peer " + p
	}
	return "cache " + mode
}

// ratioPairs are the ratios a run prints, each {numerator, denominator}
// in the order of modes: every tenax run against its cache off, then every
// tenax run against each peer.
func ratioPairs(modes []string) [][2]string {
	var tenax, others []string
	for _, m := range modes {
		if strings.HasPrefix(m, "peer-") {
			others = append(others, m)
		} else {
			tenax = append(tenax, m)
		}
	}
	var pairs [][2]string
	if slices.Contains(tenax, "off") {
		for _, m := range tenax {
			if m != "off" {
				pairs = append(pairs, [2]string{m, "off"})
			}
		}
	}
	for _, m := range tenax {
		for _, p := range others {
			pairs = append(pairs, [2]string{m, p})
		}
	}
	return pairs
}

// warmUp runs c.Warmup calls in each cache mode, uncounted, and prints
// what they cost: the process's first job pays for what later jobs reuse.
func (c cpu) warmUp(ctx context.Context, out io.Writer, st *postgres.Store) error {
	if c.Warmup <= 0 {
		return nil
	}
	w := c
	w.Items, w.Profile = min(c.Warmup, c.Items), ""
	modes, _ := c.cacheModes(0)
	for _, mode := range modes {
		r, err := w.once(ctx, -1, mode, st)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "warm-up, %s (not counted): %d calls, %.1f ms CPU, %.1f µs per call\n",
			modeName(mode), r.calls, r.us*float64(r.calls)/1000, r.us)
	}
	return nil
}

func (c cpu) cacheName() string {
	if c.Cache == "" {
		return "on"
	}
	return c.Cache
}

func (c cpu) storeName() string {
	if c.Store == "" {
		return "jsonl (the home)"
	}
	return "postgres"
}

// clearSharedCache empties the cache in st's database, so that every call
// of the next run is a miss, as in a fresh home.
func clearSharedCache(ctx context.Context, st *postgres.Store) error {
	pc, err := pgcache.Open(ctx, st.Pool(), pgcache.Options{})
	if err != nil {
		return err
	}
	if _, err := pc.Clear(ctx); err != nil {
		pc.Close()
		return err
	}
	return pc.Close()
}

// cpuRound is what one round measured: CPU, allocations and bytes per
// call, the mock's connections, the calls and the wall time.
type cpuRound struct {
	us, sysUs, allocs, kib float64
	conns                  int64
	calls                  int
	wall                   time.Duration
}

func (c cpu) once(ctx context.Context, round int, mode string, st *postgres.Store) (cpuRound, error) {
	self, err := os.Executable()
	if err != nil {
		return cpuRound{}, err
	}
	srv := exec.CommandContext(ctx, self, "mockserve", "-latency", c.Latency.String())
	stdin, err := srv.StdinPipe()
	if err != nil {
		return cpuRound{}, err
	}
	stdout, err := srv.StdoutPipe()
	if err != nil {
		return cpuRound{}, err
	}
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return cpuRound{}, err
	}
	defer srv.Wait() //nolint:errcheck // the figures come from its stdout
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		stdin.Close()
		return cpuRound{}, fmt.Errorf("mockserve said nothing: %v", lines.Err())
	}
	addr := lines.Text()
	baseURL := "http://" + addr + "/v1"
	if c.Provider == "anthropic" {
		baseURL = "http://" + addr // the SDK adds /v1/messages
	}

	work, err := c.work(ctx, mode, baseURL, st)
	if err != nil {
		stdin.Close()
		return cpuRound{}, err
	}
	defer work.cleanup()
	if c.Profile != "" {
		f, err := os.Create(fmt.Sprintf("%s.%d.%s", c.Profile, round, mode))
		if err != nil {
			stdin.Close()
			return cpuRound{}, err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			stdin.Close()
			return cpuRound{}, err
		}
		defer pprof.StopCPUProfile()
	}
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	before, sysBefore := cpuTime(), sysTime()
	start := time.Now()
	calls, err := work.run(ctx)
	wall := time.Since(start)
	used, sysUsed := cpuTime()-before, sysTime()-sysBefore
	runtime.ReadMemStats(&m1)
	stdin.Close() // mockserve prints its connection count and exits
	if err != nil {
		return cpuRound{}, err
	}
	var conns int64
	if lines.Scan() {
		fmt.Sscan(lines.Text(), &conns)
	}
	n := float64(calls)
	return cpuRound{us: float64(used.Microseconds()) / n, sysUs: float64(sysUsed.Microseconds()) / n, allocs: float64(m1.Mallocs-m0.Mallocs) / n,
		kib: float64(m1.TotalAlloc-m0.TotalAlloc) / 1024 / n, conns: conns, calls: calls, wall: wall}, nil
}

// cpuWork is the measured part of a run, and what it leaves to remove.
type cpuWork struct {
	run     func(ctx context.Context) (calls int, err error)
	cleanup func()
}

// work prepares mode's run against the mock at baseURL, outside the
// measurement: a tenax job (its directory, its spec for the cache mode,
// the database's cache cleared) or a peer.
func (c cpu) work(ctx context.Context, mode, baseURL string, st *postgres.Store) (cpuWork, error) {
	if p, ok := strings.CutPrefix(mode, "peer-"); ok {
		peer := peers[p]
		return cpuWork{
			run: func(ctx context.Context) (int, error) {
				calls, err := peer(ctx, c, baseURL)
				if err != nil {
					return 0, fmt.Errorf("peer %s: %w", p, err)
				}
				return calls, nil
			},
			cleanup: func() {},
		}, nil
	}
	spec := fmt.Sprintf(`name: cpu
input: items.jsonl
task:
  type: llm
  provider: %s
  base_url: %s
  api_key: any
  model: mock-echo
  prompt: "%s{{.word}}"
concurrency: {max: %d}
`, c.Provider, baseURL, cpuPrompt, c.Concurrency)
	switch mode {
	case "off":
		spec += "cache: {enabled: false}\n"
	case "file":
		spec += "cache: {dir: cache}\n"
	}
	opts := job.Options{Logger: quietLogger()}
	if st != nil {
		opts.Store = st
		if err := clearSharedCache(ctx, st); err != nil {
			return cpuWork{}, err
		}
	}
	path, cleanup, err := workDir(spec, c.Items)
	if err != nil {
		return cpuWork{}, err
	}
	opts.Home = filepath.Join(filepath.Dir(path), "home")
	return cpuWork{
		run: func(ctx context.Context) (int, error) {
			res, err := job.Run(ctx, path, opts)
			if err != nil {
				return 0, err
			}
			if res.Summary.Calls == 0 {
				return 0, fmt.Errorf("the job made no calls: %+v", res.Summary)
			}
			return res.Summary.Calls, nil
		},
		cleanup: cleanup,
	}, nil
}

// sysTime is this process's system CPU so far: the kernel's work in its
// syscalls (loopback TCP's, an fsync's) and page faults.
func sysTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Stime.Nano())
}

// cpuTime is this process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// mockServe serves a mock on a loopback port: it prints the address,
// serves until its stdin closes, then prints the connections it accepted.
func mockServe(latency time.Duration) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var accepted atomic.Int64
	hs := &http.Server{
		Handler: mock.New(mock.Config{Latency: latency}),
		ConnState: func(_ net.Conn, s http.ConnState) {
			if s == http.StateNew {
				accepted.Add(1)
			}
		},
	}
	go hs.Serve(ln) //nolint:errcheck // closed below
	fmt.Println(ln.Addr().String())
	io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF or an error both mean stop
	hs.Close()
	fmt.Println(strings.TrimSpace(fmt.Sprint(accepted.Load())))
	return nil
}
