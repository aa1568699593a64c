package web

import (
	"bufio"
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

// The job list counts each job's items and pushes the counts as records
// are written, without a reload.
func TestJobListRefreshesWithCounts(t *testing.T) {
	st, id := newJob(t, 10) // 2 succeeded, 1 failed, 7 pending
	srv := httptest.NewServer(New(Config{Store: st, Refresh: 20 * time.Millisecond}))
	defer srv.Close()

	_, body := get(t, srv.Client(), srv.URL+"/", nil)
	for _, want := range []string{`data-events="/events"`, `id="job-` + id + `"`, `<progress max="10" value="3">`, `<td class="num ok">2</td>`, `>1</a></td>`, `<td class="num">7</td>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the job list lacks %s:\n%s", want, body)
		}
	}

	resp, err := http.Get(srv.URL + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := &sseReader{bufio.NewScanner(resp.Body)}
	until := func(want string) {
		t.Helper()
		for {
			ev, data, err := r.next()
			if err != nil {
				t.Fatalf("the stream ended (%v) before the list showed %q", err, want)
			}
			if ev == "jobs" && strings.Contains(data, want) {
				return
			}
		}
	}
	until(`<progress max="10" value="3">`)
	// Another process writes records: the list shows them.
	j, err := st.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if err := j.Append(context.Background(), store.Record{Idx: 5, Input: []byte(`{}`), Output: []byte(`{}`), Attempts: 1, FinishedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	if err := j.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	until(`<progress max="10" value="4">`)
	j.Close()
}

// tenax ui, without the run's process (a job workers run), reads the rate
// and the ETA from the records: over the last minute, or over the time
// the job existed when that is shorter. In a job's first 30 seconds at 30
// records a second the page said 15/s (30 s of records over a whole
// minute) and an ETA twice the real one.
func TestJobRateInItsFirstMinuteIsOverTheTimeItExisted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := context.Background()
		st := &memory.Store{}
		created := time.Now()
		j, err := st.Create(ctx, store.Manifest{Created: created, Items: 3000, State: store.StateRunning})
		if err != nil {
			t.Fatal(err)
		}
		id := j.Manifest().ID
		next := 0
		// run writes 30 records a second, each item 100ms long, for d.
		run := func(d time.Duration) {
			for range int(d / (time.Second / 30)) {
				time.Sleep(time.Second / 30)
				if err := j.Append(ctx, store.Record{Idx: next, Input: []byte(`{}`), Output: []byte(`{}`), Attempts: 1,
					DurationMS: 100, FinishedAt: time.Now()}); err != nil {
					t.Fatal(err)
				}
				next++
			}
		}
		tests := []struct {
			name    string
			run     time.Duration
			wantETA time.Duration
		}{
			// 900 records in 30 s: 30/s, 2100 left: 70 s.
			{"30 s into the job", 30 * time.Second, 70 * time.Second},
			// A minute and a half in: the last minute's 1800 records
			// over the minute; 300 left: 10 s.
			{"90 s into the job", time.Minute, 10 * time.Second},
		}
		for _, tt := range tests {
			run(tt.run)
			v, err := buildView(ctx, st, id, timeWindow{})
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(v.Rate-30) > 0.5 {
				t.Errorf("%s: rate %.2f/s, want 30/s (records over the time the job existed, at most a minute)", tt.name, v.Rate)
			}
			if d := v.ETA - tt.wantETA; d < -2*time.Second || d > 2*time.Second {
				t.Errorf("%s: ETA %v, want %v", tt.name, v.ETA, tt.wantETA)
			}
			// The page shows the same.
			rec := httptest.NewRecorder()
			New(Config{Store: st}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/jobs/"+id, nil))
			if !strings.Contains(rec.Body.String(), `<b id="job-rate">30</b>`) {
				t.Errorf("%s: the page lacks a rate of 30/s:\n%s", tt.name, rec.Body)
			}
		}
	})
}
