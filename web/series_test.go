package web

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

var t0 = time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)

func rec(finishedSec float64, durMS int64, class classify.Class) store.Record {
	r := store.Record{FinishedAt: t0.Add(time.Duration(finishedSec * float64(time.Second))), DurationMS: durMS,
		Usage: task.Usage{InputTokens: 10, OutputTokens: 3}}
	if class != classify.Unknown {
		r.Class, r.Error = class, "boom"
	}
	cost := 0.5
	r.CostUSD = &cost
	return r
}

func TestSeriesCountsEachSecondFromTheRecords(t *testing.T) {
	var s series
	// Second 0: two items of 500ms; second 1: one item of 2s that started
	// in second -1 and failed retryable; second 2: one invalid failure.
	s.add(rec(0.5, 500, 0))
	s.add(rec(0.9, 500, 0))
	s.add(rec(1.5, 2000, classify.Retryable))
	s.add(rec(2.2, 100, classify.Invalid))
	if s.width != time.Second {
		t.Fatalf("width = %v, want 1s for a job of seconds", s.width)
	}
	if !s.origin.Equal(t0.Add(-time.Second)) {
		t.Fatalf("origin = %v, want %v: the 2s item started a second before the first record", s.origin, t0.Add(-time.Second))
	}
	cs := s.charts(4, chartSpan{})
	byID := map[string]chart{}
	for _, c := range cs {
		byID[c.ID] = c
	}
	tests := []struct {
		chart string
		line  int
		want  []float64
	}{
		// The job existed from -0.5 s (the 2 s item's start) to 2.2 s
		// (the last record): the first and last buckets' rates are over
		// their half second (the least a bucket is read over), not a
		// whole one.
		{"chart-rate", 0, []float64{0, 2, 1, 2}},
		// In flight: the 2s item spans [-0.5, 1.5]; the two 500ms items
		// [0, .5] and [.4, .9]; the invalid one [2.1, 2.2].
		{"chart-inflight", 0, []float64{1, 2, 0.5, 0.2}},
		{"chart-tokens", 0, []float64{0, 20, 30, 40}},
		{"chart-cost", 0, []float64{0, 1, 1.5, 2}},
	}
	for _, tt := range tests {
		got := byID[tt.chart].Lines[tt.line].Values
		if !approxEqual(got, tt.want) {
			t.Errorf("%s = %v, want %v", tt.chart, got, tt.want)
		}
	}
	fails := byID["chart-failures"].Lines
	if len(fails) != 2 || fails[0].Name != "retryable" || fails[1].Name != "invalid" {
		t.Fatalf("failure lines = %+v, want retryable and invalid only (the classes that occurred)", fails)
	}
	if !approxEqual(fails[0].Values, []float64{0, 0, 1, 0}) || !approxEqual(fails[1].Values, []float64{0, 0, 0, 1}) {
		t.Errorf("failures by class = %v / %v, want the retryable one in second 1 and the invalid in second 2", fails[0].Values, fails[1].Values)
	}
	if r := byID["chart-inflight"].Ref; r == nil || r.Value != 4 {
		t.Errorf("in-flight chart's limit = %+v, want concurrency.max 4", r)
	}
}

// TestSeriesCharts429sFromTheRecords: the records count their calls
// answered 429, most of them retried into a success; the failures chart
// draws them as a line of their own, only when there were any.
func TestSeriesCharts429sFromTheRecords(t *testing.T) {
	var s series
	limited := rec(0.5, 500, 0)
	limited.RateLimited = 3
	s.add(limited)
	s.add(rec(1.5, 500, classify.Retryable))
	var fails []chartLine
	for _, c := range s.charts(0, chartSpan{}) {
		if c.ID == "chart-failures" {
			fails = c.Lines
		}
	}
	if len(fails) != 2 || fails[1].Name != "429s" || !approxEqual(fails[1].Values, []float64{3, 0}) {
		t.Fatalf("failure lines = %+v, want retryable and 429s with 3 in second 0", fails)
	}
	var none series
	none.add(rec(0.5, 500, classify.Retryable))
	for _, c := range none.charts(0, chartSpan{}) {
		for _, l := range c.Lines {
			if l.Name == "429s" {
				t.Errorf("%s draws a 429s line for a job with none", c.ID)
			}
		}
	}
}

func TestSeriesPercentilesAreWithinTheirBin(t *testing.T) {
	var s series
	for i := range 100 {
		// 1..100 × 10ms: p50 ≈ 500ms, p90 ≈ 900ms, p99 ≈ 990ms.
		s.add(rec(0.999, int64(10*(i+1)), 0))
	}
	b := &s.buckets[s.index(t0)]
	for _, tt := range []struct{ q, want float64 }{{0.5, 500}, {0.9, 900}, {0.99, 990}} {
		got := b.percentile(tt.q)
		if got < tt.want/math.Sqrt2 || got > tt.want*math.Sqrt2 {
			t.Errorf("p%.0f = %.0fms, want within a bin (×√2) of %.0fms", 100*tt.q, got, tt.want)
		}
	}
	if !math.IsNaN((&seriesBucket{}).percentile(0.5)) {
		t.Error("an empty bucket's percentile should be NaN (a gap in the line), not a value")
	}
}

func TestSeriesOfAWeekStaysBoundedAndKeepsItsTotals(t *testing.T) {
	var s series
	const n = 7 * 24 * 60
	for i := range n { // one item a minute for a week
		s.add(rec(float64(60*i), 1000, 0))
	}
	// And one record of an item that finished before all the others.
	s.add(rec(-3600, 1000, classify.Item))
	if len(s.buckets) > seriesBuckets {
		t.Fatalf("%d buckets, want at most %d", len(s.buckets), seriesBuckets)
	}
	total, failed := 0, 0
	for _, b := range s.buckets {
		total += b.finished
		failed += b.failed[2]
	}
	if total != n+1 || failed != 1 {
		t.Errorf("buckets count %d items (%d item failures), want %d (1): merging must lose none", total, failed, n+1)
	}
	if end := s.origin.Add(time.Duration(len(s.buckets)) * s.width); s.origin.After(t0.Add(-3601*time.Second)) || end.Before(t0.Add(time.Duration(60*(n-1))*time.Second)) {
		t.Errorf("buckets span %v..%v, want the hour before the first record to the last", s.origin, end)
	}
}

func TestChartSVGLabelsLinesAndAxes(t *testing.T) {
	c := chart{ID: "c", Title: "Latency <ms>", Times: []time.Time{t0, t0.Add(time.Second), t0.Add(2 * time.Second)}, Format: millis,
		Lines: []chartLine{{Name: "p99", Class: "p99", Values: []float64{100, math.NaN(), 2500}}, {Name: "p50", Class: "p50", Values: []float64{50, 60, 70}}},
		Ref:   &chartRef{Label: "limit 3", Value: 3000}}
	svg := string(c.SVG())
	for _, want := range []string{
		"p99 2.5s", "p50 70ms", "limit 3", // direct labels: the last value of each line
		"Latency &lt;ms&gt;", // escaped title
		"5s",                 // the y axis's top: 3000 rounded up to 5000ms
		t0.Local().Format("15:04:05"),
		`class="dot line-p99"`, // the p99's last point has no neighbour
	} {
		if !strings.Contains(svg, want) {
			t.Errorf("the SVG lacks %q:\n%s", want, svg)
		}
	}
	if strings.Count(svg, "<path") != 2 || !strings.Contains(svg, "M54.0") {
		t.Errorf("want two paths starting at the plot's left edge:\n%s", svg)
	}
}

func TestSpreadLabelsKeepsThemApart(t *testing.T) {
	got := spreadLabels([]chartLabel{{y: 50, text: "a"}, {y: 52, text: "b"}, {y: 51, text: "c"}})
	for i := 1; i < len(got); i++ {
		if got[i].y-got[i-1].y < labelGap {
			t.Errorf("labels %q and %q are %.1f apart, want at least %d", got[i-1].text, got[i].text, got[i].y-got[i-1].y, labelGap)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for _, tt := range []struct{ in, want float64 }{{0, 1}, {0.3, 0.5}, {1, 1}, {1.1, 2}, {3, 5}, {7, 10}, {120, 200}} {
		if got := niceCeil(tt.in); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func approxEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > 1e-6 {
			return false
		}
	}
	return true
}

// Re-running a group from the page wrote a success over each failure,
// and the charts, drawn from each item's latest record, lost the first
// run's failures: they are drawn from every record of every run.
func TestChartsKeepTheFailuresOfARunThatWasReRun(t *testing.T) {
	ctx := t.Context()
	st := &memory.Store{}
	j, err := st.Create(ctx, store.Manifest{Created: t0, Items: 10, State: store.StateFailed})
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.Record
	for i := range 10 {
		r := rec(1+0.1*float64(i), 100, classify.Unknown)
		if i%2 == 0 {
			r = rec(1+0.1*float64(i), 100, classify.Retryable)
		}
		r.Idx = i
		recs = append(recs, r)
	}
	// The re-run, a minute later: every failure succeeds.
	for i := 0; i < 10; i += 2 {
		r := rec(61+0.1*float64(i), 100, classify.Unknown)
		r.Idx = i
		recs = append(recs, r)
	}
	if err := j.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	v, err := buildView(ctx, st, j.Manifest().ID, timeWindow{})
	if err != nil {
		t.Fatal(err)
	}
	if v.Report.Failed != 0 {
		t.Fatalf("the report counts %d failed items, want 0 after the re-run", v.Report.Failed)
	}
	var failures, finished float64
	for _, c := range v.Charts {
		for _, l := range c.Lines {
			for i, x := range l.Values {
				switch {
				case c.ID == "chart-failures" && l.Name == "retryable":
					failures += x
				case c.ID == "chart-rate":
					finished += x * c.Seconds[i]
				}
			}
		}
	}
	if failures != 5 {
		t.Errorf("the failures chart draws %v retryable failures, want the first run's 5", failures)
	}
	if math.Abs(finished-15) > 1e-6 {
		t.Errorf("the rate chart adds up to %v records, want 15: both runs'", finished)
	}
}

// The last bucket of a running job covers only the time up to now: its
// rate was drawn over the whole bucket, so every live chart ended in a
// cliff (103/s drawn against a real 137/s).
func TestThePartialLastBucketIsDrawnAsPartial(t *testing.T) {
	tests := []struct {
		name string
		// records are written 10 a second, each 50ms, at 0.05 s, 0.15 s, …
		records     int
		now         time.Duration
		wantPoints  int
		wantPartial bool
	}{
		// The last record at 10.65 s, now 10.7 s: the last bucket is
		// drawn, its 7 records over its 0.7 s.
		{"0.7 s into the last bucket", 107, 10700 * time.Millisecond, 11, true},
		// The last record at 11.15 s, now 11.2 s: too little of the
		// bucket to draw, left out.
		{"0.2 s into the last bucket", 112, 11200 * time.Millisecond, 11, false},
	}
	for _, tt := range tests {
		var s series
		for i := range tt.records {
			s.add(rec(0.05+0.1*float64(i), 50, classify.Unknown))
		}
		var rate chart
		for _, c := range s.charts(0, chartSpan{Through: t0.Add(tt.now), Live: true}) {
			if c.ID == "chart-rate" {
				rate = c
			}
		}
		vs := rate.Lines[0].Values
		if len(vs) != tt.wantPoints || rate.Partial != tt.wantPartial {
			t.Fatalf("%s: %d points, partial %v; want %d, %v", tt.name, len(vs), rate.Partial, tt.wantPoints, tt.wantPartial)
		}
		for i, v := range vs {
			if math.Abs(v-10) > 1e-6 {
				t.Errorf("%s: bucket %d drawn at %v/s, want 10/s (a cliff at the end is a bucket read over more time than it covers)", tt.name, i, v)
			}
		}
		if tt.wantPartial && !strings.Contains(string(rate.SVG()), `class="line partial line-rate"`) {
			t.Errorf("%s: the partial bucket's segment is not drawn dashed:\n%s", tt.name, rate.SVG())
		}
	}
}
