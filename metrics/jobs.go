package metrics

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/spec"
)

// Route is what served a job's calls, as the call-level series label it:
// the task's provider (llm) or type (exec, http) and model, and for a
// spec with routes each route's by its name.
type Route struct {
	Provider, Model string
	// ByName are the spec's routes (docs/routes.md) by name: a call the
	// engine made on one is labelled with its route, provider and model.
	ByName map[string]Route
}

// RouteOf returns the route of s's task, with its routes by name.
func RouteOf(s *spec.Spec) Route {
	if s == nil {
		return Route{}
	}
	if s.Task.Type != "llm" && s.Task.Type != "" {
		return Route{Provider: s.Task.Type}
	}
	r := Route{Provider: s.Task.Provider, Model: s.Task.Model}
	if len(s.Routes) > 0 {
		r.ByName = make(map[string]Route, len(s.Routes))
		for _, sr := range s.Routes {
			r.ByName[sr.Name] = Route{Provider: sr.Provider, Model: sr.Model}
		}
	}
	return r
}

// Buckets of the latency histograms, in seconds: from a cached or local
// answer (10 ms) to a long generation or an item's many retries (5 min).
var (
	callBuckets = []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	itemBuckets = callBuckets
)

// Jobs are the Prometheus metrics of the jobs one process runs, each
// series labelled with its job's id. Add a job when its engine exists,
// then give its Job every engine event (Observe).
type Jobs struct {
	items        *prometheus.CounterVec
	callErrors   *prometheus.CounterVec
	rateLimited  *prometheus.CounterVec
	retries      *prometheus.CounterVec
	heals        *prometheus.CounterVec
	cooldown     *prometheus.CounterVec
	itemDuration *prometheus.HistogramVec
	callDuration *prometheus.HistogramVec

	mu   sync.Mutex
	jobs map[string]*Job
}

// NewJobs registers the jobs' metrics on reg (never the global registry:
// two runs in one process must not collide).
func NewJobs(reg prometheus.Registerer) *Jobs {
	call := []string{"job_id", "route", "provider", "model", "class"}
	js := &Jobs{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_items_total",
			Help: "Items finished, by outcome (succeeded, failed) and failure class (none for successes).",
		}, []string{"job_id", "outcome", "class"}),
		callErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_call_errors_total",
			Help: "Calls of the task that failed, by error class (a 429 is retryable; invalid is an output that failed validation).",
		}, call),
		rateLimited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_rate_limited_total",
			Help: "Calls answered with HTTP 429 (rate limited), by the class tenax gave them (retryable; fatal for a spent quota).",
		}, call),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_retries_total",
			Help: "Calls retried after a retryable error, by the class of that error.",
		}, []string{"job_id", "class"}),
		heals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_heal_reasks_total",
			Help: "Re-asks with feedback after an invalid output.",
		}, []string{"job_id"}),
		cooldown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_cooldown_seconds_total",
			Help: "Seconds during which dispatch to the provider was paused by a cooldown (429 hints, exhausted rate-limit headers); overlapping cooldowns count once.",
		}, []string{"job_id"}),
		itemDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenax_item_duration_seconds",
			Help:    "Wall time from an item's dispatch to its final record, every call, backoff and re-ask included.",
			Buckets: itemBuckets,
		}, []string{"job_id"}),
		callDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "tenax_call_duration_seconds",
			Help:    "Latency of each call of the task (not cache hits), by the class tenax gave its outcome (none for an answer recorded, invalid for one that failed validation).",
			Buckets: callBuckets,
		}, call),
		jobs: map[string]*Job{},
	}
	reg.MustRegister(js.items, js.callErrors, js.rateLimited, js.retries, js.heals, js.cooldown,
		js.itemDuration, js.callDuration, statsCollector{js})
	return js
}

// Add starts counting job id, whose calls go to route; stats reads its
// engine's counters at scrape time. Adding an id again (a worker that
// takes a resumed job up anew) keeps its counts and reads the new stats.
func (js *Jobs) Add(id string, route Route, stats func() engine.Stats) *Job {
	js.mu.Lock()
	defer js.mu.Unlock()
	j := js.jobs[id]
	if j == nil {
		j = &Job{js: js, id: id}
		js.jobs[id] = j
	}
	j.mu.Lock()
	j.stats = stats
	j.mu.Unlock()
	hot := &hotSeries{
		route:     route,
		succeeded: js.items.WithLabelValues(id, "succeeded", "none"),
		items:     js.itemDuration.WithLabelValues(id),
	}
	if len(route.ByName) == 0 {
		// A job over routes labels its answers by route, not this one.
		hot.answered = js.callDuration.WithLabelValues(id, "", route.Provider, route.Model, "none")
	}
	j.hot.Store(hot)
	return j
}

// Job counts one job's events. Its methods are safe for concurrent use.
type Job struct {
	js  *Jobs
	id  string
	hot atomic.Pointer[hotSeries]

	mu    sync.Mutex
	stats func() engine.Stats
	// cooldownEnd is the end of the latest cooldown, so that overlapping
	// cooldowns are counted once.
	cooldownEnd time.Time
}

// hotSeries are a job's route and the series every item touches, looked
// up once: the success path of Observe takes no lock and hashes no label.
type hotSeries struct {
	route     Route
	succeeded prometheus.Counter
	answered  prometheus.Observer // calls whose answer was recorded; nil over routes
	items     prometheus.Observer
}

// Observe counts what ev tells: it is the job's engine.Config.OnEvent (or
// part of it). A call's error is counted from its CallEnded, so a failed
// call is counted once whether it was retried, re-asked or recorded.
func (j *Job) Observe(ev engine.Event) {
	js := j.js
	switch ev.Kind {
	case engine.CallEnded:
		j.call(ev)
	case engine.ItemRetry:
		js.retries.WithLabelValues(j.id, ev.Decision.Class.String()).Inc()
	case engine.ItemHeal:
		js.heals.WithLabelValues(j.id).Inc()
	case engine.ItemFinished:
		rec := &ev.Record
		if rec.Failed() {
			js.items.WithLabelValues(j.id, "failed", rec.Class.String()).Inc()
		} else {
			j.hot.Load().succeeded.Inc()
		}
		j.hot.Load().items.Observe(float64(rec.DurationMS) / 1000)
	case engine.Cooldown:
		j.mu.Lock()
		from := ev.Time
		if j.cooldownEnd.After(from) {
			from = j.cooldownEnd
		}
		var add float64
		if ev.Until.After(from) {
			add = ev.Until.Sub(from).Seconds()
			j.cooldownEnd = ev.Until
		}
		j.mu.Unlock()
		js.cooldown.WithLabelValues(j.id).Add(add)
	}
}

// call counts one call: its latency, and its error and 429 when it
// failed.
func (j *Job) call(ev engine.Event) {
	hot := j.hot.Load()
	if ev.Decision.Class == classify.Unknown && hot.answered != nil && ev.Route == "" {
		hot.answered.Observe(ev.Elapsed.Seconds())
		return
	}
	r, class := hot.route, ev.Decision.Class.String()
	if ev.Decision.Class == classify.Unknown {
		// An answer that was recorded: docs/metrics.md's class "none",
		// on a routed job's series as on the others.
		class = "none"
	}
	if on, ok := r.ByName[ev.Route]; ok {
		r = on
	}
	labels := []string{j.id, ev.Route, r.Provider, r.Model, class}
	j.js.callDuration.WithLabelValues(labels...).Observe(ev.Elapsed.Seconds())
	if ev.Decision.Class == classify.Unknown {
		return
	}
	j.js.callErrors.WithLabelValues(labels...).Inc()
	if httpStatus(ev.Err) == 429 {
		j.js.rateLimited.WithLabelValues(labels...).Inc()
	}
}

func httpStatus(err error) int {
	var sc classify.StatusCoder
	if errors.As(err, &sc) {
		return sc.HTTPStatus()
	}
	return 0
}

// The series read from engine.Stats at scrape time.
var (
	callsDesc = prometheus.NewDesc("tenax_calls_total",
		"Calls of the task (each attempt and each re-ask is one call; cache hits are none).", []string{"job_id"}, nil)
	inputTokensDesc = prometheus.NewDesc("tenax_input_tokens_total",
		"Input (prompt) tokens reported by the provider.", []string{"job_id"}, nil)
	outputTokensDesc = prometheus.NewDesc("tenax_output_tokens_total",
		"Output (completion) tokens reported by the provider.", []string{"job_id"}, nil)
	costDesc = prometheus.NewDesc("tenax_cost_usd_total",
		"Cost of the calls in US dollars, from the model's prices.", []string{"job_id"}, nil)
	tripsDesc = prometheus.NewDesc("tenax_breaker_trips_total",
		"Times the circuit breaker opened from closed.", []string{"job_id"}, nil)
	inFlightDesc = prometheus.NewDesc("tenax_in_flight",
		"Calls under way (items waiting out a backoff are not counted).", []string{"job_id"}, nil)
	limitDesc = prometheus.NewDesc("tenax_concurrency_limit",
		"The current concurrency limit (adaptive concurrency moves it).", []string{"job_id"}, nil)
	plannedDesc = prometheus.NewDesc("tenax_items_planned",
		"Items this process means to finish (a worker: none planned, 0).", []string{"job_id"}, nil)
	breakerDesc = prometheus.NewDesc("tenax_breaker_state",
		"The circuit breaker's state: 1 for the current state, 0 for the others.", []string{"job_id", "state"}, nil)
	pausedDesc = prometheus.NewDesc("tenax_paused",
		"1 while an operator's pause holds the job (tenax pause, the page's Pause): no new call starts; 0 otherwise.", []string{"job_id"}, nil)

	// Each named route's own counters (a job without routes has none:
	// the job's series above are its one route's).
	routeRefusedDesc = prometheus.NewDesc("tenax_route_refused_total",
		"Calls the route's open (or half-open, probe out) breaker refused, each sent back to choose a route again.", []string{"job_id", "route"}, nil)
	routeFaultsDesc = prometheus.NewDesc("tenax_route_faults_total",
		"Calls on the route that failed as an outage or a fatal error (a 5xx, a dropped connection, a wrong key): the failures its breaker counts.", []string{"job_id", "route"}, nil)
	routeInFlightDesc = prometheus.NewDesc("tenax_route_in_flight",
		"Calls under way on the route.", []string{"job_id", "route"}, nil)
	routeLimitDesc = prometheus.NewDesc("tenax_route_concurrency_limit",
		"The route's current concurrency limit (0 for a route without a gate of its own).", []string{"job_id", "route"}, nil)
	routeBreakerDesc = prometheus.NewDesc("tenax_route_breaker_state",
		"The route's circuit breaker state: 1 for the current state, 0 for the others.", []string{"job_id", "route", "state"}, nil)
)

// breakerStates are the states a breaker gauge has a series for.
var breakerStates = []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen}

// statsCollector reads each job's engine counters at scrape time.
type statsCollector struct{ js *Jobs }

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{callsDesc, inputTokensDesc, outputTokensDesc, costDesc, tripsDesc, inFlightDesc, limitDesc, plannedDesc, breakerDesc, pausedDesc,
		routeRefusedDesc, routeFaultsDesc, routeInFlightDesc, routeLimitDesc, routeBreakerDesc} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	type read struct {
		id    string
		stats func() engine.Stats
	}
	c.js.mu.Lock()
	jobs := make([]read, 0, len(c.js.jobs))
	for id, j := range c.js.jobs {
		j.mu.Lock()
		jobs = append(jobs, read{id, j.stats})
		j.mu.Unlock()
	}
	c.js.mu.Unlock()
	// The engines are read outside every lock of ours.
	for _, j := range jobs {
		if j.stats == nil {
			continue
		}
		s := j.stats()
		counter := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, j.id)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, j.id)
		}
		counter(callsDesc, float64(s.Calls))
		counter(inputTokensDesc, float64(s.Usage.InputTokens))
		counter(outputTokensDesc, float64(s.Usage.OutputTokens))
		counter(costDesc, s.CostUSD)
		counter(tripsDesc, float64(s.Trips))
		gauge(inFlightDesc, float64(s.InFlight))
		gauge(limitDesc, float64(s.Limit))
		gauge(plannedDesc, float64(s.Planned))
		paused := 0.0
		if s.Hold != nil {
			paused = 1
		}
		gauge(pausedDesc, paused)
		for _, st := range breakerStates {
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, oneIf(st == s.Breaker), j.id, st.String())
		}
		collectRoutes(ch, j.id, s.Routes)
	}
}

// collectRoutes sends the series of each named route of a job.
func collectRoutes(ch chan<- prometheus.Metric, id string, routes []engine.RouteStats) {
	for _, r := range routes {
		if r.Name == "" {
			continue // the implicit route: the job's own series say it all
		}
		ch <- prometheus.MustNewConstMetric(routeRefusedDesc, prometheus.CounterValue, float64(r.Refused), id, r.Name)
		ch <- prometheus.MustNewConstMetric(routeFaultsDesc, prometheus.CounterValue, float64(r.Faults), id, r.Name)
		ch <- prometheus.MustNewConstMetric(routeInFlightDesc, prometheus.GaugeValue, float64(r.InFlight), id, r.Name)
		ch <- prometheus.MustNewConstMetric(routeLimitDesc, prometheus.GaugeValue, float64(r.Limit), id, r.Name)
		for _, st := range breakerStates {
			ch <- prometheus.MustNewConstMetric(routeBreakerDesc, prometheus.GaugeValue, oneIf(st == r.Breaker), id, r.Name, st.String())
		}
	}
}

// oneIf is a gauge's 1 for true, 0 for false.
func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
