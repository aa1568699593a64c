package web

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
)

// Metrics are a run's Prometheus metrics (package metrics): the series of
// its job, labelled with the job's id once the run starts, so that a run,
// a worker and a dashboard speak of the same series.
type Metrics struct {
	jobs  *metrics.Jobs
	stats func() engine.Stats
	job   *metrics.Job // nil before start
}

// NewMetrics registers tenax's metrics on reg. stats reads the run's
// counters at scrape time; it may return the zero Stats before the run
// starts.
func NewMetrics(reg prometheus.Registerer, stats func() engine.Stats) *Metrics {
	return &Metrics{jobs: metrics.NewJobs(reg), stats: stats}
}

// start labels the series with the run's job and the route of its calls.
// The caller serializes calls.
func (m *Metrics) start(jobID string, route metrics.Route) {
	m.job = m.jobs.Add(jobID, route, m.stats)
}

// observe counts what ev tells. The caller serializes calls.
func (m *Metrics) observe(ev engine.Event) {
	if m.job != nil {
		m.job.Observe(ev)
	}
}
