package web

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// A finished job's page, served from its store alone (tenax ui), draws the
// charts from its records.
func TestJobPageDrawsChartsFromTheStore(t *testing.T) {
	st, id := newJob(t, 3)
	srv := httptest.NewServer(New(Config{Store: st, Metrics: prometheus.NewRegistry()}))
	defer srv.Close()
	resp, body := get(t, srv.Client(), srv.URL+"/jobs/"+id, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("GET the job page: %s\n%s", resp.Status, body)
	}
	for _, want := range []string{`id="chart-rate"`, `id="chart-inflight"`, `id="chart-latency"`, `id="chart-failures"`,
		`id="chart-tokens"`, `id="chart-cost"`, ">item 1<", ">items/s "} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %s", want)
		}
	}
}
