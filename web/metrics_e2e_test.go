package web_test

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// countOutcomes counts a job's latest outcomes in its store.
func countOutcomes(t *testing.T, home, id string) (succeeded, failed, pending int) {
	t.Helper()
	j, err := (&jsonl.Store{Home: home}).OpenReadOnly(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	o, err := j.Outcomes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return o.Count(j.Manifest().Items)
}

// records reads a job's latest records.
func records(t *testing.T, home, id string) []store.Record {
	t.Helper()
	j, err := (&jsonl.Store{Home: home}).OpenReadOnly(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var recs []store.Record
	if err := j.Scan(context.Background(), func(r store.Record) error { recs = append(recs, r); return nil }); err != nil {
		t.Fatal(err)
	}
	return recs
}

var sampleLine = regexp.MustCompile(`^([a-z_]+(?:\{[^}]*\})?) (\S+)$`)

// scrape reads a Prometheus text exposition into series → value, the
// series named as printed: name{label="value",…} with labels sorted.
func scrape(t *testing.T, u string) map[string]float64 {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s\n%s", u, resp.Status, b)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := sampleLine.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		out[m[1]] = v
	}
	return out
}

// TestMetricsMatchTheRecords scrapes /metrics during a run, when the
// breaker has tripped and waits for an answer (nothing in flight, every
// record flushed), and checks each counter against the job's records;
// then it answers Continue on the page and lets the run finish.
func TestMetricsMatchTheRecords(t *testing.T) {
	words := []string{"w00", "w01", "w02", "w03", "w04", "w05", "w06", "w07", "w08", "w09",
		"bad0", "bad1", "bad2", "w10", "w11", "w12", "w13", "w14", "w15", "w16"}
	state := t.TempDir()
	j := startJobWords(t, "metrics.yaml", words, []string{"STATE=" + state}, "--ui", "--metrics", "127.0.0.1:0")

	// The breaker opens before its records are flushed; the question comes
	// after the flush: wait for the page to ask.
	deadline := time.Now().Add(2 * time.Minute) // a safety net
	for !asks(t, j.URL) {
		if time.Now().After(deadline) {
			t.Fatalf("the page never asked about the breaker; stderr:\n%s", j.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	lint(t, j.MetricsURL)
	m := scrape(t, j.MetricsURL)
	job := `job_id="` + j.ID + `"`
	open := `tenax_breaker_state{` + job + `,state="open"}`
	if m[open] != 1 {
		t.Errorf("the breaker waits for an answer, but %s = %v", open, m[open])
	}
	// The same registry is served on the page's port.
	if ui := scrape(t, strings.TrimSuffix(j.URL, "/")+"/metrics"); ui[open] != 1 {
		t.Errorf("/metrics on the --ui port disagrees: %v", ui)
	}

	recs := records(t, j.Home, j.ID)
	var succeeded, failed, calls, retries int
	for _, r := range recs {
		calls += r.Attempts
		if r.Failed() {
			failed++
			if r.Class.String() != "item" {
				t.Errorf("record %d failed with class %s, want item", r.Idx, r.Class)
			}
			continue
		}
		succeeded++
		retries += r.Attempts - 1
	}
	if failed != 3 || succeeded != 10 {
		t.Fatalf("at the trip the records hold %d succeeded and %d failed, want 10 and 3", succeeded, failed)
	}
	if retries == 0 {
		t.Fatal("no record was retried: the test job should retry every fourth call")
	}
	// An exec task's calls are labelled with its type, no model and no route.
	route := `,model="",provider="exec",route=""`
	for _, c := range []struct {
		series string
		want   int
	}{
		{`tenax_items_total{class="none",` + job + `,outcome="succeeded"}`, succeeded},
		{`tenax_items_total{class="item",` + job + `,outcome="failed"}`, failed},
		{`tenax_calls_total{` + job + `}`, calls},
		{`tenax_retries_total{class="retryable",` + job + `}`, retries},
		{`tenax_call_errors_total{class="retryable",` + job + route + `}`, retries},
		{`tenax_call_errors_total{class="item",` + job + route + `}`, failed},
		{`tenax_call_duration_seconds_count{class="none",` + job + route + `}`, succeeded},
		{`tenax_call_duration_seconds_count{class="retryable",` + job + route + `}`, retries},
		{`tenax_call_duration_seconds_count{class="item",` + job + route + `}`, failed},
		{`tenax_item_duration_seconds_count{` + job + `}`, len(recs)},
		{`tenax_breaker_trips_total{` + job + `}`, 1},
		{`tenax_concurrency_limit{` + job + `}`, 1},
		{`tenax_items_planned{` + job + `}`, len(words)},
	} {
		if got, ok := m[c.series]; !ok || got != float64(c.want) {
			t.Errorf("%s = %v (present: %v), want %d from the records", c.series, got, ok, c.want)
		}
	}

	for series := range m {
		if strings.HasPrefix(series, "tenax_rate_limited_total") {
			t.Errorf("%s is present: no call was answered 429", series)
		}
	}
	if !hasSeries(m, `tenax_build_info{goversion="go`, 1) {
		t.Errorf("no tenax_build_info of 1 with its Go version in %v", m)
	}

	// The next item may already wait at the paused gate: dispatched, not
	// finished.
	if got := m[`tenax_in_flight{`+job+`}`]; got < 0 || got > 1 {
		t.Errorf("tenax_in_flight = %v, want 0 or 1 (concurrency 1)", got)
	}

	answer(t, j.URL, "continue")
	if code := j.wait(t); code != 1 {
		t.Errorf("tenax exited %d after Continue, want 1 (finished with failures); stderr:\n%s", code, j.stderr)
	}
	if s, f, p := countOutcomes(t, j.Home, j.ID); s != 17 || f != 3 || p != 0 {
		t.Errorf("after Continue: %d succeeded, %d failed, %d pending; want 17, 3, 0", s, f, p)
	}
}

// hasSeries reports whether m has a series whose name and labels start
// with prefix and whose value is v.
func hasSeries(m map[string]float64, prefix string, v float64) bool {
	for series, got := range m {
		if strings.HasPrefix(series, prefix) && got == v {
			return true
		}
	}
	return false
}

// lint checks u's exposition as `promtool check metrics` does
// (client_golang's promlint): names, units, suffixes, help texts.
func lint(t *testing.T, u string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	problems, err := promlint.New(resp.Body).Lint()
	if err != nil {
		t.Fatalf("%s: %v", u, err)
	}
	for _, p := range problems {
		t.Errorf("%s: promlint: %s: %s", u, p.Metric, p.Text)
	}
}

var (
	csrfField     = regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	questionField = regexp.MustCompile(`name="question" value="([^"]+)"`)
	formAction    = regexp.MustCompile(`<form method="post" action="([^"]+)"`)
)

// asks reports whether the page shows a question.
func asks(t *testing.T, pageURL string) bool {
	t.Helper()
	resp, err := http.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return questionField.Match(body)
}

// answer posts the page's pending question's answer, as its form does.
func answer(t *testing.T, pageURL, answer string) {
	t.Helper()
	resp, err := http.Get(pageURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	csrf, q, action := csrfField.FindSubmatch(body), questionField.FindSubmatch(body), formAction.FindSubmatch(body)
	if csrf == nil || q == nil || action == nil {
		t.Fatalf("the page shows no question:\n%s", body)
	}
	target, _ := url.Parse(pageURL)
	target = target.ResolveReference(&url.URL{Path: string(action[1])})
	resp, err = http.PostForm(target.String(), url.Values{"csrf": {string(csrf[1])}, "question": {string(q[1])}, "answer": {answer}, "via": {"fetch"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("posting %s: %s", answer, resp.Status)
	}
}
