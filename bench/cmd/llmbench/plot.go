package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// plot renders the per-second series that `goodput -series DIR` wrote as
// one SVG: successes per second of each run against the hidden limit
// (top), and each run's concurrency limit (bottom).
type plot struct {
	Dir, Out, Title string
	RPM             int
}

type curve struct {
	name   string
	ok     []float64
	limits []float64 // NaN-free: -1 where the run has no limit
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#17becf"}

func (p plot) run(out io.Writer) error {
	files, err := filepath.Glob(filepath.Join(p.Dir, "*.csv"))
	if err != nil {
		return err
	}
	if len(files) == 0 {
		return fmt.Errorf("no CSV series in %s: run `llmbench goodput -series %s` first", p.Dir, p.Dir)
	}
	sort.Strings(files)
	var curves []curve
	maxT, maxOK, maxLimit := 1.0, float64(p.RPM)/60, 1.0
	for _, f := range files {
		c, err := readCurve(f)
		if err != nil {
			return err
		}
		curves = append(curves, c)
		maxT = max(maxT, float64(len(c.ok)))
		for i := range c.ok {
			maxOK = max(maxOK, c.ok[i])
			maxLimit = max(maxLimit, c.limits[i])
		}
	}
	const w, h, left, right, top, gap, panel = 900.0, 560.0, 70.0, 170.0, 40.0, 60.0, 200.0
	plotW := w - left - right
	x := func(t float64) float64 { return left + plotW*t/maxT }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`+"\n", w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/><text x="%.0f" y="22" font-size="15">%s</text>`+"\n", left, xmlEscape(p.Title))
	panels := []struct {
		label string
		y0    float64
		max   float64
		value func(c curve, i int) float64
	}{
		{"successes per second", top, maxOK * 1.1, func(c curve, i int) float64 { return c.ok[i] }},
		{"concurrency limit", top + panel + gap, maxLimit * 1.1, func(c curve, i int) float64 { return c.limits[i] }},
	}
	for _, pn := range panels {
		y := func(v float64) float64 { return pn.y0 + panel - panel*v/pn.max }
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", left, pn.y0, plotW, panel)
		fmt.Fprintf(&b, `<text x="10" y="%.0f" transform="rotate(-90 10 %.0f)" text-anchor="end">%s</text>`+"\n", pn.y0+10, pn.y0+10, pn.label)
		for _, frac := range []float64{0, 0.5, 1} {
			v := pn.max / 1.1 * frac
			fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`+"\n", left-6, y(v)+4, v)
		}
		if pn.label == "successes per second" && p.RPM > 0 {
			lim := float64(p.RPM) / 60
			fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#000" stroke-dasharray="4 3"/><text x="%.0f" y="%.1f" text-anchor="end">hidden limit %d rpm</text>`+"\n",
				left, left+plotW, y(lim), y(lim), left+plotW-4, y(lim)-4, p.RPM)
		}
		for ci, c := range curves {
			var pts []string
			for i := range c.ok {
				v := pn.value(c, i)
				if v < 0 {
					continue
				}
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(i+1)), y(v)))
			}
			if len(pts) > 0 {
				fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.5" points="%s"/>`+"\n", palette[ci%len(palette)], strings.Join(pts, " "))
			}
		}
	}
	axisY := top + 2*panel + gap + 30
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">seconds since the start of the run (0 – %.0f)</text>`+"\n", left+plotW/2, axisY, maxT)
	for ci, c := range curves {
		ly := top + 20 + 18*float64(ci)
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="%s" stroke-width="3"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			left+plotW+6, left+plotW+26, ly+panel/2, ly+panel/2, palette[ci%len(palette)], left+plotW+30, ly+panel/2+4, xmlEscape(c.name))
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(p.Out, []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s (%d runs)\n", p.Out, len(curves))
	return nil
}

func readCurve(path string) (curve, error) {
	f, err := os.Open(path)
	if err != nil {
		return curve{}, err
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return curve{}, fmt.Errorf("%s: %w", path, err)
	}
	c := curve{name: strings.TrimSuffix(filepath.Base(path), ".csv")}
	for i, r := range rows {
		if i == 0 || len(r) < 3 {
			continue
		}
		ok, err := strconv.ParseFloat(r[1], 64)
		if err != nil {
			return curve{}, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		limit := -1.0
		if r[2] != "" {
			if limit, err = strconv.ParseFloat(r[2], 64); err != nil {
				return curve{}, fmt.Errorf("%s line %d: %w", path, i+1, err)
			}
		}
		c.ok = append(c.ok, ok)
		c.limits = append(c.limits, limit)
	}
	return c, nil
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
