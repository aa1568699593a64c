package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
)

// TestPausedGaugeSaysWhetherAnOperatorHoldsTheJob: an operator's pause
// (tenax pause, the page's Pause) was on the page alone; tenax_paused is 1
// for a job an operator holds, 0 for the others.
func TestPausedGaugeSaysWhetherAnOperatorHoldsTheJob(t *testing.T) {
	reg := prometheus.NewRegistry()
	js := metrics.NewJobs(reg)
	r := metrics.Route{Provider: "mock", Model: "m"}
	js.Add("held", r, func() engine.Stats { return engine.Stats{Hold: &engine.Hold{By: "alice", Since: time.Now()}} })
	js.Add("running", r, func() engine.Stats { return engine.Stats{} })
	want := `
# HELP tenax_paused 1 while an operator's pause holds the job (tenax pause, the page's Pause): no new call starts; 0 otherwise.
# TYPE tenax_paused gauge
tenax_paused{job_id="held"} 1
tenax_paused{job_id="running"} 0
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tenax_paused"); err != nil {
		t.Error(err)
	}
}
