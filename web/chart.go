package web

import (
	"fmt"
	template "github.com/DataDog/datadog-agent/pkg/template/html"
	"math"
	"slices"
	"strings"
	"time"
)

// chart is one line chart of a job's history, drawn on the server as SVG:
// no script and nothing loaded from elsewhere draws it, and the page's
// event stream replaces it as the records come in.
type chart struct {
	ID, Title string
	// Times are the ends of the buckets, one per value of every line.
	Times []time.Time
	Lines []chartLine
	// Ref, when set, is a dashed horizontal line (a limit) with its label.
	Ref *chartRef
	// Format writes a value of the y axis and of the labels.
	Format func(float64) string
	// Seconds are the seconds of the job each bucket covers, which its
	// rates are over: a bucket's width, less where the job started or
	// stopped (or now is) within it.
	Seconds []float64
	// Partial says the last bucket covers less than its width: it is
	// drawn at the time it reaches, the segment into it dashed.
	Partial bool
	// Width is the buckets' width.
	Width time.Duration
}

// chartLine is one series, labelled at its last point.
type chartLine struct {
	Name string
	// Class picks the line's colour in style.css (line-NAME).
	Class  string
	Values []float64 // NaN: no value (a gap)
}

type chartRef struct {
	Label string
	Value float64
}

// The chart's geometry, in SVG user units: the plot sits between the axis
// labels on the left and the lines' labels on the right.
const (
	chartW, chartH        = 590, 190
	plotL, plotR          = 54, 440
	plotT, plotB          = 12, 158
	labelGap              = 12 // the least vertical distance between two line labels
	chartFontBaselineDrop = 4
)

// SVG renders the chart.
func (c chart) SVG() template.HTML {
	var b strings.Builder
	n := len(c.Times)
	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %d %d" role="img" aria-label="%s"`, esc(c.ID), chartW, chartH, esc(c.Title))
	if n > 1 {
		// The times at the plot's edges, for the page's zoom (app.js).
		fmt.Fprintf(&b, ` data-t0="%d" data-t1="%d" data-x0="%d" data-x1="%d"`, c.Times[0].UnixMilli(), c.Times[n-1].UnixMilli(), plotL, plotR)
	}
	b.WriteString(`>`)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.Title))
	top := 0.0
	for _, l := range c.Lines {
		for _, v := range l.Values {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	if c.Ref != nil {
		top = max(top, c.Ref.Value)
	}
	top = niceCeil(top)
	y := func(v float64) float64 { return plotB - (plotB-plotT)*v/top }
	// x is in proportion to time: a partial last bucket sits at the time
	// it reaches, not a whole bucket on.
	x := func(i int) float64 {
		span := c.Times[n-1].Sub(c.Times[0])
		if n <= 1 || span <= 0 {
			return plotR
		}
		return plotL + (plotR-plotL)*float64(c.Times[i].Sub(c.Times[0]))/float64(span)
	}
	c.axes(&b, top, x, y)
	var labels []chartLabel
	if r := c.Ref; r != nil {
		fmt.Fprintf(&b, `<line class="ref" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, plotL, plotR, y(r.Value), y(r.Value))
		labels = append(labels, chartLabel{y: y(r.Value), text: r.Label, class: "ref"})
	}
	for _, l := range c.Lines {
		if lb, ok := c.line(&b, l, x, y); ok {
			labels = append(labels, lb)
		}
	}
	for _, lb := range spreadLabels(labels) {
		fmt.Fprintf(&b, `<text class="direct %s" x="%d" y="%.1f">%s</text>`, esc(lb.class), plotR+6, lb.y+chartFontBaselineDrop, esc(lb.text))
	}
	if n == 0 {
		fmt.Fprintf(&b, `<text class="axis" x="%d" y="%d" text-anchor="middle">no item has finished yet</text>`, (plotL+plotR)/2, (plotT+plotB)/2)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// line draws one line (a partial last bucket's segment dashed) and
// returns its label at its last point; false for a line of no value.
func (c chart) line(b *strings.Builder, l chartLine, x func(int) float64, y func(float64) float64) (chartLabel, bool) {
	var path strings.Builder
	pen, last := false, -1
	whole := len(l.Values)
	if c.Partial && whole > 1 && !math.IsNaN(l.Values[whole-1]) && !math.IsNaN(l.Values[whole-2]) {
		// The partial bucket's segment is drawn apart, dashed.
		whole--
	}
	for i, v := range l.Values[:whole] {
		if math.IsNaN(v) {
			pen = false
			continue
		}
		cmd := 'L'
		if !pen {
			cmd = 'M'
		}
		fmt.Fprintf(&path, "%c%.1f %.1f ", cmd, x(i), y(v))
		pen, last = true, i
	}
	if last < 0 {
		return chartLabel{}, false
	}
	fmt.Fprintf(b, `<path class="line line-%s" d="%s"/>`, esc(l.Class), strings.TrimSpace(path.String()))
	if whole < len(l.Values) {
		last = whole
		fmt.Fprintf(b, `<path class="line partial line-%s" d="M%.1f %.1f L%.1f %.1f"><title>the last bucket covers %s of its %s</title></path>`,
			esc(l.Class), x(last-1), y(l.Values[last-1]), x(last), y(l.Values[last]), millis(1000*c.Seconds[last]), c.Width)
	}
	if !hasNeighbour(l.Values, last) {
		// A lone point draws no line: mark it.
		fmt.Fprintf(b, `<circle class="dot line-%s" cx="%.1f" cy="%.1f" r="2.5"/>`, esc(l.Class), x(last), y(l.Values[last]))
	}
	return chartLabel{y: y(l.Values[last]), text: l.Name + " " + c.Format(l.Values[last]), class: "label-" + l.Class}, true
}

// axes draws the y axis (0, the middle and the top, with grid lines) and
// the x axis (the first, middle and last bucket's time).
func (c chart) axes(b *strings.Builder, top float64, x func(int) float64, y func(float64) float64) {
	n := len(c.Times)
	// The y axis: 0, the middle and the top, with grid lines.
	for _, v := range []float64{0, top / 2, top} {
		fmt.Fprintf(b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, plotL, plotR, y(v), y(v))
		fmt.Fprintf(b, `<text class="axis" x="%d" y="%.1f" text-anchor="end">%s</text>`, plotL-4, y(v)+chartFontBaselineDrop, esc(c.Format(v)))
	}
	// The x axis: the first, middle and last bucket's time.
	if n > 0 {
		span := c.Times[n-1].Sub(c.Times[0])
		for _, i := range slices.Compact([]int{0, n / 2, n - 1}) {
			anchor := "middle"
			switch i {
			case 0:
				anchor = "start"
			case n - 1:
				anchor = "end"
			}
			fmt.Fprintf(b, `<text class="axis" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(i), plotB+16, anchor, esc(axisTime(c.Times[i], span)))
		}
	}
}

func hasNeighbour(vs []float64, i int) bool {
	return i > 0 && !math.IsNaN(vs[i-1])
}

type chartLabel struct {
	y           float64
	text, class string
}

// spreadLabels moves the lines' labels apart vertically, keeping their
// order, so that lines ending close together stay readable.
func spreadLabels(ls []chartLabel) []chartLabel {
	slices.SortStableFunc(ls, func(a, b chartLabel) int { return int(math.Copysign(1, a.y-b.y)) })
	for i := 1; i < len(ls); i++ {
		if ls[i].y < ls[i-1].y+labelGap {
			ls[i].y = ls[i-1].y + labelGap
		}
	}
	// Labels pushed below the chart move back up, the others with them.
	if n := len(ls); n > 0 && ls[n-1].y > chartH-6 {
		over := ls[n-1].y - (chartH - 6)
		for i := range ls {
			ls[i].y -= over
		}
	}
	return ls
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v ≤ 0), so
// that the axis reads in round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// axisTime writes a bucket's time: with the date when the chart spans more
// than a day.
func axisTime(t time.Time, span time.Duration) string {
	if span > 24*time.Hour {
		return t.Local().Format("01-02 15:04")
	}
	return t.Local().Format("15:04:05")
}

// count writes a count or a rate: 3, 2.5, 0.25, 12k, 3.4M.
func count(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return trimZero(fmt.Sprintf("%.1f", v/1e6)) + "M"
	case a >= 1e4:
		return trimZero(fmt.Sprintf("%.1f", v/1e3)) + "k"
	case a >= 10 || a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return trimZero(fmt.Sprintf("%.1f", v))
	default:
		return trimZero(fmt.Sprintf("%.2f", v))
	}
}

// millis writes a duration given in milliseconds: 850ms, 1.2s, 3m.
func millis(v float64) string {
	switch {
	case v < 1000:
		return fmt.Sprintf("%.0fms", v)
	case v < 60_000:
		return trimZero(fmt.Sprintf("%.1f", v/1000)) + "s"
	case v < 3_600_000:
		return trimZero(fmt.Sprintf("%.1f", v/60_000)) + "m"
	default:
		return trimZero(fmt.Sprintf("%.1f", v/3_600_000)) + "h"
	}
}

func dollars(v float64) string {
	if v != 0 && math.Abs(v) < 0.01 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}

func trimZero(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func esc(s string) string { return template.HTMLEscapeString(s) }
