package metrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

func TestRouteOfNamesTheTasksProviderAndModel(t *testing.T) {
	for _, c := range []struct {
		name string
		task spec.Task
		want metrics.Route
	}{
		{"llm", spec.Task{Type: "llm", Provider: "anthropic", Model: "claude-haiku-4-5"}, metrics.Route{Provider: "anthropic", Model: "claude-haiku-4-5"}},
		{"exec", spec.Task{Type: "exec", Model: "ignored"}, metrics.Route{Provider: "exec"}},
		{"http", spec.Task{Type: "http"}, metrics.Route{Provider: "http"}},
	} {
		if got := metrics.RouteOf(&spec.Spec{Task: c.task}); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: RouteOf = %+v, want %+v", c.name, got, c.want)
		}
	}
}

// TestCallsOfARoutedJobAreLabelledWithTheirRoute: a job over several
// routes labels each call with the route it went to and that route's
// provider and model, not the task's.
func TestCallsOfARoutedJobAreLabelledWithTheirRoute(t *testing.T) {
	s := &spec.Spec{
		Task:   spec.Task{Type: "llm", Provider: "openai", Model: "gpt-4o-mini"},
		Routes: []spec.Route{{Name: "a", Provider: "openai", Model: "gpt-4o-mini"}, {Name: "b", Provider: "anthropic", Model: "claude-haiku-4-5"}},
	}
	reg := prometheus.NewRegistry()
	j := metrics.NewJobs(reg).Add("j", metrics.RouteOf(s), nil)
	j.Observe(engine.Event{Kind: engine.CallEnded, Route: "a", Elapsed: time.Second, Err: status(503), Decision: classify.Decision{Class: classify.Retryable}})
	j.Observe(engine.Event{Kind: engine.CallEnded, Route: "b", Elapsed: 2 * time.Second})
	want := `
# HELP tenax_call_errors_total Calls of the task that failed, by error class (a 429 is retryable; invalid is an output that failed validation).
# TYPE tenax_call_errors_total counter
tenax_call_errors_total{class="retryable",job_id="j",model="gpt-4o-mini",provider="openai",route="a"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tenax_call_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(reg, "tenax_call_duration_seconds"); n != 2 {
		t.Errorf("%d call latency series, want 2: one per route the calls went to", n)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["route"] == "b" && (labels["provider"] != "anthropic" || labels["model"] != "claude-haiku-4-5") {
				t.Errorf("%s on route b labelled %v, want route b's provider anthropic and model claude-haiku-4-5", f.GetName(), labels)
			}
		}
	}
}

// TestAJobAddedAgainKeepsItsCounts: a worker that takes a resumed job up
// anew adds it again; its counters must go on, not restart, and its
// stats are the new engine's.
func TestAJobAddedAgainKeepsItsCounts(t *testing.T) {
	reg := prometheus.NewRegistry()
	js := metrics.NewJobs(reg)
	r := metrics.Route{Provider: "mock", Model: "m"}
	js.Add("j", r, func() engine.Stats { return engine.Stats{Calls: 1} }).
		Observe(engine.Event{Kind: engine.ItemHeal})
	js.Add("j", r, func() engine.Stats { return engine.Stats{Calls: 5} }).
		Observe(engine.Event{Kind: engine.ItemHeal})
	want := `
# HELP tenax_calls_total Calls of the task (each attempt and each re-ask is one call; cache hits are none).
# TYPE tenax_calls_total counter
tenax_calls_total{job_id="j"} 5
# HELP tenax_heal_reasks_total Re-asks with feedback after an invalid output.
# TYPE tenax_heal_reasks_total counter
tenax_heal_reasks_total{job_id="j"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "tenax_calls_total", "tenax_heal_reasks_total"); err != nil {
		t.Error(err)
	}
}

// TestCallLatencyIsPerCallAndPerClass: each CallEnded lands in the
// histogram of its class, with its own latency.
func TestCallLatencyIsPerCallAndPerClass(t *testing.T) {
	reg := prometheus.NewRegistry()
	j := metrics.NewJobs(reg).Add("j", metrics.Route{Provider: "openai", Model: "gpt"}, nil)
	j.Observe(engine.Event{Kind: engine.CallEnded, Elapsed: 40 * time.Millisecond})
	j.Observe(engine.Event{Kind: engine.CallEnded, Elapsed: 7 * time.Second, Decision: classify.Decision{Class: classify.Retryable}})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, f := range fams {
		if f.GetName() != "tenax_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" {
					got[l.GetValue()] = m.GetHistogram().GetSampleSum()
				}
			}
		}
	}
	if got["none"] != 0.04 || got["retryable"] != 7 || len(got) != 2 {
		t.Errorf("latency sums by class = %v, want none 0.04 s and retryable 7 s", got)
	}
}

// TestStoredCountsTheRunningJobsFromTheStore is tenax ui's /metrics
// without workers: the running jobs' outcomes; a finished job leaves.
func TestStoredCountsTheRunningJobsFromTheStore(t *testing.T) {
	ctx := context.Background()
	var st memory.Store
	for _, m := range []store.Manifest{
		{ID: "running", Items: 3, State: store.StateRunning},
		{ID: "done", Items: 1, State: store.StateCompleted},
	} {
		m.Created = time.Now()
		j, err := st.Create(ctx, m)
		if err != nil {
			t.Fatal(err)
		}
		if err := j.Append(ctx, store.Record{Idx: 0}, store.Record{Idx: 1, Error: "bad", Class: classify.Item}); err != nil {
			t.Fatal(err)
		}
		j.Close()
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&metrics.Stored{Store: &st})
	want := `
# HELP tenax_job_items A job's items by their latest recorded outcome (succeeded, failed, pending), over every run of the job, as tenax status counts them.
# TYPE tenax_job_items gauge
tenax_job_items{job_id="running",outcome="failed"} 1
tenax_job_items{job_id="running",outcome="pending"} 1
tenax_job_items{job_id="running",outcome="succeeded"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// TestEverySeriesPassesPromlint lints what a run, a worker and tenax ui
// serve, through Handler, as `promtool check metrics` would.
func TestEverySeriesPassesPromlint(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := metrics.RegisterBuild(reg, metrics.Build{Version: "v1.2.3", Revision: "abc", GoVersion: "go1.26"}); err != nil {
		t.Fatal(err)
	}
	observeEverything(metrics.NewJobs(reg))
	var st memory.Store
	j, _ := st.Create(context.Background(), store.Manifest{ID: "job", Items: 1, State: store.StateRunning, Created: time.Now()})
	j.Close()
	reg.MustRegister(&metrics.Stored{Store: &st})
	srv := httptest.NewServer(metrics.Handler(reg))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
}

// observeEverything gives a job of js one event of each kind that
// counts, so that every series of Jobs exists.
func observeEverything(js *metrics.Jobs) {
	j := js.Add("job", metrics.Route{Provider: "openai", Model: "gpt"}, func() engine.Stats {
		return engine.Stats{Calls: 1, Routes: []engine.RouteStats{{Name: "a", Refused: 1, Faults: 1, InFlight: 1, Limit: 1}}}
	})
	retryable := classify.Decision{Class: classify.Retryable}
	for _, ev := range []engine.Event{
		{Kind: engine.ItemRetry, Decision: retryable},
		{Kind: engine.CallEnded, Decision: retryable, Err: status(429), Elapsed: time.Second},
		{Kind: engine.ItemHeal},
		{Kind: engine.ItemFinished, Record: store.Record{DurationMS: 10}},
		{Kind: engine.Cooldown, Time: time.Unix(0, 0), Until: time.Unix(1, 0)},
	} {
		j.Observe(ev)
	}
}

type status int

func (s status) Error() string   { return "HTTP status" }
func (s status) HTTPStatus() int { return int(s) }

// TestAnsweredCallsOfARoutedJobAreClassNone: a routed job's answered call
// is labelled class "none", as docs/metrics.md says and an unrouted job's
// is; it was "unknown", so a dashboard built from the docs showed no
// latency for routed jobs.
func TestAnsweredCallsOfARoutedJobAreClassNone(t *testing.T) {
	s := &spec.Spec{
		Task:   spec.Task{Type: "llm", Provider: "openai", Model: "gpt-4o-mini"},
		Routes: []spec.Route{{Name: "a", Provider: "openai", Model: "gpt-4o-mini"}, {Name: "b", Provider: "anthropic", Model: "claude-haiku-4-5"}},
	}
	reg := prometheus.NewRegistry()
	j := metrics.NewJobs(reg).Add("j", metrics.RouteOf(s), nil)
	j.Observe(engine.Event{Kind: engine.CallEnded, Route: "b", Elapsed: 2 * time.Second})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range fams {
		if f.GetName() != "tenax_call_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "class" {
					found = true
					if l.GetValue() != "none" {
						t.Errorf("an answered call on route b has class %q, want none", l.GetValue())
					}
				}
			}
		}
	}
	if !found {
		t.Error("no tenax_call_duration_seconds series for the answered call")
	}
}
