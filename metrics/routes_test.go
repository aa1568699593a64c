package metrics_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
)

// TestRouteRefusalsAndFaultsAreOnMetrics: a route's refused calls and
// faults were counted for the page alone; /metrics now has them per named
// route, with the route's calls in flight, limit and breaker state, and
// no series for a job's implicit route.
func TestRouteRefusalsAndFaultsAreOnMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	js := metrics.NewJobs(reg)
	js.Add("routed", metrics.Route{}, func() engine.Stats {
		return engine.Stats{Routes: []engine.RouteStats{
			{Name: "a", Breaker: breaker.Open, Faults: 7, Refused: 104, InFlight: 0, Limit: 8},
			{Name: "b", Breaker: breaker.Closed, Faults: 0, Refused: 0, InFlight: 3, Limit: 16},
		}}
	})
	js.Add("plain", metrics.Route{Provider: "mock", Model: "m"}, func() engine.Stats {
		return engine.Stats{Routes: []engine.RouteStats{{Name: "", Refused: 5, Limit: 8}}}
	})
	want := `
# HELP tenax_route_refused_total Calls the route's open (or half-open, probe out) breaker refused, each sent back to choose a route again.
# TYPE tenax_route_refused_total counter
tenax_route_refused_total{job_id="routed",route="a"} 104
tenax_route_refused_total{job_id="routed",route="b"} 0
# HELP tenax_route_faults_total Calls on the route that failed as an outage or a fatal error (a 5xx, a dropped connection, a wrong key): the failures its breaker counts.
# TYPE tenax_route_faults_total counter
tenax_route_faults_total{job_id="routed",route="a"} 7
tenax_route_faults_total{job_id="routed",route="b"} 0
# HELP tenax_route_in_flight Calls under way on the route.
# TYPE tenax_route_in_flight gauge
tenax_route_in_flight{job_id="routed",route="a"} 0
tenax_route_in_flight{job_id="routed",route="b"} 3
# HELP tenax_route_concurrency_limit The route's current concurrency limit (0 for a route without a gate of its own).
# TYPE tenax_route_concurrency_limit gauge
tenax_route_concurrency_limit{job_id="routed",route="a"} 8
tenax_route_concurrency_limit{job_id="routed",route="b"} 16
# HELP tenax_route_breaker_state The route's circuit breaker state: 1 for the current state, 0 for the others.
# TYPE tenax_route_breaker_state gauge
tenax_route_breaker_state{job_id="routed",route="a",state="closed"} 0
tenax_route_breaker_state{job_id="routed",route="a",state="half_open"} 0
tenax_route_breaker_state{job_id="routed",route="a",state="open"} 1
tenax_route_breaker_state{job_id="routed",route="b",state="closed"} 1
tenax_route_breaker_state{job_id="routed",route="b",state="half_open"} 0
tenax_route_breaker_state{job_id="routed",route="b",state="open"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want),
		"tenax_route_refused_total", "tenax_route_faults_total", "tenax_route_in_flight",
		"tenax_route_concurrency_limit", "tenax_route_breaker_state"); err != nil {
		t.Error(err)
	}
}

// TestEachRoutesCallLatencyIsOnTheCallHistogram: per-route call latency
// needs no histogram of its own — tenax_call_duration_seconds carries
// the route of each call, so a route that answers slowly and one that
// fails fast are two series a quantile can be taken of by route.
func TestEachRoutesCallLatencyIsOnTheCallHistogram(t *testing.T) {
	reg := prometheus.NewRegistry()
	js := metrics.NewJobs(reg)
	j := js.Add("routed", metrics.Route{ByName: map[string]metrics.Route{
		"a": {Provider: "openai", Model: "m-a"}, "b": {Provider: "anthropic", Model: "m-b"}}}, func() engine.Stats { return engine.Stats{} })
	for _, c := range []struct {
		route   string
		elapsed time.Duration
		class   classify.Class
	}{
		{"a", 3 * time.Second, classify.Retryable}, {"a", 3 * time.Second, classify.Retryable},
		{"b", 40 * time.Millisecond, classify.Unknown}, {"b", 40 * time.Millisecond, classify.Unknown}, {"b", 40 * time.Millisecond, classify.Unknown},
	} {
		j.Observe(engine.Event{Kind: engine.CallEnded, Route: c.route, Elapsed: c.elapsed, Err: errors.New("x"),
			Decision: classify.Decision{Class: c.class}})
	}
	for _, c := range []struct {
		series string
		count  uint64
		sum    float64
	}{
		{`job_id="routed",route="a",provider="openai",model="m-a",class="retryable"`, 2, 6},
		{`job_id="routed",route="b",provider="anthropic",model="m-b",class="none"`, 3, 0.12},
	} {
		count, sum := histogramOf(t, reg, "tenax_call_duration_seconds", c.series)
		if count != c.count || math.Abs(sum-c.sum) > 1e-9 {
			t.Errorf("tenax_call_duration_seconds{%s}: %d calls summing %gs, want %d summing %gs", c.series, count, sum, c.count, c.sum)
		}
	}
}

// histogramOf returns the count and sum of the histogram name's series
// whose labels are labels (`k="v",…` in any order).
func histogramOf(t *testing.T, reg *prometheus.Registry, name, labels string) (uint64, float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Split(labels, ",")
	slices.Sort(want)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			var got []string
			for _, l := range m.GetLabel() {
				got = append(got, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			slices.Sort(got)
			if slices.Equal(got, want) {
				return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
			}
		}
	}
	t.Fatalf("no series %s{%s}", name, labels)
	return 0, 0
}
