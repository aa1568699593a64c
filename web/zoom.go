package web

import (
	"encoding/csv"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// parseZoom reads the time range a page's charts are zoomed into: from
// and to, each a Unix time in seconds (fractions allowed) or an RFC 3339
// time; either may be left out (open).
func parseZoom(q url.Values) (timeWindow, error) {
	var w timeWindow
	for _, f := range []struct {
		name string
		to   *time.Time
	}{{"from", &w.From}, {"to", &w.To}} {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		t, err := parseZoomTime(v)
		if err != nil {
			return timeWindow{}, fmt.Errorf("zoom: %s=%q is neither a Unix time in seconds nor an RFC 3339 time", f.name, v)
		}
		*f.to = t
	}
	if !w.From.IsZero() && !w.To.IsZero() && !w.To.After(w.From) {
		return timeWindow{}, fmt.Errorf("zoom: to (%s) is not after from (%s)", w.To.Format(time.RFC3339), w.From.Format(time.RFC3339))
	}
	return w, nil
}

func parseZoomTime(v string) (time.Time, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.Parse(time.RFC3339Nano, v)
}

// query is the window as a query string ("" for the whole job), for the
// page's links.
func (w timeWindow) query() string {
	if w.zero() {
		return ""
	}
	q := url.Values{}
	if !w.From.IsZero() {
		q.Set("from", strconv.FormatFloat(float64(w.From.UnixMilli())/1000, 'f', -1, 64))
	}
	if !w.To.IsZero() {
		q.Set("to", strconv.FormatFloat(float64(w.To.UnixMilli())/1000, 'f', -1, 64))
	}
	return "?" + q.Encode()
}

// label says the window in words, "" for the whole job.
func (w timeWindow) label() string {
	if w.zero() {
		return ""
	}
	end := func(t time.Time, open string) string {
		if t.IsZero() {
			return open
		}
		return t.Local().Format("2006-01-02 15:04:05")
	}
	return end(w.From, "the start") + " – " + end(w.To, "now")
}

// chartCSV serves one chart's data as CSV: a header row (time, the
// seconds of the job the bucket covers, each line's name, the limit when
// the chart has one), then a row per bucket, the values the chart draws
// (empty for a gap). It takes the page's zoom.
func (s *Server) chartCSV(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	name, ok := strings.CutSuffix(r.PathValue("file"), ".csv")
	if !ok {
		http.Error(w, "a chart's data is at /jobs/ID/charts/CHART.csv", http.StatusNotFound)
		return
	}
	zoom, err := parseZoom(r.URL.Query())
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	d, err := s.jobData(r.Context(), id, zoom)
	if err != nil {
		notFound(w, err)
		return
	}
	for _, c := range d.Charts {
		if c.ID == name {
			w.Header().Set("Content-Type", "text/csv; charset=utf-8")
			w.Header().Set("Content-Disposition", fmt.Sprintf("attachment; filename=%q", id+"-"+name+".csv"))
			writeChartCSV(w, c)
			return
		}
	}
	var names []string
	for _, c := range d.Charts {
		names = append(names, c.ID)
	}
	http.Error(w, fmt.Sprintf("job %s has no chart %q (it has %s)", id, name, strings.Join(names, ", ")), http.StatusNotFound)
}

func writeChartCSV(w http.ResponseWriter, c chart) {
	cw := csv.NewWriter(w)
	head := []string{"time", "bucket_seconds"}
	for _, l := range c.Lines {
		head = append(head, l.Name)
	}
	if c.Ref != nil {
		head = append(head, c.Ref.Label)
	}
	cw.Write(head)
	for i, t := range c.Times {
		row := []string{t.UTC().Format(time.RFC3339Nano), strconv.FormatFloat(c.Seconds[i], 'f', -1, 64)}
		for _, l := range c.Lines {
			v := ""
			if !math.IsNaN(l.Values[i]) {
				v = strconv.FormatFloat(l.Values[i], 'f', -1, 64)
			}
			row = append(row, v)
		}
		if c.Ref != nil {
			row = append(row, strconv.FormatFloat(c.Ref.Value, 'f', -1, 64))
		}
		cw.Write(row)
	}
	cw.Flush()
}
