package web

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// enqueueOnWorkers creates a job of n items whose every call fails with a
// fatal 401 and whose breaker, after three, waits for an operator, and
// enqueues it for workers.
func enqueueOnWorkers(t *testing.T, c *worker.Client, n int) string {
	t.Helper()
	return enqueueSpecOnWorkers(t, c, n, `name: on-workers
input: items.jsonl
task: {type: llm, provider: mock, model: mock-json, output: json, prompt: "Describe {{.word}}"}
mock: {latency: 1ms, errors: {auth: 1}}
breaker: {threshold: 3, on_trip: prompt}
`)
}

// enqueueSpecOnWorkers creates a job of spec over n items and enqueues it
// for workers.
func enqueueSpecOnWorkers(t *testing.T, c *worker.Client, n int, spec string) string {
	t.Helper()
	dir := t.TempDir()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"word\": \"w%d\"}\n", i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	cr, err := job.Create(t.Context(), path, c.Store(), job.Options{Home: t.TempDir(), Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Job.Close()
	e, err := c.Enqueue(t.Context(), cr)
	if err != nil {
		t.Fatal(err)
	}
	return e.JobID
}

// post sends the form to the server as the page's own script does (same
// origin) and returns the status and body.
func post(s *Server, path string, form url.Values) (int, string) {
	req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	req.Host = "127.0.0.1:1"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec.Code, strings.TrimSpace(rec.Body.String())
}

// page returns the job page as served.
func page(t *testing.T, s *Server, id string) string {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "/jobs/"+id, nil)
	req.Host = "127.0.0.1:1"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET /jobs/%s: %d %s", id, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// pollPage polls the job page until it contains want; the deadline is only
// a safety net.
func pollPage(t *testing.T, s *Server, id, what string, want ...string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		p := page(t, s, id)
		missing := ""
		for _, w := range want {
			if !strings.Contains(p, w) {
				missing = w
				break
			}
		}
		if missing == "" {
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s: the page has no %q:\n%s", what, missing, p)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// runWorker runs a worker of job id, two items in flight, until the test
// ends.
func runWorker(t *testing.T, c *worker.Client, id string) *worker.Worker {
	t.Helper()
	w, err := c.NewWorker(worker.Config{Jobs: []string{id}, Concurrency: 2,
		Options: job.Options{Home: t.TempDir(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := w.Run(ctx); err != nil {
			t.Errorf("worker: %v", err)
		}
	})
	t.Cleanup(func() { cancel(); wg.Wait() })
	return w
}

// TestPageOfAJobOnWorkersShowsThemAndAnswersTheirBreaker: the page of a
// job run by workers showed only its records; its shared breaker could be
// answered from a terminal or `tenax breaker` alone.
func TestPageOfAJobOnWorkersShowsThemAndAnswersTheirBreaker(t *testing.T) {
	dsn := pgtest.AbsentDSN(t, "tenax_web_")
	c, err := worker.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // after runWorker's worker stopped
	const n = 40
	id := enqueueOnWorkers(t, c, n)
	s := New(Config{Store: c.Store(), Workers: c, Operator: "the page of the test"})

	p := page(t, s, id)
	for _, want := range []string{"On workers", fmt.Sprintf(`<b id="queue-waiting">%d</b>`, n), "No worker has joined the job"} {
		if !strings.Contains(p, want) {
			t.Errorf("before any worker, the page has no %q", want)
		}
	}

	w := runWorker(t, c, id)

	// The question is the terminal prompt's, as the worker that tripped
	// wrote it.
	p = pollPage(t, s, id, "the shared breaker to ask", `id="workers-continue"`, `id="workers-abort"`,
		"Circuit breaker open: 3 consecutive failures", "Status:     401")
	for _, want := range []string{"The circuit breaker is open", "tripped on worker " + w.ID(), "<code>" + w.ID() + "</code>"} {
		if !strings.Contains(p, want) {
			t.Errorf("with the breaker open, the page has no %q:\n%s", want, p)
		}
	}

	for _, c := range []struct {
		name string
		form url.Values
		want int
	}{
		{"no form secret", url.Values{"decision": {"abort"}}, http.StatusForbidden},
		{"neither continue nor abort", url.Values{"csrf": {s.csrf}, "trip": {"1"}, "decision": {"maybe"}}, http.StatusBadRequest},
		{"no trip", url.Values{"csrf": {s.csrf}, "decision": {"abort"}}, http.StatusBadRequest},
	} {
		if code, body := post(s, "/jobs/"+id+"/decide", c.form); code != c.want {
			t.Errorf("%s: %d %s, want %d", c.name, code, body, c.want)
		}
	}
	if st := jobStateOf(t, c, id); st != store.StateRunning {
		t.Fatalf("a refused form changed the job to %s", st)
	}

	if code, body := post(s, "/jobs/"+id+"/decide", url.Values{"csrf": {s.csrf}, "trip": {"1"}, "decision": {"abort"}}); code != http.StatusSeeOther {
		t.Fatalf("the page's Abort: %d %s, want 303", code, body)
	}
	pollPage(t, s, id, "the page to show the answer", `Answered: <b>abort</b>, by the page of the test.`)
	deadline := time.Now().Add(3 * time.Minute)
	for jobStateOf(t, c, id) != store.StateAborted {
		if time.Now().After(deadline) {
			t.Fatal("the job was not aborted after the page's Abort")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if code, body := post(s, "/jobs/"+id+"/decide", url.Values{"csrf": {s.csrf}, "trip": {"1"}, "decision": {"continue"}}); code != http.StatusConflict || !strings.Contains(body, "answered already: abort, by the page of the test") {
		t.Errorf("a second answer: %d %s, want 409 saying who answered first", code, body)
	}
}

// TestAPageShownForOneTripDoesNotAnswerTheNext: the page's Continue and
// Abort of a job on workers answered whatever trip was open when the
// click arrived, so a page shown for trip 1, answered meanwhile by
// `tenax breaker`, aborted trip 2, which its operator never saw (found by
// posting a page's form after answering from a terminal). The form names
// its trip now, as a single process's question does.
func TestAPageShownForOneTripDoesNotAnswerTheNext(t *testing.T) {
	dsn := pgtest.AbsentDSN(t, "tenax_web_")
	c, err := worker.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close) // after runWorker's worker stopped
	// 40 items leave trip 2 some to hold: a worker's trip holds within
	// its calls in flight (worker.TestAWorkerTripHoldsWithinItsCallsInFlight),
	// so each trip spends a handful of them.
	id := enqueueOnWorkers(t, c, 40)
	s := New(Config{Store: c.Store(), Workers: c, Operator: "the page of the test"})
	runWorker(t, c, id)

	pollPage(t, s, id, "trip 1 to ask", `id="workers-abort"`, ", trip 1</small>")
	if err := c.Decide(t.Context(), id, worker.Continue, "tenax breaker elsewhere"); err != nil {
		t.Fatal(err)
	}
	// Every call fails: the breaker trips again.
	pollPage(t, s, id, "trip 2 to ask", `id="workers-abort"`, ", trip 2</small>", "Status:     401")
	code, body := post(s, "/jobs/"+id+"/decide", url.Values{"csrf": {s.csrf}, "trip": {"1"}, "decision": {"abort"}})
	if code != http.StatusConflict || !strings.Contains(body, "tripped again") {
		t.Errorf("Abort on the page of trip 1: %d %s, want 409 saying the breaker tripped again", code, body)
	}
	if p := page(t, s, id); strings.Contains(p, "Answered:") || !strings.Contains(p, `id="workers-abort"`) {
		t.Errorf("an answer to trip 1 answered trip 2:\n%s", p)
	}
	if st := jobStateOf(t, c, id); st != store.StateRunning {
		t.Errorf("an answer to trip 1 changed the job to %s", st)
	}
	if code, body := post(s, "/jobs/"+id+"/decide", url.Values{"csrf": {s.csrf}, "trip": {"2"}, "decision": {"abort"}}); code != http.StatusSeeOther {
		t.Fatalf("Abort on the page of trip 2: %d %s, want 303", code, body)
	}
	pollPage(t, s, id, "the page to show the answer", `Answered: <b>abort</b>, by the page of the test.`)
}

func jobStateOf(t *testing.T, c *worker.Client, id string) store.State {
	t.Helper()
	j, err := c.Store().OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	return j.Manifest().State
}

// TestWorkersSectionShowsTheCheckIns: a job on workers paused for a
// check-in held by a terminal showed only "paused" on its page.
func TestWorkersSectionShowsTheCheckIns(t *testing.T) {
	s := New(Config{})
	for _, c := range []struct {
		name string
		ci   *worker.CheckIns
		want []string
		not  []string
	}{
		{"no terminal holds them", nil, nil, []string{`id="checkin"`}},
		{"counting", &worker.CheckIns{Every: 20, Done: 7, Next: 20}, []string{`<b id="checkin">7 / 20</b>`, "(every 20), held by the attending terminal"}, nil},
		{"due", &worker.CheckIns{Every: 20, Done: 22, Next: 20, Due: true}, []string{`<b id="checkin">due</b>`, "paused until the attending terminal answers"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			b, err := s.fragment("workers", &jobData{ID: "job_1", Workers: &workersData{Progress: worker.Progress{Paused: c.ci != nil && c.ci.Due, CheckIns: c.ci}}})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(string(b), w) {
					t.Errorf("the section has no %q:\n%s", w, b)
				}
			}
			for _, w := range c.not {
				if strings.Contains(string(b), w) {
					t.Errorf("the section has %q:\n%s", w, b)
				}
			}
		})
	}
}
