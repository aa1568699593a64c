package web

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// newJob creates a job of n items in a JSONL store under a temporary
// directory, with a failure at idx 1 and successes at 0 and 2.
func newJob(t *testing.T, n int) (*jsonl.Store, string) {
	t.Helper()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(context.Background(), store.Manifest{Name: "web-test", Created: time.Now(), Items: n, State: store.StateRunning,
		Spec: []byte(`{"budget": {"max_cost_usd": 2.5}}`)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	recs := []store.Record{
		{Idx: 0, Input: []byte(`{"w":"a"}`), Output: []byte(`{"ok":true}`), Attempts: 1, FinishedAt: now},
		{Idx: 1, Input: []byte(`{"w":"b"}`), Output: []byte(`null`), Error: "boom: upstream said no", Class: classify.Item, Attempts: 1, FinishedAt: now},
		{Idx: 2, Input: []byte(`{"w":"c"}`), Output: []byte(`{"ok":true}`), Attempts: 2, HealAttempts: 1, FinishedAt: now},
	}
	if err := j.Append(context.Background(), recs...); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return st, j.Manifest().ID
}

// noRedirects is a client that shows redirects instead of following them.
func noRedirects() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func get(t *testing.T, c *http.Client, u string, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestTokenGuardsEveryPageWhenSet(t *testing.T) {
	st, id := newJob(t, 3)
	srv := httptest.NewServer(New(Config{Store: st, Metrics: prometheus.NewRegistry(), Token: "s3cret"}))
	defer srv.Close()
	c := noRedirects()

	if resp, _ := get(t, c, srv.URL+"/jobs/"+id, nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("without the token: %s, want 401", resp.Status)
	}
	if resp, _ := get(t, c, srv.URL+"/jobs/"+id+"?token=wrong", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %s, want 401", resp.Status)
	}
	resp, _ := get(t, c, srv.URL+"/jobs/"+id+"?token=s3cret", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/jobs/"+id {
		t.Fatalf("?token=: %s to %q, want 303 to the same page without the token", resp.Status, resp.Header.Get("Location"))
	}
	var cookie *http.Cookie
	for _, ck := range resp.Cookies() {
		if ck.Name == tokenCookie {
			cookie = ck
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteStrictMode {
		t.Fatalf("?token= set the cookie %+v, want an HttpOnly, SameSite=Strict %s", cookie, tokenCookie)
	}
	resp, body := get(t, c, srv.URL+"/jobs/"+id, http.Header{"Cookie": {cookie.String()}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "Job "+id) {
		t.Errorf("with the cookie: %s, want the job page", resp.Status)
	}
	resp, body = get(t, c, srv.URL+"/metrics", http.Header{"Authorization": {"Bearer s3cret"}})
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/metrics with the bearer token: %s %s", resp.Status, body)
	}
}

func TestWithoutTokenOnlyLoopbackHostsAreServed(t *testing.T) {
	st, _ := newJob(t, 3)
	h := New(Config{Store: st})
	for _, c := range []struct {
		host string
		want int
	}{
		{"127.0.0.1:8080", http.StatusOK},
		{"localhost:8080", http.StatusOK},
		{"[::1]:8080", http.StatusOK},
		{"127.0.0.2", http.StatusOK},
		{"evil.example:8080", http.StatusForbidden}, // DNS rebinding
		{"192.168.1.5:8080", http.StatusForbidden},
	} {
		req := httptest.NewRequest(http.MethodGet, "/", nil)
		req.Host = c.host
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("Host %s: %d, want %d", c.host, rec.Code, c.want)
		}
	}
}

// livePage serves a monitor of job id whose breaker has tripped: Trip
// runs until answered, and its decision is sent on the returned channel.
func livePage(t *testing.T) (*Server, *Monitor, string, <-chan engine.TripDecision) {
	t.Helper()
	st, id := newJob(t, 3)
	m := NewMonitor(prometheus.NewRegistry())
	m.Start(id, func() engine.Stats { return engine.Stats{Total: 3, Done: 3, Failed: 1, Breaker: breaker.Open} }, nil)
	decided := make(chan engine.TripDecision, 1)
	go func() {
		decided <- m.Prompter.Trip(context.Background(), engine.TripReport{Reason: "3 consecutive failures",
			Last: &engine.Failure{Item: task.Item{Idx: 1, Raw: []byte(`{"w":"b"}`)}, Err: errors.New("boom"), Decision: classify.Decision{Class: classify.Item}}})
	}()
	for m.Prompter.Pending() == nil {
		time.Sleep(time.Millisecond) // Trip runs on its goroutine: poll until it asks
	}
	return New(Config{Store: st, Monitor: m}), m, id, decided
}

func TestAnswerRefusesForgedAndStaleRequests(t *testing.T) {
	s, m, id, decided := livePage(t)
	q := m.Prompter.Pending()
	good := url.Values{"csrf": {s.csrf}, "question": {"1"}, "answer": {"continue"}}
	with := func(k, v string) url.Values {
		f := url.Values{}
		for kk, vv := range good {
			f[kk] = vv
		}
		f.Set(k, v)
		return f
	}
	for _, c := range []struct {
		name   string
		method string
		form   url.Values
		header map[string]string
		want   int
	}{
		{"a GET cannot answer", http.MethodGet, good, nil, http.StatusMethodNotAllowed},
		{"another site's form (Sec-Fetch-Site)", http.MethodPost, good, map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"another site's form (Origin)", http.MethodPost, good, map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"no form secret", http.MethodPost, with("csrf", ""), nil, http.StatusForbidden},
		{"a wrong form secret", http.MethodPost, with("csrf", "0000"), nil, http.StatusForbidden},
		{"a question answered already", http.MethodPost, with("question", "7"), nil, http.StatusConflict},
		{"neither continue nor abort", http.MethodPost, with("answer", "maybe"), nil, http.StatusBadRequest},
	} {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(c.method, "/jobs/"+id+"/answer", strings.NewReader(c.form.Encode()))
			req.Host = "127.0.0.1:1"
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			s.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("%d %s, want %d", rec.Code, strings.TrimSpace(rec.Body.String()), c.want)
			}
			if got := m.Prompter.Pending(); got == nil || got.ID != q.ID {
				t.Errorf("the refused request answered the question")
			}
		})
	}

	// The page's own form, from the same origin, answers.
	req := httptest.NewRequest(http.MethodPost, "/jobs/"+id+"/answer", strings.NewReader(good.Encode()))
	req.Host = "127.0.0.1:1"
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	req.Header.Set("Origin", "http://127.0.0.1:1")
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code != http.StatusSeeOther {
		t.Fatalf("the page's form: %d %s, want 303", rec.Code, rec.Body)
	}
	if d := <-decided; d != engine.TripContinue {
		t.Errorf("Trip returned %v, want TripContinue", d)
	}
	if m.Prompter.Pending() != nil {
		t.Error("the question is still pending after its answer")
	}
}

func TestInspectShowsTheLastFailureInFull(t *testing.T) {
	s, m, id, _ := livePage(t)
	defer m.Prompter.Answer(m.Prompter.Pending().ID, false)
	req := httptest.NewRequest(http.MethodGet, "/jobs/"+id+"/breaker", nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	for _, want := range []string{"Circuit breaker open: 3 consecutive failures", "Error chain:", "boom", `name="answer" value="abort"`} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("the Inspect page lacks %q:\n%s", want, rec.Body)
		}
	}
}

// sseReader reads Server-Sent Events.
type sseReader struct{ sc *bufio.Scanner }

// next returns the next event's name and data.
func (r *sseReader) next() (string, string, error) {
	var name string
	var data []string
	for r.sc.Scan() {
		line := r.sc.Text()
		switch {
		case line == "":
			if name != "" || data != nil {
				return name, strings.Join(data, "\n"), nil
			}
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
	if err := r.sc.Err(); err != nil {
		return "", "", err
	}
	return "", "", io.EOF
}

func TestEventStreamPushesWhatChanges(t *testing.T) {
	st, id := newJob(t, 10)
	m := NewMonitor(nil)
	var done atomic.Int64
	m.Start(id, func() engine.Stats { return engine.Stats{Total: 10, Done: int(done.Load()), Started: time.Now()} }, nil)
	srv := httptest.NewServer(New(Config{Store: st, Monitor: m, Refresh: time.Hour}))
	defer srv.Close()

	resp, err := http.Get(srv.URL + "/jobs/" + id + "/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	r := &sseReader{bufio.NewScanner(resp.Body)}
	// until reads events until the fragment named name contains want.
	until := func(name, want string) string {
		t.Helper()
		for {
			ev, data, err := r.next()
			if err != nil {
				t.Fatalf("the stream ended (%v) before %s showed %q", err, name, want)
			}
			if ev == name && strings.Contains(data, want) {
				return data
			}
		}
	}
	until("live", `<b id="done">0</b>`)

	// A finished item: the stream pushes it (Refresh is an hour: only the
	// monitor's news can have sent it).
	done.Store(1)
	m.Observe(engine.Event{Kind: engine.ItemFinished, Time: time.Now(), Item: task.Item{Idx: 4, ID: "w4"},
		Record: store.Record{Idx: 4, ID: "w4", Output: []byte(`{}`), Attempts: 1}})
	data := until("live", `<b id="done">1</b>`)
	if !strings.Contains(data, `href="/jobs/`+id+`/items/4"`) {
		t.Errorf("the recent items do not list #4:\n%s", data)
	}

	// A pending question arrives on its own event, and the end of the run
	// ends the stream.
	go m.Prompter.CheckIn(context.Background(), engine.CheckIn{Stats: engine.Stats{Done: 1, Total: 10}})
	until("question", `value="continue"`)
	m.End()
	until("end", "the run has ended; tenax ui "+id+" serves this page again")
	if _, _, err := r.next(); err != io.EOF {
		t.Errorf("after the end event: %v, want the stream closed", err)
	}
}

func TestJobsPageListsTheStoresJobs(t *testing.T) {
	st, id := newJob(t, 3)
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	New(Config{Store: st}).ServeHTTP(rec, req)
	if !strings.Contains(rec.Body.String(), `href="/jobs/`+id+`"`) {
		t.Errorf("the jobs page does not link %s:\n%s", id, rec.Body)
	}
}

func TestJobPageShowsErrorGroupsAndTheBudget(t *testing.T) {
	st, id := newJob(t, 3)
	req := httptest.NewRequest(http.MethodGet, "/jobs/"+id, nil)
	req.Host = "localhost"
	rec := httptest.NewRecorder()
	New(Config{Store: st}).ServeHTTP(rec, req)
	body := rec.Body.String()
	for _, want := range []string{
		`<b id="job-succeeded">2</b>`, `<b id="job-failed">1</b>`, `<b id="job-pending">0</b>`,
		"boom: upstream said no", `href="/jobs/` + id + `/items/1"`, "(budget $2.5000)",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the job page lacks %q", want)
		}
	}
	req = httptest.NewRequest(http.MethodGet, "/jobs/nope", nil)
	req.Host = "localhost"
	rec = httptest.NewRecorder()
	New(Config{Store: st}).ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("an unknown job: %d, want 404", rec.Code)
	}
}

func TestItemPageFromTheStoreShowsTheLatestRecord(t *testing.T) {
	st, id := newJob(t, 3)
	h := New(Config{Store: st})
	for _, c := range []struct {
		path string
		code int
		want string
	}{
		{"/jobs/" + id + "/items/1", http.StatusOK, "boom: upstream said no"},
		{"/jobs/" + id + "/items/2", http.StatusOK, "2 (1 re-asks)"},
		{"/jobs/" + id + "/items/7", http.StatusOK, "No record yet: the item is pending."},
		{"/jobs/" + id + "/items/x", http.StatusBadRequest, "an item is named by its index"},
	} {
		req := httptest.NewRequest(http.MethodGet, c.path, nil)
		req.Host = "localhost"
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("GET %s: %d, want %d and %q in:\n%s", c.path, rec.Code, c.code, c.want, rec.Body)
		}
	}
}
