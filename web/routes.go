package web

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
)

// RouteRow is one route as the job page's routes panel shows it (docs/web.md):
// what the run in this process knows of it now, when one runs the job
// here, and what the job's latest records say, whoever wrote them — every
// run, this process, another one, workers.
type RouteRow struct {
	Name, Model string
	// Live says the run in this process has the route: the fields from
	// Breaker to Refused are its, counted over this run. A route known
	// only from the records (the job ran elsewhere, or before) has none.
	Live    bool
	Breaker string
	// InFlight counts the route's calls under way, Limit its concurrency
	// limit now (adaptive concurrency learns it); 0 for a route without a
	// gate (batch waves), which the page shows as "—".
	InFlight, Limit int
	// Requests and Tokens are the route's rate limits per minute, as the
	// spec told them or as its gate learned them from the provider's
	// rate-limit headers: "6000 told", "3000 learned", "—" for none.
	Requests, Tokens string
	// Calls counts the calls made on the route; Faults those that failed
	// as an outage or a fatal error (what its breaker counts), Refused the
	// calls its breaker refused, each sent back to choose a route again.
	Calls, Faults, Refused int

	// From the latest records: Items counts the items whose record the
	// route produced, Failed those that failed, LeftBy the items whose
	// record names the route in its tries (they met an error there and
	// fell back to another route).
	Items, Failed, LeftBy int
	// ItemShare is the route's part of the items every route produced,
	// FailShare the failed part of its own: "62.5%", "—" for none.
	ItemShare, FailShare string
	// CallP50 and CallP95 are the median and 95th percentile of the
	// route's call times in the records: the call_ms of each record the
	// route produced and of each try that left it — the calls' own time
	// on the route, no queueing, backoff or validator (an item that
	// called it twice, a retry or a re-ask, counts their sum once); 0 for
	// none (records without call_ms: batch waves, cache hits).
	CallP50, CallP95 time.Duration
}

// routeTally collects what the report does not keep of records by
// route: the call times (CallMS) of each route's records and tries, for
// the routes panel's percentiles (8 bytes a timed call, for the time a
// view is built), and its model.
type routeTally struct {
	times  map[string][]int64
	models map[string]string
}

// add keeps rec's call times under the routes they were spent on (its
// route's and each try's) and its model under its route; a record
// without a route (a job without routes) is kept nowhere.
func (t *routeTally) add(rec store.Record) {
	if rec.Route == "" {
		return
	}
	if t.times == nil {
		t.times, t.models = map[string][]int64{}, map[string]string{}
	}
	if rec.CallMS > 0 {
		t.times[rec.Route] = append(t.times[rec.Route], rec.CallMS)
	}
	for _, try := range rec.Tries {
		if try.CallMS > 0 {
			t.times[try.Route] = append(t.times[try.Route], try.CallMS)
		}
	}
	if rec.Model != "" {
		t.models[rec.Route] = rec.Model
	}
}

// recordedRoutes returns the routes panel's rows from a job's latest
// records: the report's outcomes by route (report.RouteReport, as
// tenax status counts them) and the tally's call times and models, in
// the report's order (most items first). Only the record columns and the
// model are set.
func recordedRoutes(routes []report.RouteReport, tally routeTally) []RouteRow {
	total := 0
	for _, r := range routes {
		total += r.Succeeded + r.Failed
	}
	rows := make([]RouteRow, len(routes))
	for i, r := range routes {
		items := r.Succeeded + r.Failed
		p50, p95 := percentiles(tally.times[r.Name])
		rows[i] = RouteRow{Name: r.Name, Model: tally.models[r.Name], Items: items, Failed: r.Failed, LeftBy: r.Left,
			ItemShare: share(items, total), FailShare: share(r.Failed, items), CallP50: p50, CallP95: p95}
	}
	return rows
}

// percentiles are the nearest-rank median and 95th percentile of times
// in milliseconds, which it sorts; 0 for none.
func percentiles(ms []int64) (p50, p95 time.Duration) {
	if len(ms) == 0 {
		return 0, 0
	}
	slices.Sort(ms)
	rank := func(p int) time.Duration {
		// The smallest time at least p% of the times are no longer than.
		i := (p*len(ms)+99)/100 - 1
		return time.Duration(ms[max(i, 0)]) * time.Millisecond
	}
	return rank(50), rank(95)
}

// routePanel is the routes panel: with a live run here (live, its
// Stats().Routes), one row per route of the run in the spec's order,
// its live columns from the run and its record columns from recorded
// (recordedRoutes) by name, then the routes only the records name (a
// route of an earlier run); without one, recorded as it is. nil for a
// job without routes.
func routePanel(live []engine.RouteStats, recorded []RouteRow) []RouteRow {
	if len(live) == 0 {
		return recorded
	}
	total := 0
	for _, r := range recorded {
		total += r.Items
	}
	rows := make([]RouteRow, 0, len(live)+len(recorded))
	for _, s := range live {
		row := RouteRow{ItemShare: share(0, total), FailShare: share(0, 0)}
		if i := slices.IndexFunc(recorded, func(r RouteRow) bool { return r.Name == s.Name }); i >= 0 {
			row = recorded[i]
		}
		row.Name, row.Model, row.Live = s.Name, cmp.Or(s.Model, row.Model), true
		row.Breaker, row.InFlight, row.Limit = s.Breaker.String(), s.InFlight, s.Limit
		row.Calls, row.Faults, row.Refused = s.Calls, s.Faults, s.Refused
		row.Requests = perMinute(s.RequestsPerMinute, s.RequestsPerMinuteLearned)
		row.Tokens = perMinute(s.TokensPerMinute, s.TokensPerMinuteLearned)
		rows = append(rows, row)
	}
	for _, r := range recorded {
		if !slices.ContainsFunc(live, func(s engine.RouteStats) bool { return s.Name == r.Name }) {
			rows = append(rows, r)
		}
	}
	return rows
}

// perMinute says a rate limit as told, else as learned, else "—".
func perMinute(told, learned int) string {
	switch {
	case told > 0:
		return fmt.Sprintf("%d told", told)
	case learned > 0:
		return fmt.Sprintf("%d learned", learned)
	}
	return "—"
}

// share is part of whole as a percentage, "—" when whole is 0.
func share(part, whole int) string {
	if whole == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
