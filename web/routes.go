package web

import (
	"fmt"

	"github.com/tenaxhq/tenax/engine"
)

// RouteRow is one route of a live run as the page's routes panel shows
// it: its breaker, its calls, and its share of the run's records and of
// its failures.
type RouteRow struct {
	Name, Model string
	Breaker     string
	Calls       int
	// Items counts the records the route produced, Failed those that
	// failed.
	Items, Failed int
	// Faults counts the route's calls that failed as an outage or a
	// fatal error (what its breaker counts), Refused the calls its
	// breaker refused.
	Faults, Refused int
	// Limit is the route's concurrency limit now (adaptive concurrency
	// learns it).
	Limit int
	// ItemShare is the route's part of the records every route produced,
	// FailShare the failed part of its own records: "62.5%", "—" for
	// none.
	ItemShare, FailShare string
}

// routeRows returns the rows of the routes panel for a run's routes.
func routeRows(rs []engine.RouteStats) []RouteRow {
	total := 0
	for _, r := range rs {
		total += r.Succeeded + r.Failed
	}
	rows := make([]RouteRow, len(rs))
	for i, r := range rs {
		items := r.Succeeded + r.Failed
		rows[i] = RouteRow{Name: r.Name, Model: r.Model, Breaker: r.Breaker.String(), Calls: r.Calls,
			Items: items, Failed: r.Failed, Faults: r.Faults, Refused: r.Refused, Limit: r.Limit,
			ItemShare: share(items, total), FailShare: share(r.Failed, items)}
	}
	return rows
}

// share is part of whole as a percentage, "—" when whole is 0.
func share(part, whole int) string {
	if whole == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
}
