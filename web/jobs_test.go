package web

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
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
// and the ETA from the records.
func TestJobPageFromTheStoreShowsThroughputAndETA(t *testing.T) {
	st, id := newJob(t, 10) // running: 3 records just written, 7 pending
	srv := httptest.NewServer(New(Config{Store: st}))
	defer srv.Close()
	_, body := get(t, srv.Client(), srv.URL+"/jobs/"+id, nil)
	// 3 records in the last minute: 0.05/s; 7 pending at that rate: 140s.
	for _, want := range []string{`<b id="job-rate">0.05</b>`, `<b id="job-eta">2m20s</b>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %s", want)
		}
	}
}
