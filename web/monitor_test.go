package web

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

func TestTimelinesStayBounded(t *testing.T) {
	m := NewMonitor(nil)
	t0 := time.Now()
	for idx := range TimelineItems + 10 {
		m.Observe(engine.Event{Kind: engine.ItemStarted, Time: t0, Item: task.Item{Idx: idx}})
	}
	if _, ok := m.Timeline(0); ok {
		t.Error("the oldest item's timeline is still kept beyond TimelineItems")
	}
	if _, ok := m.Timeline(TimelineItems + 9); !ok {
		t.Error("the newest item's timeline is missing")
	}
	last := TimelineItems + 9
	for n := range TimelineSteps + 5 {
		m.Observe(engine.Event{Kind: engine.ItemRetry, Time: t0, Item: task.Item{Idx: last}, Attempt: n + 1, Err: errors.New("again")})
	}
	tl, _ := m.Timeline(last)
	if len(tl.Steps) != TimelineSteps || tl.Dropped != 6 {
		t.Errorf("%d steps kept, %d dropped; want %d kept and 6 dropped", len(tl.Steps), tl.Dropped, TimelineSteps)
	}
	if tl.Steps[0].Kind != "started" || tl.Steps[len(tl.Steps)-1].Attempt != TimelineSteps+5 {
		t.Errorf("the timeline should keep its start and its latest steps: first %q, last attempt %d", tl.Steps[0].Kind, tl.Steps[len(tl.Steps)-1].Attempt)
	}
}

func TestTimelineKeepsTheHealFeedbackRedacted(t *testing.T) {
	m := NewMonitor(nil)
	m.Start("job", func() engine.Stats { return engine.Stats{} }, func(s string) string { return strings.ReplaceAll(s, "sk-secret", "[REDACTED]") })
	item := task.Item{Idx: 3, Raw: []byte(`{"w":"x"}`)}
	m.Observe(engine.Event{Kind: engine.ItemStarted, Item: item})
	item.Feedback = &task.Feedback{PreviousOutput: `{"text": "sk-secret"}`, Message: "missing property 'length'", Attempt: 1}
	m.Observe(engine.Event{Kind: engine.ItemHeal, Item: item, Attempt: 1, Err: errors.New("missing property 'length'")})
	// The engine reuses its item: what the monitor kept must not change.
	item.Feedback.Message = "changed later"
	m.Observe(engine.Event{Kind: engine.ItemFinished, Item: item, Record: store.Record{Idx: 3, Output: []byte(`{"text":"ok","length":2}`), Attempts: 2, HealAttempts: 1}})

	tl, ok := m.Timeline(3)
	if !ok || len(tl.Steps) != 3 {
		t.Fatalf("timeline %+v, want started, heal, succeeded", tl)
	}
	heal := tl.Steps[1]
	if heal.Kind != "heal" || heal.Feedback != "missing property 'length'" || heal.Answer != `{"text": "[REDACTED]"}` {
		t.Errorf("the heal step is %+v; want the feedback as sent and the answer redacted", heal)
	}
	if tl.Steps[2].Kind != "succeeded" || tl.Steps[2].Answer != `{"text":"ok","length":2}` {
		t.Errorf("the last step is %+v, want succeeded with the output", tl.Steps[2])
	}
}

// status is an error with an HTTP status, as the LLM and HTTP tasks return.
type status int

func (s status) Error() string   { return fmt.Sprintf("HTTP %d", int(s)) }
func (s status) HTTPStatus() int { return int(s) }

func value(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			return metricValue(m)
		}
	}
	t.Fatalf("no %s%v gathered", name, labels)
	return 0
}

func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Histogram != nil:
		return float64(m.Histogram.GetSampleCount())
	}
	return 0
}

// TestMetricsCountWhatTheEventsSay feeds a Monitor the events of five
// calls, as the engine emits them (each item event, then the call's
// CallEnded), and reads the run's series, labelled with its job and route.
func TestMetricsCountWhatTheEventsSay(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := NewMonitor(reg)
	m.Route = metrics.Route{Provider: "openai", Model: "gpt-4o-mini"}
	m.Start("job", func() engine.Stats { return engine.Stats{Calls: 7, InFlight: 2, Limit: 8, CostUSD: 0.25} }, nil)
	t0 := time.Unix(1000, 0)
	retryable := classify.Decision{Class: classify.Retryable}
	it := task.Item{Idx: 1}
	for _, ev := range []engine.Event{
		{Kind: engine.ItemRetry, Item: it, Err: status(429), Decision: retryable},
		{Kind: engine.CallEnded, Item: it, Err: status(429), Decision: retryable, Elapsed: 200 * time.Millisecond},
		{Kind: engine.ItemRetry, Item: it, Err: status(500), Decision: retryable},
		{Kind: engine.CallEnded, Item: it, Err: status(500), Decision: retryable, Elapsed: time.Second},
		{Kind: engine.ItemHeal, Item: it},
		{Kind: engine.CallEnded, Item: it, Decision: classify.Decision{Class: classify.Invalid}, Elapsed: time.Second},
		{Kind: engine.ItemFinished, Item: it, Record: store.Record{Idx: 1, Attempts: 4, DurationMS: 1500}},
		{Kind: engine.CallEnded, Item: it, Elapsed: 3 * time.Second},
		{Kind: engine.ItemFinished, Item: task.Item{Idx: 2}, Err: status(401), Record: store.Record{Idx: 2, Error: "401", Class: classify.Fatal, Attempts: 1}},
		{Kind: engine.CallEnded, Item: task.Item{Idx: 2}, Err: status(401), Decision: classify.Decision{Class: classify.Fatal}, Elapsed: 100 * time.Millisecond},
		// Two overlapping cooldowns: 10 s in all, not 15.
		{Kind: engine.Cooldown, Time: t0, Until: t0.Add(5 * time.Second)},
		{Kind: engine.Cooldown, Time: t0.Add(2 * time.Second), Until: t0.Add(10 * time.Second)},
	} {
		m.Observe(ev)
	}
	job := map[string]string{"job_id": "job"}
	with := func(labels ...string) map[string]string {
		l := map[string]string{"job_id": "job"}
		for i := 0; i < len(labels); i += 2 {
			l[labels[i]] = labels[i+1]
		}
		return l
	}
	call := func(class string) map[string]string {
		return with("provider", "openai", "model", "gpt-4o-mini", "class", class)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"tenax_items_total", with("outcome", "succeeded", "class", "none"), 1},
		{"tenax_items_total", with("outcome", "failed", "class", "fatal"), 1},
		{"tenax_retries_total", with("class", "retryable"), 2},
		{"tenax_call_errors_total", call("retryable"), 2},
		{"tenax_call_errors_total", call("invalid"), 1},
		{"tenax_call_errors_total", call("fatal"), 1},
		{"tenax_call_duration_seconds", call("retryable"), 2},
		{"tenax_call_duration_seconds", call("none"), 1},
		{"tenax_rate_limited_total", call("retryable"), 1},
		{"tenax_heal_reasks_total", job, 1},
		{"tenax_cooldown_seconds_total", job, 10},
		{"tenax_item_duration_seconds", job, 2},
		{"tenax_calls_total", job, 7},
		{"tenax_in_flight", job, 2},
		{"tenax_concurrency_limit", job, 8},
		{"tenax_cost_usd_total", job, 0.25},
		{"tenax_breaker_state", with("state", "closed"), 1},
		{"tenax_breaker_state", with("state", "open"), 0},
	} {
		if got := value(t, reg, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if l := m.Live(time.Now()); l.RateLimited != 1 {
		t.Errorf("the page counts %d 429s, want 1", l.RateLimited)
	}
}

func TestTwoMonitorsDoNotShareMetrics(t *testing.T) {
	// No global registry: two runs in one process each have their own.
	a, b := prometheus.NewRegistry(), prometheus.NewRegistry()
	ma, mb := NewMonitor(a), NewMonitor(b)
	ma.Start("a", nil, nil)
	mb.Start("b", nil, nil)
	ma.Observe(engine.Event{Kind: engine.ItemHeal, Item: task.Item{}})
	if got := value(t, a, "tenax_heal_reasks_total", map[string]string{"job_id": "a"}); got != 1 {
		t.Errorf("the first registry counts %v re-asks, want 1", got)
	}
	fams, err := b.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "tenax_heal_reasks_total" {
			t.Errorf("the second registry counts the first monitor's re-asks: %v", f)
		}
	}
}
