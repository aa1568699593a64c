package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/worker"
)

// After an abort the page's badge still said running and "breaker trips
// (all runs)" read 0 while the run had tripped 20 times: the run's trips
// reach the manifest only when it ends, and the stream's last render,
// after the end, used the view cached while the run was live.
func TestThePageAfterAnAbortShowsTheJobAsTheRunLeftIt(t *testing.T) {
	st, id := newJob(t, 10)
	m := NewMonitor(nil)
	var trips atomic.Int64
	m.Start(id, func() engine.Stats {
		return engine.Stats{Total: 10, Done: 3, Started: time.Now(), Breaker: breaker.Open, Trips: int(trips.Load())}
	}, nil)
	srv := httptest.NewServer(New(Config{Store: st, Monitor: m, Refresh: time.Hour}))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &sseReader{bufio.NewScanner(resp.Body)}
	// last is the page's latest title and live fragments: the state
	// badge is the title's, the counters the live part's.
	var last string
	frags := map[string]string{}
	until := func(name, want string) {
		t.Helper()
		for {
			ev, data, err := r.next()
			if err != nil {
				t.Fatalf("the stream ended (%v) before %s showed %q; last live fragment:\n%s", err, name, want, last)
			}
			if ev == "live" || ev == "title" {
				frags[ev] = data
				last = frags["title"] + frags["live"]
			}
			if ev == name && strings.Contains(data, want) {
				return
			}
		}
	}
	until("title", `id="state">running<`)

	// While the run is live, its own trips count with the ended runs'.
	trips.Store(20)
	m.Observe(engine.Event{Kind: engine.BreakerChanged, Time: time.Now(), State: breaker.Open})
	until("live", `<b id="job-trips">20</b>`)

	// The run ends as the job layer ends it: the manifest first, then End.
	j, err := st.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.UpdateManifest(context.Background(), func(m *store.Manifest) {
		m.State, m.StopReason, m.BreakerTrips = store.StateAborted, "aborted by the operator", 20
	}); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	m.End()
	until("end", "the run has ended")
	for _, want := range []string{`id="state">aborted<`, `<b id="job-trips">20</b>`} {
		if !strings.Contains(last, want) {
			t.Errorf("the page's last state lacks %q:\n%s", want, last)
		}
	}
}

// The workers table said "In flight 8 of 0" for a worker started with
// --concurrency 0, which takes each job's concurrency.max.
func TestAWorkerWithoutItsOwnLimitIsNotShownOfZero(t *testing.T) {
	s := New(Config{})
	for _, tc := range []struct {
		concurrency int
		want, not   string
	}{
		{0, "8 <small>(limit: the spec's concurrency.max)</small>", "of 0"},
		{16, "8 of 16", "limit:"},
	} {
		d := &jobData{ID: "job_x", Workers: &workersData{Workers: []workerRow{{Info: worker.Info{ID: "w1", InFlight: 8, Concurrency: tc.concurrency}}}}}
		frags, err := s.fragments(d, "workers")
		if err != nil {
			t.Fatal(err)
		}
		got := string(frags["workers"])
		if !strings.Contains(got, tc.want) || strings.Contains(got, tc.not) {
			t.Errorf("--concurrency %d: the workers table\n%s\nwants %q, not %q", tc.concurrency, got, tc.want, tc.not)
		}
	}
}

// The page's rate counted a breaker's pause: right after Continue it said
// 1.5 items/s and an ETA of 32 minutes for a run that needed two. The rate
// window never reaches back across a pause, nor into one under way.
func TestThePagesRateLeavesOutTheOperatorsPause(t *testing.T) {
	start := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	resumed := start.Add(10 * time.Minute)
	for _, tc := range []struct {
		name  string
		stats engine.Stats
		now   time.Time
	}{
		{"right after Continue", engine.Stats{Started: start, Resumed: resumed, Planned: 1000, Done: 520}, resumed.Add(10 * time.Second)},
		{"while the question waits", engine.Stats{Started: start, PausedSince: resumed.Add(10 * time.Second), Resumed: resumed, Planned: 1000, Done: 520}, resumed.Add(25 * time.Second)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMonitor(nil)
			m.Start("job_x", func() engine.Stats { return tc.stats }, nil)
			// 20 items before the pause, then 5 a second for 10 s after it.
			for i := range 20 {
				m.Observe(engine.Event{Kind: engine.ItemFinished, Time: resumed.Add(-20*time.Second + time.Duration(i)*time.Second), Item: task.Item{Idx: i}, Record: store.Record{Idx: i}})
			}
			for i := range 50 {
				at := resumed.Add(time.Duration(i/5)*time.Second + time.Millisecond)
				m.Observe(engine.Event{Kind: engine.ItemFinished, Time: at, Item: task.Item{Idx: 20 + i}, Record: store.Record{Idx: 20 + i}})
			}
			l := m.Live(tc.now)
			if l.Rate != 5 || l.ETA != 96*time.Second {
				t.Errorf("rate %.2f/s, ETA %v; want 5/s and 1m36s (480 left)", l.Rate, l.ETA)
			}
		})
	}
}
