package main

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
)

// routes is the goodput scenario over two routes (docs/routes.md): two
// mock deployments with hidden limits of RPM and RPM/2, the job told
// neither (no rate_limit, equal weights), each route finding its own pace
// with its own adaptive concurrency. The limit it is measured against is
// the sum, 1.5 RPM.
func (g goodput) routes(ctx context.Context, round int) (goodputRun, error) {
	limits := []int{g.RPM, g.RPM / 2}
	var servers []*mock.Server
	var urls []string
	for i, rpm := range limits {
		srv := mock.New(mock.Config{RPM: rpm, Latency: g.Latency, Seed: int64(10*round + i),
			Faults: mock.Faults{RateLimit: g.Sporadic429, Server: g.Server5xx}})
		hs := httptest.NewServer(srv)
		defer hs.Close()
		if g.Prefill {
			if err := prefill(ctx, srv, rpm, g.Latency); err != nil {
				return goodputRun{}, err
			}
		}
		servers = append(servers, srv)
		urls = append(urls, hs.URL)
	}
	spec := fmt.Sprintf(`name: goodput-routes
input: items.jsonl
task:
  type: llm
  prompt: "{{.word}}"
routes:
  - {name: a, provider: openai, base_url: %s/v1, api_key: any, model: mock-echo}
  - {name: b, provider: openai, base_url: %s/v1, api_key: any, model: mock-echo}
fallbacks: {outage: true}
concurrency: {max: %d, adaptive: true}
retry: {max_attempts: 10}
cache: {enabled: false}
`, urls[0], urls[1], g.Concurrency)
	path, cleanup, err := workDir(spec, g.Items)
	if err != nil {
		return goodputRun{}, err
	}
	defer cleanup()
	r := goodputRun{variant: "routes", limit: limits[0] + limits[1]}
	series := newSeries()
	start := time.Now()
	onEvent := func(ev engine.Event) {
		if ev.Kind == engine.ItemFinished && !ev.Record.Failed() {
			series.success(time.Since(start))
		}
	}
	var before []mock.Stats
	for _, s := range servers {
		before = append(before, s.Stats())
	}
	res, err := job.Run(ctx, path, job.Options{Home: filepath.Join(filepath.Dir(path), "home"), Logger: quietLogger(), OnEvent: onEvent})
	r.elapsed = time.Since(start)
	if err != nil {
		return goodputRun{}, err
	}
	for i, s := range servers {
		after := s.Stats()
		r.requests += after.Requests - before[i].Requests
		r.limited += after.RateLimited - before[i].RateLimited
	}
	r.succeeded, r.failed, r.pending = res.Succeeded, res.Failed, res.Pending
	if res.Summary.Stop != engine.StopNone {
		r.stop = res.Summary.StopDetail
	}
	r.calls, r.retries = res.Summary.Calls, res.Summary.Retries
	for _, rt := range res.Summary.Routes {
		r.stop += fmt.Sprintf("%s: %d ok (limit %d) ", rt.Name, rt.Succeeded, rt.Limit)
	}
	r.to90 = series.reached(0.9 * float64(r.limit) / 60)
	r.steady = series.steady()
	return r, nil
}
