package web

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// routedRecords are the latest records of a finished routed job of 10
// items: a (m-a) produced 4, one failed, its calls there taking 100,
// 200, 300 and 4,000 ms; b (m-b) produced 6, its calls taking 40 ms
// each but one of 900 ms, and 3 of them left a for b after a 503 there
// that took 2,500 ms (one of them twice: it came back to a and fell back
// again), so 3 items left a and a has 8 call times. The item times
// (duration_ms: backoffs and waits included) are other numbers, never
// the panel's; one record of b has no call time (a cache hit).
func routedRecords() []store.Record {
	now := time.Now().UTC()
	tryA := store.Try{Route: "a", Model: "m-a", Error: "503 Service Unavailable", Class: classify.Retryable, CallMS: 2500}
	recs := []store.Record{
		{Idx: 0, Route: "a", Model: "m-a", DurationMS: 301, CallMS: 300},
		{Idx: 1, Route: "a", Model: "m-a", DurationMS: 101, CallMS: 100},
		{Idx: 2, Route: "a", Model: "m-a", DurationMS: 9000, CallMS: 4000, Error: "invalid JSON", Class: classify.Invalid},
		{Idx: 3, Route: "a", Model: "m-a", DurationMS: 201, CallMS: 200},
		{Idx: 4, Route: "b", Model: "m-b", DurationMS: 3000, CallMS: 40, Tries: []store.Try{tryA}},
		{Idx: 5, Route: "b", Model: "m-b", DurationMS: 3000, CallMS: 40, Tries: []store.Try{tryA}},
		{Idx: 6, Route: "b", Model: "m-b", DurationMS: 7000, CallMS: 900, Tries: []store.Try{tryA, tryA}},
		{Idx: 7, Route: "b", Model: "m-b", DurationMS: 50, CallMS: 40},
		{Idx: 8, Route: "b", Model: "m-b", DurationMS: 50, CallMS: 40},
		{Idx: 9, Route: "b", Model: "m-b", DurationMS: 1, CacheHit: true},
	}
	for i := range recs {
		recs[i].Input, recs[i].Output, recs[i].Attempts, recs[i].FinishedAt = []byte(`{}`), []byte(`{}`), 1, now
	}
	return recs
}

// newRoutedJob creates a job in state with recs as its records.
func newRoutedJob(t *testing.T, state store.State, recs []store.Record) (*jsonl.Store, string) {
	t.Helper()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(context.Background(), store.Manifest{Name: "routed", Created: time.Now(), Items: len(recs), State: state})
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return st, j.Manifest().ID
}

// TestTheRoutesPanelOfAFinishedRoutedJobComesFromItsRecords: with no run
// in this process (it ended, ran elsewhere or on workers), the panel is
// the records': per route its items and share, its failures, the items
// that left it for another route, and its call times' p50 and p95 (of
// its records' and its tries' call_ms, not the items' whole time); the
// live columns say there is no run here.
func TestTheRoutesPanelOfAFinishedRoutedJobComesFromItsRecords(t *testing.T) {
	st, id := newRoutedJob(t, store.StateFailed, routedRecords())
	s := New(Config{Store: st})
	v, err := s.reports.get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteRow{
		{Name: "b", Model: "m-b", Items: 6, Failed: 0, LeftBy: 0, ItemShare: "60.0%", FailShare: "0.0%", CallP50: 40 * time.Millisecond, CallP95: 900 * time.Millisecond},
		{Name: "a", Model: "m-a", Items: 4, Failed: 1, LeftBy: 3, ItemShare: "40.0%", FailShare: "25.0%", CallP50: 2500 * time.Millisecond, CallP95: 4 * time.Second},
	}
	if len(v.Routes) != len(want) {
		t.Fatalf("the view's routes are %+v, want %+v", v.Routes, want)
	}
	for i := range want {
		if v.Routes[i] != want[i] {
			t.Errorf("route row %d is\n%+v, want\n%+v", i, v.Routes[i], want[i])
		}
	}
	page := s.renderJob(t, id)
	for _, wantHTML := range []string{
		`id="routes"`,
		`<th title="time of the calls on the route: call_ms of its records and tries">call p50</th>`,
		`<tr id="route-a"><td>a <small>m-a</small></td><td class="breaker none" colspan="7">not in a run here</td><td class="num records">4</td><td class="num share">40.0%</td><td class="num failed">1 (25.0%)</td><td class="num left">3</td><td class="num p50">2.5s</td><td class="num p95">4s</td></tr>`,
		`<tr id="route-b"><td>b <small>m-b</small></td><td class="breaker none" colspan="7">not in a run here</td><td class="num records">6</td><td class="num share">60.0%</td><td class="num failed">0 (0.0%)</td><td class="num left">0</td><td class="num p50">40ms</td><td class="num p95">900ms</td></tr>`,
	} {
		if !strings.Contains(page, wantHTML) {
			t.Errorf("the job page lacks\n%s\nin:\n%s", wantHTML, page)
		}
	}
}

// TestTheRoutesPanelShowsLiveColumnsDuringARun: with the run live in this
// process, each route's row has the run's breaker, calls in flight
// against its limit, rate limits as told or learned, calls, failed and
// refused calls, beside what the records say; a route the run has that
// produced no record yet has a row of its own.
func TestTheRoutesPanelShowsLiveColumnsDuringARun(t *testing.T) {
	st, id := newRoutedJob(t, store.StateRunning, routedRecords())
	m := NewMonitor(prometheus.NewRegistry())
	m.Start(id, func() engine.Stats {
		return engine.Stats{Total: 12, Done: 10, InFlight: 5, Routes: []engine.RouteStats{
			{Name: "a", Model: "m-a", Breaker: breaker.Open, Calls: 12, Succeeded: 3, Failed: 1, Faults: 9, Refused: 31, Limit: 4, InFlight: 0,
				RequestsPerMinute: 6000, TokensPerMinuteLearned: 90000},
			{Name: "b", Model: "m-b", Breaker: breaker.Closed, Calls: 30, Succeeded: 6, Limit: 8, InFlight: 5,
				RequestsPerMinuteLearned: 3000, TokensPerMinuteLearned: 450000},
			{Name: "spare", Model: "m-c", Breaker: breaker.HalfOpen, Limit: 2},
			// A batch job's route has no gate: no limit, nothing in flight.
			{Name: "wave", Breaker: breaker.Closed},
		}}
	}, nil)
	page := New(Config{Store: st, Monitor: m}).renderJob(t, id)
	for _, want := range []string{
		`live columns from this run`,
		`<tr id="route-a"><td>a <small>m-a</small></td><td class="breaker"><span class="breaker-open">open</span></td><td class="num inflight">0 / 4</td><td class="num rpm">6000 told</td><td class="num tpm">90000 learned</td><td class="num calls">12</td><td class="num faults">9</td><td class="num refused">31</td><td class="num records">4</td><td class="num share">40.0%</td><td class="num failed">1 (25.0%)</td><td class="num left">3</td><td class="num p50">2.5s</td><td class="num p95">4s</td></tr>`,
		`<tr id="route-b"><td>b <small>m-b</small></td><td class="breaker"><span class="breaker-closed">closed</span></td><td class="num inflight">5 / 8</td><td class="num rpm">3000 learned</td><td class="num tpm">450000 learned</td><td class="num calls">30</td><td class="num faults">0</td><td class="num refused">0</td><td class="num records">6</td>`,
		`<tr id="route-spare"><td>spare <small>m-c</small></td><td class="breaker"><span class="breaker-half_open">half_open</span></td><td class="num inflight">0 / 2</td><td class="num rpm">—</td><td class="num tpm">—</td><td class="num calls">0</td><td class="num faults">0</td><td class="num refused">0</td><td class="num records">0</td><td class="num share">0.0%</td><td class="num failed">0 (—)</td><td class="num left">0</td><td class="num p50">—</td><td class="num p95">—</td></tr>`,
		`<tr id="route-wave"><td>wave</td><td class="breaker"><span class="breaker-closed">closed</span></td><td class="num inflight">—</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the job page lacks\n%s\nin:\n%s", want, page)
		}
	}
	// The live rows keep the run's order (a, b, spare), not the records'.
	if a, b := strings.Index(page, `id="route-a"`), strings.Index(page, `id="route-b"`); a > b {
		t.Error("the live panel lists b before a: it should keep the run's order of routes")
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

func TestCallTimePercentilesAreNearestRank(t *testing.T) {
	for _, c := range []struct {
		name     string
		ms       []int64
		p50, p95 time.Duration
	}{
		{"none", nil, 0, 0},
		{"one", []int64{70}, 70 * time.Millisecond, 70 * time.Millisecond},
		{"two", []int64{900, 100}, 100 * time.Millisecond, 900 * time.Millisecond},
		{"twenty, one slow", []int64{10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 20, 20, 20, 20, 20, 20, 20, 20, 20, 5000},
			10 * time.Millisecond, 20 * time.Millisecond},
		{"ten, one slow", []int64{10, 10, 10, 10, 5000, 10, 10, 10, 10, 10}, 10 * time.Millisecond, 5 * time.Second},
	} {
		if p50, p95 := percentiles(c.ms); p50 != c.p50 || p95 != c.p95 {
			t.Errorf("%s: p50 %v p95 %v, want %v and %v", c.name, p50, p95, c.p50, c.p95)
		}
	}
}

// TestTheRoutesPanelFollowsARealRoutedRunThenItsRecords runs a routed
// engine over a JSONL store with the page watching: while its 4 calls
// are held, the panel shows them in flight between the routes, a's told
// rate limit and b's none yet; once they answered (b's with rate-limit
// headers) and the run ended, b's learned limits and every route's items,
// shares and item times, from the records the run wrote.
func TestTheRoutesPanelFollowsARealRoutedRunThenItsRecords(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Name: "routed", Created: time.Now(), Items: 8, State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	id := j.Manifest().ID
	release := make(chan struct{})
	var started atomic.Int64
	answer := func(q *task.Quota) task.Task {
		return task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
			started.Add(1)
			select {
			case <-release:
			case <-ctx.Done():
				return task.Result{}, ctx.Err()
			}
			return task.Result{Output: json.RawMessage(`"x"`), Quota: q}, nil
		})
	}
	m := NewMonitor(prometheus.NewRegistry())
	e := engine.New(engine.Config{Concurrency: 4, Total: 8, Routing: engine.RoutingLeastLoaded, OnEvent: m.Observe,
		Routes: []engine.Route{
			{Name: "a", Model: "m-a", Task: answer(nil), RequestsPerMinute: 6000},
			{Name: "b", Model: "m-b", Task: answer(&task.Quota{RequestsLimit: 3000, RequestsRemaining: 2990, TokensLimit: -1, TokensRemaining: -1})},
		}}, nil, j)
	m.Start(id, e.Stats, nil)
	s := New(Config{Store: st, Monitor: m})
	done := make(chan error, 1)
	go func() {
		_, err := e.Run(ctx, sourceOf(8))
		done <- err
	}()
	waitFor(t, "4 calls under way", func() bool { return started.Load() == 4 && e.Stats().InFlight == 4 })

	rows := func() map[string]RouteRow {
		d, err := s.jobData(ctx, id, timeWindow{})
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]RouteRow{}
		for _, r := range d.Routes {
			byName[r.Name] = r
		}
		return byName
	}
	live := rows()
	a, b := live["a"], live["b"]
	if !a.Live || !b.Live || a.InFlight+b.InFlight != 4 || a.Limit != 4 || b.Limit != 4 {
		t.Errorf("while 4 calls are held: a %+v, b %+v; want both live, 4 in flight between them, limit 4 each", a, b)
	}
	if a.Requests != "6000 told" || b.Requests != "—" || a.Tokens != "—" {
		t.Errorf("rate limits while no call answered: a %q rpm %q tpm, b %q rpm; want 6000 told, none, none", a.Requests, a.Tokens, b.Requests)
	}
	if page := s.renderJob(t, id); !strings.Contains(page, `<td class="num rpm">6000 told</td>`) || !strings.Contains(page, `class="num inflight">`) {
		t.Errorf("the job page does not show the live columns:\n%s", page)
	}

	close(release)
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	m.End()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	s.reports.forget(id)
	after := rows()
	a, b = after["a"], after["b"]
	if a.InFlight != 0 || b.InFlight != 0 {
		t.Errorf("after the run, in flight: a %d, b %d; want 0", a.InFlight, b.InFlight)
	}
	if b.Requests != "3000 learned" {
		t.Errorf("b's request limit after its answers is %q, want the headers' 3000 learned", b.Requests)
	}
	if a.Items+b.Items != 8 || a.Items != a.Calls || b.Items != b.Calls || a.Failed+b.Failed != 0 {
		t.Errorf("after the run: a %d items of %d calls, b %d of %d, %d failed; want the 8 items, one a call", a.Items, a.Calls, b.Items, b.Calls, a.Failed+b.Failed)
	}
	if want := share(a.Items, 8); a.ItemShare != want {
		t.Errorf("a's share of items is %q, want %q", a.ItemShare, want)
	}
	// Of at most 20 calls, the 95th percentile is the slowest one: each
	// record's call time, which the engine timed on its route.
	slowest := map[string]time.Duration{}
	rj, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	defer rj.Close()
	if err := rj.Scan(ctx, func(rec store.Record) error {
		if rec.CallMS <= 0 || rec.CallMS > rec.DurationMS+1 {
			t.Errorf("item %d on %s: call_ms %d, duration_ms %d; want a call time of at least 1 ms, within the item's", rec.Idx, rec.Route, rec.CallMS, rec.DurationMS)
		}
		slowest[rec.Route] = max(slowest[rec.Route], time.Duration(rec.CallMS)*time.Millisecond)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []RouteRow{a, b} {
		if r.CallP95 != slowest[r.Name] || r.CallP50 > r.CallP95 {
			t.Errorf("route %s: call p50 %v p95 %v; want p95 its slowest call's %v, p50 no more", r.Name, r.CallP50, r.CallP95, slowest[r.Name])
		}
	}
}

// TestCallTimesAreTalliedUnderTheRouteThatSpentThem: a record's call
// time is its route's, each try's the route it left; a record or try
// without one (a cache hit, a batch wave) adds nothing, and a record
// without a route (a job without routes) is kept nowhere.
func TestCallTimesAreTalliedUnderTheRouteThatSpentThem(t *testing.T) {
	for _, c := range []struct {
		name string
		recs []store.Record
		want map[string][]int64
	}{
		{"served where it was called", []store.Record{{Route: "a", CallMS: 120}, {Route: "a", CallMS: 80}},
			map[string][]int64{"a": {120, 80}}},
		{"a try's time is the route it left",
			[]store.Record{{Route: "b", CallMS: 40, Tries: []store.Try{{Route: "a", CallMS: 30000}, {Route: "c", CallMS: 5}}}},
			map[string][]int64{"a": {30000}, "b": {40}, "c": {5}}},
		{"untimed records and tries add nothing",
			[]store.Record{{Route: "a", CacheHit: true}, {Route: "b", Tries: []store.Try{{Route: "a"}}}},
			map[string][]int64{}},
		{"a record without a route is kept nowhere", []store.Record{{CallMS: 70}}, nil},
	} {
		var tally routeTally
		for _, rec := range c.recs {
			tally.add(rec)
		}
		if len(tally.times) != len(c.want) {
			t.Errorf("%s: call times %v, want %v", c.name, tally.times, c.want)
			continue
		}
		for route, want := range c.want {
			if got := tally.times[route]; !slices.Equal(got, want) {
				t.Errorf("%s: route %s's call times are %v, want %v", c.name, route, got, want)
			}
		}
	}
}
