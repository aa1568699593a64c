package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
)

// goodput is the hidden-rate-limit scenario: Items requests to a mock
// provider that refuses, with 429, every request its bucket of RPM
// requests (refilled continuously at RPM a minute) cannot hold, from a
// job that configures no rate limit and lets adaptive (or fixed)
// concurrency find the pace.
type goodput struct {
	Items, RPM, Concurrency, Rounds int
	// Seed is the mock's random seed in the first round, Seed+1 in the
	// second...: which requests meet a fault, and so the retry tail of a
	// run, follows it.
	Seed    int64
	Prefill bool
	// NoHeaders strips the x-ratelimit-* headers from every answer, as an
	// OpenAI-compatible server behind a rate-limiting proxy may: then only
	// the 429s tell adaptive concurrency where the limit is.
	NoHeaders bool
	Variants  string
	// Latency is the mock's answer time; Sporadic429 and Server5xx are the
	// shares of requests it answers 429 (with Retry-After: 1, whatever the
	// limit) and 500 at random.
	Latency                time.Duration
	Sporadic429, Server5xx float64
	// Cookbook is the path of the OpenAI cookbook's
	// api_request_parallel_processor.py for the cookbook variants, and
	// Python the interpreter that has aiohttp.
	Cookbook, Python string
	// Series, when set, is a directory that receives one CSV per run:
	// second, successes in that second, the concurrency limit.
	Series string
}

// goodputRun is what one run measured.
type goodputRun struct {
	variant            string
	elapsed            time.Duration
	succeeded, failed  int
	pending            int
	stop               string // why the run stopped early, "" when it ran to the end
	calls, retries     int
	requests, limited  int64 // seen by the mock during the job
	cooldowns          int   // Cooldown events: dispatch paused
	decreases, minimum int   // adaptive limit halvings, lowest limit
	final              int   // the concurrency limit at the end
	// to90 is how long the run took to first finish, in one second, 90% of
	// the limit's requests per second; 0 if it never did.
	to90 time.Duration
	// steady is the median successes per second over the middle 80% of
	// the run.
	steady float64
	// limit is the limit the run is measured against, when not the
	// scenario's RPM (the routes variant: the sum of its routes').
	limit int
	// unused is the median request count the provider's answers said
	// remained in its bucket over the middle 80% of the run: quota the
	// run leaves unspent, -1 when not measured or the mock's answers
	// carried none.
	unused float64
}

// limitRPM is the limit r is measured against.
func (g goodput) limitRPM(r goodputRun) float64 {
	if r.limit > 0 {
		return float64(r.limit)
	}
	return float64(g.RPM)
}

func (r goodputRun) perMinute() float64 { return float64(r.succeeded) / r.elapsed.Minutes() }

func (r goodputRun) share429() float64 {
	if r.requests == 0 {
		return 0
	}
	return float64(r.limited) / float64(r.requests)
}

func (g goodput) run(ctx context.Context, out io.Writer) error {
	variants := strings.Split(g.Variants, ",")
	fmt.Fprintf(out, "goodput: %d requests, hidden limit %d rpm, latency %v, sporadic 429s %.0f%%, 5xx %.0f%%, concurrency max %d, prefill %v, rate-limit headers %v\n",
		g.Items, g.RPM, g.Latency, 100*g.Sporadic429, 100*g.Server5xx, g.Concurrency, g.Prefill, !g.NoHeaders)
	fmt.Fprintf(out, "%-5s %-13s %8s %5s %6s %7s %9s %6s %7s %7s %6s %6s %9s %9s %4s %5s %6s %7s %6s  %-22s %s\n",
		"round", "variant", "seconds", "ok", "failed", "pending", "ok/min", "limit%", "calls", "mockreq", "429s", "429%", "cooldowns", "decreases", "min", "final", "to90%", "steady%", "unused", "load", "stop")
	byVariant := map[string][]goodputRun{}
	for round := 1; round <= g.Rounds; round++ {
		for _, v := range variants {
			load := loadAverage()
			r, err := g.once(ctx, v, round)
			if err != nil {
				return fmt.Errorf("%s: %w", v, err)
			}
			byVariant[v] = append(byVariant[v], r)
			fmt.Fprintf(out, "%-5d %-13s %8.2f %5d %6d %7d %9.0f %5.1f%% %7d %7d %6d %5.1f%% %9d %9d %4d %5d %5.1fs %6.1f%% %6.0f  %-22s %s\n",
				round, v, r.elapsed.Seconds(), r.succeeded, r.failed, r.pending, r.perMinute(), 100*r.perMinute()/g.limitRPM(r),
				r.calls, r.requests, r.limited, 100*r.share429(), r.cooldowns, r.decreases, r.minimum, r.final, r.to90.Seconds(), 100*r.steady*60/g.limitRPM(r), r.unused, load, r.stop)
		}
	}
	fmt.Fprintln(out)
	for _, v := range variants {
		var perMin, share, secs, to90, steady, unused []float64
		lim := float64(g.RPM)
		for _, r := range byVariant[v] {
			lim = g.limitRPM(r)
			steady = append(steady, r.steady)
			perMin = append(perMin, r.perMinute())
			share = append(share, r.share429())
			secs = append(secs, r.elapsed.Seconds())
			to90 = append(to90, r.to90.Seconds())
			unused = append(unused, r.unused)
		}
		fmt.Fprintf(out, "median %-13s %8.2f s  %6.0f ok/min = %5.1f%% of the limit (steady %5.1f%%)  429s %5.1f%% of requests  90%% of the limit after %.1f s  unused %.0f\n",
			v, median(secs), median(perMin), 100*median(perMin)/lim, 100*median(steady)*60/lim, 100*median(share), median(to90), median(unused))
	}
	return nil
}

// once runs one job against a fresh mock server.
//
// Variants: adaptive (concurrency.adaptive, told nothing), fixed
// (concurrency.max, told nothing), told (adaptive, and
// rate_limit.requests_per_minute set to the exact limit), cookbook and
// cookbook-half (the OpenAI cookbook's parallel processor told the exact
// limit, or half of it).
func (g goodput) once(ctx context.Context, variant string, round int) (goodputRun, error) {
	var adaptive bool
	rateLimit := ""
	switch variant {
	case "adaptive":
		adaptive = true
	case "fixed":
	case "told":
		adaptive = true
		rateLimit = fmt.Sprintf("rate_limit: {requests_per_minute: %d}\n", g.RPM)
	case "cookbook", "cookbook-half":
	case "routes":
		r, err := g.routes(ctx, round)
		r.unused = -1 // not measured
		return r, err
	default:
		return goodputRun{}, fmt.Errorf("unknown variant %q: want adaptive, fixed, told, cookbook, cookbook-half or routes", variant)
	}
	srv := mock.New(mock.Config{RPM: g.RPM, Latency: g.Latency, Seed: g.Seed + int64(round) - 1,
		Faults: mock.Faults{RateLimit: g.Sporadic429, Server: g.Server5xx}})
	// The cookbook's script accepts only https:// URLs.
	cook := strings.HasPrefix(variant, "cookbook")
	left := &remainingLog{}
	var h http.Handler = left.wrap(srv)
	if g.NoHeaders {
		h = stripRateLimitHeaders(h)
	}
	var hs *httptest.Server
	if cook {
		hs = httptest.NewTLSServer(h)
	} else {
		hs = httptest.NewServer(h)
	}
	defer hs.Close()
	if g.Prefill {
		if err := prefill(ctx, srv, g.RPM, g.Latency); err != nil {
			return goodputRun{}, err
		}
	}
	if cook {
		rpm := g.RPM
		if variant == "cookbook-half" {
			rpm /= 2
		}
		r, err := g.cookbook(ctx, variant, srv, hs, rpm)
		r.unused = -1 // not measured
		return r, err
	}
	spec := fmt.Sprintf(`name: goodput-%s
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: any
  model: mock-echo
  prompt: "{{.word}}"
concurrency: {max: %d, adaptive: %v}
retry: {max_attempts: 10}
%scache: {enabled: false}
`, variant, hs.URL, g.Concurrency, adaptive, rateLimit)
	path, cleanup, err := workDir(spec, g.Items)
	if err != nil {
		return goodputRun{}, err
	}
	defer cleanup()

	r := goodputRun{variant: variant, minimum: g.Concurrency}
	var mu sync.Mutex
	series := newSeries()
	start := time.Now()
	onEvent := func(ev engine.Event) {
		switch ev.Kind {
		case engine.Cooldown:
			mu.Lock()
			r.cooldowns++
			mu.Unlock()
		case engine.ItemFinished:
			if !ev.Record.Failed() {
				series.success(time.Since(start))
			}
		case engine.ConcurrencyChanged:
			mu.Lock()
			if ev.Limit < r.final {
				r.decreases++
			}
			r.final = ev.Limit
			r.minimum = min(r.minimum, ev.Limit)
			mu.Unlock()
			series.limit(time.Since(start), ev.Limit)
		}
	}
	r.final = g.Concurrency
	if adaptive {
		r.final = min(4, g.Concurrency) // concurrency.initial's default
		r.minimum = r.final
	}
	series.limit(0, r.final)
	before := srv.Stats()
	left.reset(start)
	res, err := job.Run(ctx, path, job.Options{Home: filepath.Join(filepath.Dir(path), "home"), Logger: quietLogger(), OnEvent: onEvent})
	r.elapsed = time.Since(start)
	if err != nil {
		return goodputRun{}, err
	}
	after := srv.Stats()
	mu.Lock()
	defer mu.Unlock()
	r.succeeded, r.failed, r.pending = res.Succeeded, res.Failed, res.Pending
	if res.Summary.Stop != engine.StopNone {
		r.stop = res.Summary.StopDetail
	}
	r.calls, r.retries = res.Summary.Calls, res.Summary.Retries
	r.requests = after.Requests - before.Requests
	r.limited = after.RateLimited - before.RateLimited
	r.to90 = series.reached(0.9 * float64(g.RPM) / 60)
	r.steady = series.steady()
	r.unused = left.median(r.elapsed)
	if g.Series != "" {
		if err := series.write(filepath.Join(g.Series, fmt.Sprintf("%s-%d.csv", variant, round))); err != nil {
			return goodputRun{}, err
		}
	}
	return r, nil
}

// remainingLog records the request count the mock's answers say remains
// in its bucket, by when the request came: what a run leaves unspent.
type remainingLog struct {
	mu    sync.Mutex
	start time.Time
	at    []time.Duration
	left  []float64
}

// reset forgets what came before start (the prefill's answers).
func (l *remainingLog) reset(start time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.start, l.at, l.left = start, nil, nil
}

func (l *remainingLog) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		came := time.Since(l.start)
		l.mu.Unlock()
		h.ServeHTTP(w, r)
		// The header map outlives the answer: read what the mock set.
		n, err := strconv.Atoi(w.Header().Get("x-ratelimit-remaining-requests"))
		if err != nil {
			return
		}
		l.mu.Lock()
		l.at, l.left = append(l.at, came), append(l.left, float64(n))
		l.mu.Unlock()
	})
}

// median is the median remaining count of the requests that came in the
// middle 80% of a run of elapsed, -1 without any.
func (l *remainingLog) median(elapsed time.Duration) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var xs []float64
	for i, at := range l.at {
		if at >= elapsed/10 && at <= elapsed-elapsed/10 {
			xs = append(xs, l.left[i])
		}
	}
	if len(xs) == 0 {
		return -1
	}
	return median(xs)
}

// prefill empties the mock's request bucket, as a client that has been
// sending at the limit would leave it: it sends requests, many at a time
// (the mock's latency applies to them too), until a 429 says no request
// remains. A sporadic 429 (the -sporadic429 faults) comes with room left
// and does not end it. A job started right after it meets the limit in
// its steady state, one request refilled every minute/rpm, instead of a
// full bucket that would admit rpm requests at once.
func prefill(ctx context.Context, srv *mock.Server, rpm int, latency time.Duration) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	client := srv.Client()
	var sent sync.WaitGroup
	var n atomic.Int64
	// Enough senders to outrun the refill: twice what the limit keeps in
	// flight at the mock's latency.
	senders := 256 + int(2*float64(rpm)/60*latency.Seconds())
	for range senders {
		sent.Go(func() {
			for ctx.Err() == nil {
				if n.Add(1) > int64(2*rpm+1) {
					cancel(fmt.Errorf("prefill: %d requests and the mock's limit of %d rpm never said none remains", 2*rpm+1, rpm))
					return
				}
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://mock/v1/chat/completions",
					strings.NewReader(`{"model":"mock-echo","messages":[{"role":"user","content":"prefill"}]}`))
				if err != nil {
					cancel(err)
					return
				}
				req.Header.Set("Authorization", "Bearer any")
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					cancel(fmt.Errorf("prefill: %w", err))
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("x-ratelimit-remaining-requests") == "0" {
					cancel(errPrefilled)
					return
				}
			}
		})
	}
	sent.Wait()
	if err := context.Cause(ctx); !errors.Is(err, errPrefilled) {
		return err
	}
	return nil
}

var errPrefilled = errors.New("the mock's request bucket is empty")

// stripRateLimitHeaders serves h with the x-ratelimit-* headers taken out
// of every answer; Retry-After stays.
func stripRateLimitHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&headerStripper{ResponseWriter: w}, r)
	})
}

// headerStripper deletes the rate-limit headers just before they are sent.
type headerStripper struct {
	http.ResponseWriter
	wrote bool
}

func (s *headerStripper) WriteHeader(code int) {
	if !s.wrote {
		s.wrote = true
		for k := range s.Header() {
			if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
				s.Header().Del(k)
			}
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *headerStripper) Write(b []byte) (int, error) {
	if !s.wrote {
		s.WriteHeader(http.StatusOK)
	}
	return s.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the real writer (Flush).
func (s *headerStripper) Unwrap() http.ResponseWriter { return s.ResponseWriter }
