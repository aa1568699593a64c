package web

import (
	"encoding/json"
	"fmt"
	"time"

	template "github.com/DataDog/datadog-agent/pkg/template/html"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/store"
)

// funcs are the templates' formatting helpers.
var funcs = template.FuncMap{
	"dur": func(d time.Duration) string {
		switch {
		case d <= 0:
			return "—"
		case d < time.Second:
			return d.Round(time.Millisecond).String()
		default:
			return d.Round(time.Second).String()
		}
	},
	// latency is a percentile of item times: to the millisecond under
	// ten seconds, to the tenth of a second above.
	"latency": func(d time.Duration) string {
		switch {
		case d <= 0:
			return "—"
		case d < 10*time.Second:
			return d.Round(time.Millisecond).String()
		default:
			return d.Round(100 * time.Millisecond).String()
		}
	},
	"ms":  func(ms int64) string { return (time.Duration(ms) * time.Millisecond).Round(time.Millisecond).String() },
	"usd": func(v float64) string { return fmt.Sprintf("$%.4f", v) },
	"pct": func(part, whole int) string {
		if whole <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(part)/float64(whole))
	},
	"rate": func(v float64) string { return fmt.Sprintf("%.1f", v) },
	"clock": func(t time.Time) string {
		if t.IsZero() {
			return "—"
		}
		return t.Local().Format("15:04:05.000")
	},
	"date":  func(t time.Time) string { return t.Local().Format(time.DateTime) },
	"zero":  func(t time.Time) bool { return t.IsZero() },
	"until": func(t, now time.Time) string { return t.Sub(now).Round(100 * time.Millisecond).String() },
	"planned": func(total, skipped, planned int) int {
		if planned > 0 {
			return planned
		}
		return total - skipped
	},
	"tracked": trackedErrors,
	"num":     count,
	"list":    func(s ...string) []string { return s },
	"short":   func(s string) string { return truncate(firstLine(s), 200) },
	// failed is store.Record.Failed: the pages' template package calls
	// no methods (server.go says why).
	"failed": func(r store.Record) bool { return r.Failed() },
	"svg":    func(c chart) template.HTML { return c.SVG() },
}

// trackedErrors decodes a record's tracked_errors for the item page's
// table; nil when they do not decode (the page shows their text instead).
func trackedErrors(raw json.RawMessage) []heal.TrackedError {
	var errs []heal.TrackedError
	if json.Unmarshal(raw, &errs) != nil {
		return nil
	}
	return errs
}
