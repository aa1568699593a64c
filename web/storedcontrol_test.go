package web

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// heldServer answers every request once the channel it finds at the
// request's start closes, so that a test decides when the calls in flight
// end.
type heldServer struct {
	started atomic.Int64
	release atomic.Pointer[chan struct{}]
}

func (h *heldServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.started.Add(1)
	select {
	case <-*h.release.Load():
	case <-r.Context().Done():
		return
	}
	fmt.Fprintln(w, `{"ok":true}`)
}

func (h *heldServer) hold() chan struct{} {
	ch := make(chan struct{})
	h.release.Store(&ch)
	return ch
}

// syncLog is a log the run writes while the test reads it.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// runElsewhere starts a job of n items, two calls at a time, each held by
// the returned server, as `tenax run` in another terminal would over st:
// this process's page has no monitor of it. It returns once the job
// exists, with the run's result to come.
func runElsewhere(t *testing.T, st *jsonl.Store, n int) (*heldServer, string, <-chan *job.Result, *syncLog) {
	t.Helper()
	srv := &heldServer{}
	srv.hold()
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	dir := t.TempDir()
	var items strings.Builder
	for i := range n {
		fmt.Fprintf(&items, "{\"n\": %d}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(items.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf("input: items.jsonl\ntask:\n  type: http\n  url: \"%s/{{.n}}\"\nconcurrency: {max: 2}\n", hs.URL)
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncLog{}
	done := make(chan *job.Result, 1)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		res, err := job.Run(ctx, filepath.Join(dir, "job.yaml"), job.Options{Store: st, Logger: slog.New(slog.NewTextHandler(logs, nil))})
		if err != nil {
			t.Errorf("the run: %v", err)
		}
		done <- res
	}()
	var id string
	waitFor(t, "the job created", func() bool {
		list, _ := st.List(context.Background())
		if len(list) == 1 {
			id = list[0].ID
		}
		return id != ""
	})
	return srv, id, done, logs
}

// records counts the job's items with a record.
func records(t *testing.T, st store.Store, id string) int {
	t.Helper()
	j, err := st.OpenReadOnly(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	o, err := j.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ok, failed, _ := o.Count(len(o))
	return ok + failed
}

// TestThePageOfAnotherProcessPausesContinuesAndStopsItsRun: `tenax ui`
// watching a run of another process (`tenax run` in one terminal, the
// page in another) answered 409 to Pause, Continue and Stop. The page
// writes the request `tenax pause` writes, in the job's control log, the
// run takes it, the page shows what the run holds, and a stop drains the
// calls in flight and records them.
func TestThePageOfAnotherProcessPausesContinuesAndStopsItsRun(t *testing.T) {
	st := &jsonl.Store{Home: t.TempDir()}
	srv, id, done, logs := runElsewhere(t, st, 10)
	first := *srv.release.Load()
	s := New(Config{Store: st, Operator: "alice on the web page"})
	waitFor(t, "2 calls in flight", func() bool { return srv.started.Load() == 2 })
	page := s.renderJob(t, id)
	if !strings.Contains(page, "running</span> in another process") || !strings.Contains(page, `id="run-pause"`) {
		t.Fatalf("the page of another process's run offers no Pause:\n%s", page)
	}
	post := func(do string) *httptest.ResponseRecorder {
		return postControl(s, id, url.Values{"do": {do}, "csrf": {s.csrf}})
	}
	if rec := post("continue"); rec.Code != http.StatusConflict {
		t.Errorf("continue of a run not paused: %d %s, want 409", rec.Code, rec.Body)
	}
	if rec := post("pause"); rec.Code != http.StatusSeeOther {
		t.Fatalf("pause: %d %s, want 303", rec.Code, rec.Body)
	}
	waitFor(t, "the page to show the run's pause", func() bool {
		return strings.Contains(s.renderJob(t, id), "paused</span> by alice on the web page at")
	})
	if page := s.renderJob(t, id); !strings.Contains(page, `id="run-continue"`) {
		t.Errorf("the page of the paused run offers no Continue:\n%s", page)
	}
	if rec := post("pause"); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "already paused, by alice on the web page") {
		t.Errorf("a second pause: %d %s, want 409 naming who paused", rec.Code, rec.Body)
	}
	close(first)
	waitFor(t, "the 2 calls in flight at the pause recorded", func() bool { return records(t, st, id) == 2 })
	if n := srv.started.Load(); n != 2 {
		t.Errorf("%d calls started under the pause, want only the 2 in flight when it began", n)
	}

	second := srv.hold()
	if rec := post("continue"); rec.Code != http.StatusSeeOther {
		t.Fatalf("continue: %d %s, want 303", rec.Code, rec.Body)
	}
	waitFor(t, "2 more calls in flight after Continue", func() bool { return srv.started.Load() == 4 })
	waitFor(t, "the page to show the run going on", func() bool {
		return strings.Contains(s.renderJob(t, id), `id="run-pause"`)
	})
	if rec := postControl(s, id, url.Values{"do": {"stop"}, "csrf": {s.csrf}, "via": {"fetch"}}); rec.Code != http.StatusNoContent {
		t.Fatalf("stop: %d %s, want 204", rec.Code, rec.Body)
	}
	if page := s.renderJob(t, id); !strings.Contains(page, "stopping</span> asked by alice on the web page") || strings.Contains(page, `id="run-pause"`) {
		t.Errorf("after the stop the page does not say it is stopping, or still offers Pause:\n%s", page)
	}
	if rec := post("pause"); rec.Code != http.StatusConflict {
		t.Errorf("a pause of a stopping run: %d %s, want 409", rec.Code, rec.Body)
	}
	// The stop is taken while the 2 calls are in flight: dispatch ends
	// (the run's log says so) before they are let go.
	waitFor(t, "the run to take the stop", func() bool { return strings.Contains(logs.String(), "stopping dispatch") })
	close(second)
	var res *job.Result
	select {
	case res = <-done:
	case <-time.After(time.Minute): // a safety net
		t.Fatal("the run did not end after the stop")
	}
	if res == nil {
		t.FailNow()
	}
	if res.ExitCode != 3 || res.Summary.Done != 4 || res.Pending != 6 {
		t.Errorf("the stopped run: exit %d, %d done, %d pending; want exit 3, the 4 calls started recorded, 6 pending", res.ExitCode, res.Summary.Done, res.Pending)
	}
	if n := srv.started.Load(); n != 4 || records(t, st, id) != 4 {
		t.Errorf("%d calls started, %d recorded: want the 4 in flight at the stop, each recorded", n, records(t, st, id))
	}
	j, err := st.OpenReadOnly(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	m := j.Manifest()
	j.Close()
	if m.State != store.StateAborted || !strings.HasPrefix(m.StopReason, "stopped by alice on the web page at ") {
		t.Errorf("the job was saved %s (%q), want aborted, stopped by alice", m.State, m.StopReason)
	}
	for _, want := range []string{"paused by alice on the web page", "continued by alice on the web page"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the run's log does not audit %q:\n%s", want, logs.String())
		}
	}
	reqs, _, err := st.Controls(context.Background(), id, 0)
	if err != nil || len(reqs) != 3 {
		t.Errorf("the control log holds %d requests (%v), want the 3 asked, with who and when", len(reqs), err)
	}
	for _, r := range reqs {
		if r.By != "alice on the web page" || r.Time.IsZero() {
			t.Errorf("a request is not audited with who and when: %+v", r)
		}
	}
	if page := s.renderJob(t, id); strings.Contains(page, `id="run-stop"`) {
		t.Errorf("the page of the stopped job still offers Stop:\n%s", page)
	}
	if rec := post("pause"); rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "not running") {
		t.Errorf("a pause of the stopped job: %d %s, want 409 saying it is not running", rec.Code, rec.Body)
	}
}
