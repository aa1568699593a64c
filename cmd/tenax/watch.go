package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/web"
)

// watch is a run's web page and metrics endpoints (--ui, --metrics); its
// methods do nothing when neither was asked for.
type watch struct {
	monitor   *web.Monitor
	endpoints []*web.Endpoint
	// page is set when --ui serves a page: close says where it lives on.
	page io.Writer
}

// startWatch serves what --ui and --metrics ask for and hooks the run's
// events and prompts into it: the page can answer the breaker, racing the
// terminal's prompt when there is one.
// Its messages go to out (the run's screen, above the progress line).
func startWatch(out io.Writer, f runFlags, opts *job.Options) (*watch, error) {
	w := &watch{}
	if f.ui == "" && f.metrics == "" {
		return w, nil
	}
	reg := prometheus.NewRegistry()
	if err := registerBuild(reg); err != nil {
		return nil, err
	}
	w.monitor = web.NewMonitor(reg)
	if prev := opts.OnEvent; prev != nil {
		opts.OnEvent = func(ev engine.Event) { prev(ev); w.monitor.Observe(ev) }
	} else {
		opts.OnEvent = w.monitor.Observe
	}
	if f.ui != "" {
		cfg := web.Config{Store: opts.Store, Monitor: w.monitor, Metrics: reg}
		uiTokens(&cfg)
		ep, err := web.Listen(f.ui, cfg)
		if err != nil {
			return nil, usageErr(fmt.Errorf("--ui: %w", err))
		}
		w.endpoints = append(w.endpoints, ep)
		w.page = out
		sayPage(out, "watch the run at", ep, cfg, "")
		// Someone can answer on the page: the breaker asks rather than
		// aborts, whether or not a terminal can answer too.
		w.monitor.Prompter.OnAnswer = func(_ web.Question, answer string) {
			fmt.Fprintf(out, "\ntenax: answered on the web page: %s\n", answer)
		}
		if opts.Operator != nil {
			opts.Operator = web.Race(opts.Operator, w.monitor.Prompter)
		} else {
			opts.Operator = w.monitor.Prompter
		}
		opts.Interactive = true
	}
	if f.metrics != "" {
		ep, err := listenMetrics(out, f.metrics, reg)
		if err != nil {
			w.close()
			return nil, err
		}
		w.endpoints = append(w.endpoints, ep)
	}
	return w, nil
}

func (w *watch) start(s job.Started) {
	if w.monitor != nil {
		// A batch mode run counts its waves' requests in s.Stats: its
		// Engine only stands by for the online tail.
		stats := s.Engine.Stats
		if s.Stats != nil {
			stats = s.Stats
		}
		w.monitor.Route = metrics.RouteOf(s.Spec)
		w.monitor.Start(s.JobID, stats, s.Redact)
		if s.Stats == nil {
			// The page's Pause, Continue and Stop act on the engine.
			// A batch mode run's waves go on at the provider whatever
			// its standby engine does: the page offers none there.
			w.monitor.Attach(s.Engine)
		}
	}
}

// observeBatch adds the page to what receives a batch mode run's wave
// progress.
func (w *watch) observeBatch(opts *job.Options) {
	if w.monitor == nil {
		return
	}
	prev := opts.OnBatchProgress
	opts.OnBatchProgress = func(p batch.Progress) {
		if prev != nil {
			prev(p)
		}
		w.monitor.ObserveBatch(p)
	}
}

// end tells the pages the run is over.
func (w *watch) end() {
	if w.monitor != nil {
		w.monitor.End()
	}
}

// close lets the open pages receive the run's last state, then stops
// serving.
func (w *watch) close() {
	for _, ep := range w.endpoints {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		ep.Shutdown(ctx)
		cancel()
	}
	w.endpoints = nil
	if w.page != nil && w.monitor.JobID() != "" {
		fmt.Fprintf(w.page, "tenax: the page closed with the run; tenax ui %s serves it again from the job's records\n", w.monitor.JobID())
		w.page = nil
	}
}

var _ engine.Operator = (*web.Prompter)(nil)

// registerBuild registers tenax_build_info, this binary's version,
// revision and Go version, on reg.
func registerBuild(reg prometheus.Registerer) error {
	b := currentBuild()
	return metrics.RegisterBuild(reg, metrics.Build{Version: b.Version, Revision: b.Revision, GoVersion: b.GoVersion})
}

// serviceRegistry is the registry of a long-lived process (tenax worker,
// tenax ui): tenax_build_info, and the Go runtime's and the process's
// own metrics (memory, file descriptors), which an operator watches on a
// service.
func serviceRegistry() (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	if err := registerBuild(reg); err != nil {
		return nil, err
	}
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg, nil
}

// The variables that set the web page's tokens (--ui, tenax ui): the
// operator's, whose requests act, and the view token, whose requests see
// everything and change nothing (docs/web.md, "Two roles").
const (
	uiTokenEnv     = "TENAX_UI_TOKEN"
	uiViewTokenEnv = "TENAX_UI_VIEW_TOKEN"
)

// uiTokens sets cfg's tokens from the environment.
func uiTokens(cfg *web.Config) {
	cfg.Token, cfg.ViewToken = os.Getenv(uiTokenEnv), os.Getenv(uiViewTokenEnv)
}

// sayPage prints where the page is served, as what: with the token in the
// URL when tenax made it up, and naming the variable (not its value, which
// logs would keep) when the environment set it.
func sayPage(out io.Writer, what string, ep *web.Endpoint, cfg web.Config, after string) {
	base, _, _ := strings.Cut(ep.URL, "?")
	if cfg.Token != "" {
		fmt.Fprintf(out, "tenax: %s %s%s (the operator's token is in %s)\n", what, base, after, uiTokenEnv)
	} else {
		fmt.Fprintf(out, "tenax: %s %s%s\n", what, ep.URL, after)
	}
	if cfg.ViewToken != "" {
		fmt.Fprintf(out, "tenax: read-only view at %s?token=… (the view token in %s)\n", base, uiViewTokenEnv)
	}
}

// metricsTokenEnv names the variable that sets the bearer token of
// --metrics, so that a fleet of workers shares one scrape credential.
const metricsTokenEnv = "TENAX_METRICS_TOKEN"

// listenMetrics serves reg's /metrics on addr (--metrics) and says where
// on out. The token is $TENAX_METRICS_TOKEN when set, required on every
// address; else off loopback a random one, printed.
func listenMetrics(out io.Writer, addr string, reg prometheus.Gatherer) (*web.Endpoint, error) {
	token := os.Getenv(metricsTokenEnv)
	ep, err := web.Listen(addr, web.Config{Metrics: reg, Token: token})
	if err != nil {
		return nil, usageErr(fmt.Errorf("--metrics: %w", err))
	}
	fmt.Fprintf(out, "tenax: Prometheus metrics at %s\n", ep.MetricsURL())
	switch {
	case token != "":
		fmt.Fprintf(out, "tenax: scrape with the bearer token in %s\n", metricsTokenEnv)
	case ep.Token != "":
		fmt.Fprintf(out, "tenax: scrape with the bearer token %s\n", ep.Token)
	}
	return ep, nil
}
