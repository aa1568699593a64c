package web

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
)

func TestTheRoutesPanelShowsEachRoutesBreakerAndShares(t *testing.T) {
	st, id := newJob(t, 3)
	m := NewMonitor(prometheus.NewRegistry())
	m.Start(id, func() engine.Stats {
		return engine.Stats{Total: 40, Done: 40, Routes: []engine.RouteStats{
			{Name: "primary", Model: "m-big", Breaker: breaker.Open, Calls: 12, Succeeded: 5, Failed: 5, Faults: 9, Refused: 31, Limit: 4},
			{Name: "backup", Model: "m-small", Breaker: breaker.Closed, Calls: 30, Succeeded: 30, Limit: 8},
		}}
	}, nil)
	page := New(Config{Store: st, Monitor: m}).renderJob(t, id)
	for _, want := range []string{
		`id="routes"`,
		// primary: open, 9 calls failed, 31 refused, 10 of the 40
		// records, half of them failed.
		`<tr id="route-primary"><td>primary <small>m-big</small></td><td><span class="breaker-open">open</span></td><td class="num">12</td><td class="num faults">9</td><td class="num refused">31</td><td class="num">10</td><td class="num">25.0%</td><td class="num">5 (50.0%)</td><td class="num">4</td></tr>`,
		`<tr id="route-backup"><td>backup <small>m-small</small></td><td><span class="breaker-closed">closed</span></td><td class="num">30</td><td class="num faults">0</td><td class="num refused">0</td><td class="num">30</td><td class="num">75.0%</td><td class="num">0 (0.0%)</td><td class="num">8</td></tr>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the job page lacks\n%s\nin:\n%s", want, page)
		}
	}
}

func TestARunWithoutRoutesHasNoRoutesPanel(t *testing.T) {
	st, id := newJob(t, 3)
	m := NewMonitor(prometheus.NewRegistry())
	m.Start(id, func() engine.Stats { return engine.Stats{Total: 3} }, nil)
	if page := New(Config{Store: st, Monitor: m}).renderJob(t, id); strings.Contains(page, `id="routes"`) {
		t.Error("a run without routes shows a routes panel")
	}
}
