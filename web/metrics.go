package web

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
)

// Metrics are a run's Prometheus metrics. Counters that the engine already
// keeps (calls, tokens, cost, trips) and its gauges (in flight, the
// concurrency limit, the breaker's state) are read from engine.Stats at
// scrape time, so they match the progress line exactly; what only events
// tell (outcomes by class, failed calls, retries, 429s, cooldowns, item
// durations) is counted by Observe.
//
// Every metric is registered on the registry given to NewMetrics, never on
// the global one, so that two runs in one process (tests, a library user)
// never collide.
type Metrics struct {
	items      *prometheus.CounterVec
	succeeded  prometheus.Counter // items{succeeded,none}: every success
	callErrors *prometheus.CounterVec
	retries    *prometheus.CounterVec
	heals      prometheus.Counter
	rateLimits prometheus.Counter
	cooldown   prometheus.Counter
	duration   prometheus.Histogram

	// cooldownEnd is the end of the latest cooldown, so that overlapping
	// cooldowns are counted once. Observe runs on the engine's goroutines:
	// it is guarded by the Monitor's lock.
	cooldownEnd time.Time
}

// NewMetrics registers tenax's metrics on reg. stats reads the run's
// counters at scrape time; it may return the zero Stats before the run
// starts.
func NewMetrics(reg prometheus.Registerer, stats func() engine.Stats) *Metrics {
	m := &Metrics{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_items_total",
			Help: "Items finished by this run, by outcome (succeeded, failed) and failure class (none for successes).",
		}, []string{"outcome", "class"}),
		callErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_call_errors_total",
			Help: "Calls of the task that failed, by error class (a 429 is retryable; invalid is an output that failed validation).",
		}, []string{"class"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tenax_retries_total",
			Help: "Calls retried after a retryable error, by the class of that error.",
		}, []string{"class"}),
		heals: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenax_heal_reasks_total",
			Help: "Re-asks with feedback after an invalid output.",
		}),
		rateLimits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenax_rate_limited_total",
			Help: "Calls answered with HTTP 429 (rate limited).",
		}),
		cooldown: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tenax_cooldown_seconds_total",
			Help: "Seconds during which dispatch to the provider was paused by a cooldown (429 hints, exhausted rate-limit headers); overlapping cooldowns count once.",
		}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "tenax_item_duration_seconds",
			Help:    "Wall time from an item's dispatch to its final record, every call, backoff and re-ask included.",
			Buckets: []float64{.01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}),
	}
	m.succeeded = m.items.WithLabelValues("succeeded", "none")
	s := stats
	reg.MustRegister(m.items, m.callErrors, m.retries, m.heals, m.rateLimits, m.cooldown, m.duration,
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_calls_total",
			Help: "Calls of the task (each attempt and each re-ask is one call; cache hits are none).",
		}, func() float64 { return float64(s().Calls) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_input_tokens_total",
			Help: "Input (prompt) tokens reported by the provider.",
		}, func() float64 { return float64(s().Usage.InputTokens) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_output_tokens_total",
			Help: "Output (completion) tokens reported by the provider.",
		}, func() float64 { return float64(s().Usage.OutputTokens) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_cost_usd_total",
			Help: "Cost of the calls in US dollars, from the model's prices.",
		}, func() float64 { return s().CostUSD }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_breaker_trips_total",
			Help: "Times the circuit breaker opened from closed.",
		}, func() float64 { return float64(s().Trips) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenax_in_flight",
			Help: "Calls under way (items waiting out a backoff are not counted).",
		}, func() float64 { return float64(s().InFlight) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenax_concurrency_limit",
			Help: "The current concurrency limit (adaptive concurrency moves it).",
		}, func() float64 { return float64(s().Limit) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenax_items_planned",
			Help: "Items this run means to finish.",
		}, func() float64 { return float64(s().Planned) }),
		breakerCollector{stats: s},
	)
	return m
}

var breakerDesc = prometheus.NewDesc("tenax_breaker_state",
	"The circuit breaker's state: 1 for the current state, 0 for the others.", []string{"state"}, nil)

// breakerCollector exposes the breaker's state as one gauge per state, the
// Prometheus convention for an enumeration.
type breakerCollector struct{ stats func() engine.Stats }

func (c breakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- breakerDesc }

func (c breakerCollector) Collect(ch chan<- prometheus.Metric) {
	cur := c.stats().Breaker
	for _, st := range []breaker.State{breaker.Closed, breaker.Open, breaker.HalfOpen} {
		v := 0.0
		if st == cur {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, v, st.String())
	}
}

// observe counts what ev tells. The caller serializes calls.
func (m *Metrics) observe(ev engine.Event) {
	switch ev.Kind {
	case engine.ItemRetry:
		class := ev.Decision.Class.String()
		m.callErrors.WithLabelValues(class).Inc()
		m.retries.WithLabelValues(class).Inc()
		if httpStatus(ev.Err) == 429 {
			m.rateLimits.Inc()
		}
	case engine.ItemHeal:
		m.callErrors.WithLabelValues(classify.Invalid.String()).Inc()
		m.heals.Inc()
	case engine.ItemFinished:
		rec := &ev.Record
		if rec.Failed() {
			m.items.WithLabelValues("failed", rec.Class.String()).Inc()
			if rec.Attempts > 0 && !rec.CacheHit {
				// The last call's error is the record's: it was not
				// retried, so no ItemRetry counted it.
				m.callErrors.WithLabelValues(rec.Class.String()).Inc()
				if httpStatus(ev.Err) == 429 {
					m.rateLimits.Inc()
				}
			}
		} else {
			m.succeeded.Inc()
		}
		m.duration.Observe(float64(rec.DurationMS) / 1000)
	case engine.Cooldown:
		from := ev.Time
		if m.cooldownEnd.After(from) {
			from = m.cooldownEnd
		}
		if ev.Until.After(from) {
			m.cooldown.Add(ev.Until.Sub(from).Seconds())
			m.cooldownEnd = ev.Until
		}
	}
}
