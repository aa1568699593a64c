package web

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
)

// itemsJob is a stopped job of 120 items: every 10th failed "timeout"
// (retryable, fingerprint aaaa…), every 7th not failed so "bad row"
// (item, fingerprint bbbb…), idx 3 failed first then succeeded on a
// resume, and idx 110.. still pending. Odd items went to route b, even
// ones and idx 3's resume to route a.
func itemsJob(t *testing.T) (store.Store, string) {
	t.Helper()
	st := &memory.Store{}
	ctx := context.Background()
	j, err := st.Create(ctx, store.Manifest{Name: "items", Created: time.Now(), Items: 120, State: store.StateFailed})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	var recs []store.Record
	for i := range 110 {
		r := store.Record{Idx: i, ID: fmt.Sprintf("w%03d", i), Input: []byte(fmt.Sprintf(`{"word":"w%03d"}`, i)), Attempts: 1, FinishedAt: now, Route: "a"}
		if i%2 == 1 {
			r.Route = "b"
		}
		switch {
		case i%10 == 0:
			r.Class, r.Error, r.Fingerprint = classify.Retryable, "http: 503 timeout upstream", "aaaa000011112222"
		case i%7 == 0:
			r.Class, r.Error, r.Fingerprint = classify.Item, "bad row", "bbbb000011112222"
		case i == 3:
			r.Class, r.Error, r.Fingerprint = classify.Retryable, "first try failed", "cccc000011112222"
		}
		recs = append(recs, r)
	}
	// idx 3's resume succeeded.
	recs = append(recs, store.Record{Idx: 3, ID: "w003", Input: []byte(`{"word":"w003"}`), Attempts: 1, FinishedAt: now.Add(time.Second), Route: "a"})
	if err := j.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return st, j.Manifest().ID
}

func TestListItemsFilters(t *testing.T) {
	st, id := itemsJob(t)
	// 110 recorded: 11 retryable (0,10,…,100), item failures at multiples
	// of 7 that are not of 10: 16 - 2 (0, 70) = 14.
	tests := []struct {
		name        string
		f           itemFilter
		matched     int
		failed      int
		first, last int // idx of the page's first and last rows
	}{
		{"everything, pending included", itemFilter{}, 120, 25, 0, 49},
		{"the second page", itemFilter{Page: 2}, 120, 25, 50, 99},
		{"a page past the end is the last", itemFilter{Page: 9}, 120, 25, 100, 119},
		{"failed", itemFilter{Outcome: "failed"}, 25, 25, 0, 105},
		{"succeeded", itemFilter{Outcome: "succeeded"}, 85, 0, 1, 65},
		{"pending", itemFilter{Outcome: "pending"}, 10, 0, 110, 119},
		{"class", itemFilter{Class: "item"}, 14, 14, 7, 105},
		{"fingerprint prefix", itemFilter{Fingerprint: "aaaa"}, 11, 11, 0, 100},
		{"a superseded failure is gone", itemFilter{Fingerprint: "cccc"}, 0, 0, -1, -1},
		{"text in the error", itemFilter{Text: "TIMEOUT"}, 11, 11, 0, 100},
		{"text in the input", itemFilter{Text: "w042"}, 1, 1, 42, 42},
		{"text and outcome", itemFilter{Text: "w04", Outcome: "succeeded"}, 7, 0, 41, 48},
		// Odd idx but 3, whose latest record came from route a; item
		// failures at 7, 21, …, 105.
		{"route", itemFilter{Route: "b"}, 54, 8, 1, 101},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.f.Page = max(tt.f.Page, 1)
			p, err := listItems(context.Background(), st, id, tt.f)
			if err != nil {
				t.Fatal(err)
			}
			if p.Matched != tt.matched || p.Failed != tt.failed {
				t.Errorf("matched %d (%d failed), want %d (%d failed)", p.Matched, p.Failed, tt.matched, tt.failed)
			}
			first, last := -1, -1
			if len(p.Rows) > 0 {
				first, last = p.Rows[0].Idx, p.Rows[len(p.Rows)-1].Idx
			}
			if first != tt.first || last != tt.last {
				t.Errorf("the page lists #%d..#%d, want #%d..#%d", first, last, tt.first, tt.last)
			}
			if len(p.Rows) > ItemsPerPage {
				t.Errorf("%d rows on a page, want at most %d", len(p.Rows), ItemsPerPage)
			}
		})
	}
}

func TestRetryCommandIsTheCLIs(t *testing.T) {
	tests := []struct {
		r    Retry
		want string
	}{
		{Retry{}, "tenax resume J --retry-failures"},
		{Retry{Fingerprints: []string{"ab12"}}, "tenax resume J --fingerprint ab12"},
		{Retry{Classes: []classify.Class{classify.Retryable, classify.Invalid}}, "tenax resume J --retry-failures=retryable,invalid"},
		{Retry{Classes: []classify.Class{classify.Item}, Fingerprints: []string{"ab12"}}, "tenax resume J --fingerprint ab12 --retry-failures=item"},
		{Retry{Routes: []string{"azure-eu"}, Classes: []classify.Class{classify.Retryable}}, "tenax resume J --route azure-eu --retry-failures=retryable"},
	}
	for _, tt := range tests {
		if got := tt.r.Command("J"); got != tt.want {
			t.Errorf("Command(%+v) = %q, want %q", tt.r, got, tt.want)
		}
	}
	if _, ok := retryFor(itemFilter{Text: "x"}); ok {
		t.Error("a text search names no resume: retryFor should refuse it")
	}
	if r, ok := retryFor(itemFilter{Route: "b", Outcome: "failed"}); !ok || !slices.Equal(r.Routes, []string{"b"}) || r.Command("J") != "tenax resume J --route b" || r.filter().Route != "b" {
		t.Errorf("retryFor(route b) = %+v, %v; want --route b, listing b's failures", r, ok)
	}
	if r, ok := retryFor(itemFilter{Fingerprint: "ab"}); !ok || !slices.Equal(r.Fingerprints, []string{"ab"}) {
		t.Errorf("retryFor(fingerprint ab) = %+v, %v; want --fingerprint ab", r, ok)
	}
}

// fakeResumer records the re-runs it is asked for.
type fakeResumer struct {
	mu   sync.Mutex
	got  []Retry
	done chan struct{}
}

func (f *fakeResumer) resume(_ context.Context, id string, r Retry) (string, error) {
	f.mu.Lock()
	f.got = append(f.got, r)
	f.mu.Unlock()
	<-f.done
	return "3 succeeded", nil
}

func postForm(t *testing.T, u string, form url.Values, header http.Header) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := noRedirects().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = fmt.Fprint(&b, resp.Status)
	return resp, b.String()
}

func TestRetryFromThePageNeedsTheFormSecretTheOriginAndAConfirmation(t *testing.T) {
	st, id := itemsJob(t)
	fr := &fakeResumer{done: make(chan struct{})}
	srv := New(Config{Store: st, Metrics: prometheus.NewRegistry(), Resume: fr.resume})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	u := ts.URL + "/jobs/" + id + "/retry"
	good := url.Values{"csrf": {srv.csrf}, "confirm": {"yes"}, "fingerprint": {"aaaa"}}
	refused := []struct {
		name   string
		form   url.Values
		header http.Header
		status int
	}{
		{"no form secret", url.Values{"confirm": {"yes"}, "fingerprint": {"aaaa"}}, nil, http.StatusForbidden},
		{"from another site", good, http.Header{"Sec-Fetch-Site": {"cross-site"}}, http.StatusForbidden},
		{"from another origin", good, http.Header{"Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"not confirmed", url.Values{"csrf": {srv.csrf}, "fingerprint": {"aaaa"}}, nil, http.StatusBadRequest},
		{"not a class", url.Values{"csrf": {srv.csrf}, "confirm": {"yes"}, "class": {"canceled"}}, nil, http.StatusBadRequest},
	}
	for _, tt := range refused {
		if resp, _ := postForm(t, u, tt.form, tt.header); resp.StatusCode != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, resp.StatusCode, tt.status)
		}
	}
	if len(fr.got) != 0 {
		t.Fatalf("a refused form re-ran %+v", fr.got)
	}

	// The confirmation page counts the group and names the command.
	_, body := get(t, ts.Client(), u+"?fingerprint=aaaa", nil)
	for _, want := range []string{"Re-run 11 failed items?", "tenax resume " + id + " --fingerprint aaaa", `id="confirm-retry"`} {
		if !strings.Contains(body, want) {
			t.Errorf("the confirmation page lacks %q", want)
		}
	}
	resp, _ := postForm(t, u, good, nil)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the confirmed re-run: status %d, want 303 back to the job", resp.StatusCode)
	}
	// While it runs, a second one is refused and the page says so.
	if resp, _ := postForm(t, u, good, nil); resp.StatusCode != http.StatusConflict {
		t.Errorf("a second re-run while one runs: status %d, want 409", resp.StatusCode)
	}
	_, body = get(t, ts.Client(), ts.URL+"/jobs/"+id, nil)
	if !strings.Contains(body, "Re-running from this page") {
		t.Errorf("the job page does not show the re-run under way:\n%s", body)
	}
	close(fr.done)
	for { // the re-run ends in its goroutine: poll for the page to say so
		_, body = get(t, ts.Client(), ts.URL+"/jobs/"+id, nil)
		if strings.Contains(body, "ended") && strings.Contains(body, "3 succeeded") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	fr.mu.Lock()
	defer fr.mu.Unlock()
	if len(fr.got) != 1 || !slices.Equal(fr.got[0].Fingerprints, []string{"aaaa"}) {
		t.Errorf("re-runs asked: %+v, want one of fingerprint aaaa", fr.got)
	}
}

func TestRetryIsRefusedWhileTheJobRuns(t *testing.T) {
	st, id := newJob(t, 3) // its manifest says running
	// And a process holds it (a job no process holds is stale: resumable).
	j, err := st.Open(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	fr := &fakeResumer{done: make(chan struct{})}
	close(fr.done)
	srv := New(Config{Store: st, Resume: fr.resume})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	resp, _ := postForm(t, ts.URL+"/jobs/"+id+"/retry", url.Values{"csrf": {srv.csrf}, "confirm": {"yes"}}, nil)
	if resp.StatusCode != http.StatusConflict || len(fr.got) != 0 {
		t.Errorf("re-running a running job: status %d, %d re-runs; want 409 and none", resp.StatusCode, len(fr.got))
	}
	_, body := get(t, ts.Client(), ts.URL+"/jobs/"+id+"/retry", nil)
	if !strings.Contains(body, `id="retry-refused"`) {
		t.Errorf("the confirmation page of a running job offers the button:\n%s", body)
	}
}

func TestRetryIsOfferedForAStaleJob(t *testing.T) {
	st, id := newJob(t, 3) // says running, but no process holds it: killed
	srv := New(Config{Store: st, Resume: (&fakeResumer{}).resume})
	if a := srv.retryAbility(context.Background(), id); !a.OK {
		t.Errorf("a stale job's failures cannot be re-run: %s; tenax resume continues such a job", a.Why)
	}
}
