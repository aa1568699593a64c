package web

import (
	"encoding/csv"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// chartJob is a finished job of 60 records, one a second from t0, every
// fifth failed retryable.
func chartJob(t *testing.T) (*memory.Store, string) {
	t.Helper()
	st := &memory.Store{}
	j, err := st.Create(t.Context(), store.Manifest{Created: t0, Items: 60, State: store.StateFailed, Spec: []byte(`{"concurrency": {"max": 4}}`)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		class := classify.Unknown
		if i%5 == 0 {
			class = classify.Retryable
		}
		r := rec(float64(i)+0.5, 200, class)
		r.Idx, r.Input, r.Output = i, []byte(`{}`), []byte(`{}`)
		if err := j.Append(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	return st, j.Manifest().ID
}

func getCSV(t *testing.T, s *Server, path string) (*httptest.ResponseRecorder, [][]string) {
	t.Helper()
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1"+path, nil))
	if rec.Code != http.StatusOK {
		return rec, nil
	}
	rows, err := csv.NewReader(strings.NewReader(rec.Body.String())).ReadAll()
	if err != nil {
		t.Fatalf("GET %s: not CSV: %v\n%s", path, err, rec.Body)
	}
	return rec, rows
}

// A chart's CSV is the series the chart draws: a header row, then a row
// per bucket with its time, the seconds it covers and each line's value.
func TestAChartsCSVHasTheSeriesItDraws(t *testing.T) {
	st, id := chartJob(t)
	s := New(Config{Store: st})
	rec, rows := getCSV(t, s, "/jobs/"+id+"/charts/chart-failures.csv")
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/csv") {
		t.Fatalf("Content-Type %q, want text/csv (status %d: %s)", ct, rec.Code, rec.Body)
	}
	if want := []string{"time", "bucket_seconds", "retryable"}; strings.Join(rows[0], ",") != strings.Join(want, ",") {
		t.Errorf("header %q, want %q", rows[0], want)
	}
	failed := 0.0
	for _, r := range rows[1:] {
		v, err := strconv.ParseFloat(r[2], 64)
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		failed += v
	}
	if failed != 12 {
		t.Errorf("the failures CSV sums to %v, want the job's 12 failures", failed)
	}
	_, rows = getCSV(t, s, "/jobs/"+id+"/charts/chart-inflight.csv")
	if h := rows[0]; h[len(h)-1] != "concurrency.max 4" || rows[1][len(h)-1] != "4" {
		t.Errorf("the in-flight CSV's limit column: header %q, first row %q; want concurrency.max 4", h, rows[1])
	}
	if rec, _ := getCSV(t, s, "/jobs/"+id+"/charts/chart-nosuch.csv"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), "chart-rate") {
		t.Errorf("an unknown chart: %d %q, want 404 naming the charts there are", rec.Code, rec.Body)
	}
}

// Zoomed into ten seconds of a minute-long job, the charts and their CSV
// hold those seconds alone, and the page's links keep the zoom.
func TestZoomedChartsHoldTheirTimeRangeAlone(t *testing.T) {
	st, id := chartJob(t)
	s := New(Config{Store: st})
	from, to := t0.Add(20*time.Second), t0.Add(30*time.Second)
	q := "?from=" + strconv.FormatInt(from.Unix(), 10) + "&to=" + strconv.FormatInt(to.Unix(), 10)
	_, rows := getCSV(t, s, "/jobs/"+id+"/charts/chart-rate.csv"+q)
	total := 0.0
	for _, r := range rows[1:] {
		at, err := time.Parse(time.RFC3339Nano, r[0])
		if err != nil || at.Before(from) || at.After(to.Add(time.Second)) {
			t.Errorf("a row at %q, outside the zoom %v–%v", r[0], from, to)
		}
		rate, _ := strconv.ParseFloat(r[2], 64)
		secs, _ := strconv.ParseFloat(r[1], 64)
		total += rate * secs
	}
	if total != 10 {
		t.Errorf("the zoomed rate adds up to %v records, want the 10 that finished in the range", total)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/jobs/"+id+q, nil))
	for _, want := range []string{`id="zoomed"`, `href="/jobs/` + id + `/charts/chart-rate.csv` + strings.ReplaceAll(q, "&", "&amp;"), `id="zoom-out"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the zoomed page lacks %s", want)
		}
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/jobs/"+id+"?from=30&to=20", nil))
	if rec.Code != http.StatusBadRequest {
		t.Errorf("a zoom ending before it starts: %d, want 400", rec.Code)
	}
}

// Two workers of 8 run 16 items at once: the in-flight chart drew one
// worker's concurrency.max (8) against them.
func TestTheInFlightChartsLimitIsTheSumOverLiveWorkers(t *testing.T) {
	stopped := t0
	d := &workersData{Workers: []workerRow{
		{Info: workertype.Info{ID: "a"}},
		{Info: workertype.Info{ID: "b"}},
		{Info: workertype.Info{ID: "c", Concurrency: 4}},
		{Info: workertype.Info{ID: "gone", Stopped: &stopped}},
		{Info: workertype.Info{ID: "lost", Lost: true}},
	}}
	cs := withWorkersLimit([]chart{{ID: "chart-rate"}, {ID: "chart-inflight", Ref: &chartRef{Value: 8}}}, d, 8)
	if r := cs[1].Ref; r == nil || r.Value != 20 || !strings.Contains(r.Label, "3 worker") {
		t.Errorf("the in-flight limit = %+v, want 20 over 3 live workers (8 + 8 + 4)", r)
	}
	if one := withWorkersLimit(cs[:2], &workersData{Workers: []workerRow{{}}}, 8); one[1].Ref.Label != "concurrency.max 8" {
		t.Errorf("one worker of the spec's limit: %q, want concurrency.max 8", one[1].Ref.Label)
	}
}
