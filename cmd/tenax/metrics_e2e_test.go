package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tenaxhq/tenax/mock"
)

// startWorkerMetrics starts `tenax worker --metrics` on job id and
// returns its /metrics address, read from its stderr.
func startWorkerMetrics(t *testing.T, w *workdir, pg, id string) string {
	t.Helper()
	cmd, stderr := w.start(t, "worker", "--job", id, "--store", pg, "--metrics", "127.0.0.1:0", "--concurrency", "2", "--report-every", "0")
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	url := ""
	for url == "" && sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if u, ok := strings.CutPrefix(sc.Text(), "tenax: Prometheus metrics at "); ok {
			url = u
		}
	}
	if url == "" {
		t.Fatalf("tenax worker --metrics printed no address:\n%s", seen.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return url
}

// scrapeFamilies reads and lints (as `promtool check metrics` does) the
// exposition at url.
func scrapeFamilies(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	body := get(t, url)
	problems, err := promlint.New(strings.NewReader(body)).Lint()
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	for _, p := range problems {
		t.Errorf("%s: promlint: %s: %s", url, p.Metric, p.Text)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%s: %v", url, err)
	}
	return fams
}

// sum adds the values of name's series whose labels include want, over
// every scrape: a counter, a gauge, or a histogram's count.
func sumSeries(scrapes []map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	for _, fams := range scrapes {
		f := fams[name]
		if f == nil {
			continue
		}
	metric:
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			switch {
			case m.Counter != nil:
				total += m.GetCounter().GetValue()
			case m.Gauge != nil:
				total += m.GetGauge().GetValue()
			case m.Histogram != nil:
				total += float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return total
}

// TestPostgresTwoWorkersMetricsSumToTheJobsTotals runs one job on two
// `tenax worker --metrics` processes, scrapes both, and checks that their
// series of the job, summed, are the job's totals from its records; that
// both expositions and tenax ui's pass promlint; and that tenax ui's
// /metrics (404 before) counts the job from the store.
func TestPostgresTwoWorkersMetricsSumToTheJobsTotals(t *testing.T) {
	w, pg, id := enqueuedJob(t)
	urls := []string{startWorkerMetrics(t, w, pg, id), startWorkerMetrics(t, w, pg, id)}
	job := map[string]string{"job_id": id}
	scrapeAll := func() []map[string]*dto.MetricFamily {
		var s []map[string]*dto.MetricFamily
		for _, u := range urls {
			s = append(s, scrapeFamilies(t, u))
		}
		return s
	}
	var scrapes []map[string]*dto.MetricFamily
	deadline := time.Now().Add(3 * time.Minute) // a safety net
	for {
		scrapes = scrapeAll()
		if sumSeries(scrapes, "tenax_items_total", job) == 40 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the workers' tenax_items_total of job %s never summed to its 40 items: %v", id, sumSeries(scrapes, "tenax_items_total", job))
		}
		time.Sleep(100 * time.Millisecond)
	}

	for i := range scrapes {
		t.Logf("worker %d recorded %v items, made %v calls", i+1,
			sumSeries(scrapes[i:i+1], "tenax_worker_items_finished_total", nil), sumSeries(scrapes[i:i+1], "tenax_calls_total", job))
	}
	r := w.tenax("export", id, "--store", pg)
	if r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	var succeeded, failed, calls int
	for line := range strings.Lines(r.stdout) {
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("export: %q: %v", line, err)
		}
		calls += rec.Attempts
		if rec.Error != "" {
			failed++
		} else {
			succeeded++
		}
	}
	if succeeded != 30 || failed != 10 {
		t.Fatalf("the records hold %d succeeded and %d failed, want 30 and 10", succeeded, failed)
	}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   int
	}{
		{"tenax_items_total", map[string]string{"job_id": id, "outcome": "succeeded"}, succeeded},
		{"tenax_items_total", map[string]string{"job_id": id, "outcome": "failed"}, failed},
		{"tenax_calls_total", job, calls},
		{"tenax_call_duration_seconds", job, calls},
		// Every call but an item's recorded answer is an error.
		{"tenax_call_errors_total", job, calls - succeeded},
		{"tenax_item_duration_seconds", job, succeeded + failed},
		{"tenax_worker_items_finished_total", nil, succeeded + failed},
		{"tenax_build_info", nil, len(urls)},
	} {
		if got := sumSeries(scrapes, c.name, c.labels); got != float64(c.want) {
			t.Errorf("%s%v summed over the two workers = %v, want %d from the job's records", c.name, c.labels, got, c.want)
		}
	}

	ui := strings.TrimSuffix(serveUI(t, w, id, "--store", pg), "/") + "/metrics"
	fams := []map[string]*dto.MetricFamily{scrapeFamilies(t, ui)}
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   int
	}{
		{"tenax_job_items", map[string]string{"job_id": id, "outcome": "succeeded"}, succeeded},
		{"tenax_job_items", map[string]string{"job_id": id, "outcome": "failed"}, failed},
		{"tenax_job_items", map[string]string{"job_id": id, "outcome": "pending"}, 0},
		{"tenax_queue_items", map[string]string{"job_id": id, "state": "finished"}, 40},
		{"tenax_workers", map[string]string{"state": "alive"}, 2},
		{"tenax_build_info", nil, 1},
	} {
		if got := sumSeries(fams, c.name, c.labels); got != float64(c.want) {
			t.Errorf("tenax ui: %s%v = %v, want %d", c.name, c.labels, got, c.want)
		}
	}
}

// TestMetricsSpeakOpenMetricsWhenAsked: a scraper that asks for
// OpenMetrics (Prometheus does) gets it, with its # EOF; one that does not
// gets Prometheus's text format.
func TestMetricsSpeakOpenMetricsWhenAsked(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 1)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [echo, \"item {{.n}}\"]\n", 0o644)
	base := strings.TrimSuffix(serveUI(t, w), "/")
	for _, c := range []struct {
		accept, contentType string
		eof                 bool
	}{
		{"application/openmetrics-text; version=1.0.0", "application/openmetrics-text", true},
		{"", "text/plain", false},
	} {
		req, _ := http.NewRequest("GET", base+"/metrics", nil)
		if c.accept != "" {
			req.Header.Set("Accept", c.accept)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, c.contentType) {
			t.Errorf("Accept %q: %s, Content-Type %q, want 200 and %s", c.accept, resp.Status, ct, c.contentType)
		}
		if got := strings.HasSuffix(string(body), "# EOF\n"); got != c.eof {
			t.Errorf("Accept %q: ends with # EOF: %v, want %v:\n%s", c.accept, got, c.eof, body)
		}
		if !strings.Contains(string(body), "tenax_build_info") {
			t.Errorf("Accept %q: no tenax_build_info:\n%s", c.accept, body)
		}
	}
}

// TestMetricsTakeTheTokenOfTheEnvironment: each process made its own
// random token off loopback, so a fleet of workers could not be scraped
// with one credential. TENAX_METRICS_TOKEN sets it (required then on
// every address), and tenax does not print it.
func TestMetricsTakeTheTokenOfTheEnvironment(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 1)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [sleep, \"60\"]\n", 0o644)
	cmd := exec.Command(tenaxBin, "--home", w.home, "run", "job.yaml", "--metrics", "127.0.0.1:0", "--quiet")
	cmd.Dir, cmd.Env = w.dir, childEnv("TENAX_METRICS_TOKEN=s3cret-for-the-fleet")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	url := ""
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if u, ok := strings.CutPrefix(sc.Text(), "tenax: Prometheus metrics at "); ok {
			url = u
		}
		if strings.Contains(sc.Text(), "bearer token") {
			break
		}
	}
	if url == "" || !strings.Contains(seen.String(), "the bearer token in TENAX_METRICS_TOKEN") || strings.Contains(seen.String(), "s3cret") {
		t.Fatalf("tenax run --metrics should print its address and name the variable, never the token:\n%s", seen.String())
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret-for-the-fleet", http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", url, nil)
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("GET /metrics with Authorization %q: %s, want %d", c.auth, resp.Status, c.want)
		}
	}
}

// callRecord is what TestMetricsOfARouteThatGoesDownMidRunAgreeWithTheRecords
// reads of an exported record: where its calls went and how long they took.
type callRecord struct {
	Error    string `json:"error"`
	Attempts int    `json:"attempts"`
	Route    string `json:"route"`
	CallMS   int64  `json:"call_ms"`
	Tries    []struct {
		Route    string `json:"route"`
		Class    string `json:"class"`
		Fallback string `json:"fallback"`
		CallMS   int64  `json:"call_ms"`
	} `json:"tries"`
}

// TestMetricsOfARouteThatGoesDownMidRunAgreeWithTheRecords runs a job of
// two routes, each a real mock server, on a `tenax worker --metrics`;
// route a's server is closed once it has served 15 calls, its items
// fall back to b (fallbacks.outage) and its breaker opens. At the end,
// the worker's /metrics and the job's records say the same per route:
// the calls (tenax_call_duration_seconds' count), the failed calls
// (tenax_call_errors_total, and the breaker's tenax_route_faults_total),
// the items, and the calls' time (the histogram's sum against the
// records' and tries' call_ms, each rounded up to a whole millisecond).
func TestMetricsOfARouteThatGoesDownMidRunAgreeWithTheRecords(t *testing.T) {
	pg := postgresStore(t)
	// The key, as workers need it: from their environment (the mock
	// takes any).
	t.Setenv("ROUTE_DOWN_KEY", "test")
	a, b := countingMock(t), countingMock(t)
	const n = 150
	w := newWorkdir(t)
	var items strings.Builder
	for i := range n {
		fmt.Fprintf(&items, "{\"id\": \"w%03d\", \"word\": \"w%03d\"}\n", i, i)
	}
	w.write("items.jsonl", items.String(), 0o644)
	w.write("job.yaml", fmt.Sprintf(`name: route-down
input: items.jsonl
task:
  type: llm
  output: json
  timeout: 5s
  prompt: "Describe the word '{{.word}}' as JSON."
routes:
  - {name: a, provider: openai, base_url: "%s/v1", api_key: "${ROUTE_DOWN_KEY}", model: mock-json}
  - {name: b, provider: openai, base_url: "%s/v1", api_key: "${ROUTE_DOWN_KEY}", model: mock-json}
routing: weighted
fallbacks: {outage: true}
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  max_attempts: 4
  backoff: {base: 10ms, max: 100ms}
breaker: {threshold: 3, reset_timeout: 10m}
cache: {enabled: false}
`, a.URL, b.URL), 0o644)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "0")
	if r.code != 0 {
		t.Fatalf("run --workers 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	url := startWorkerMetrics(t, w, pg, id)

	deadline := time.Now().Add(3 * time.Minute) // a safety net
	for a.requests.Load() < 15 {
		if time.Now().After(deadline) {
			t.Fatalf("route a was sent %d requests in 3 minutes", a.requests.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	a.CloseClientConnections()
	a.Close()
	job := map[string]string{"job_id": id}
	var scrapes []map[string]*dto.MetricFamily
	for {
		scrapes = []map[string]*dto.MetricFamily{scrapeFamilies(t, url)}
		if sumSeries(scrapes, "tenax_items_total", job) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker's tenax_items_total of job %s never reached its %d items: %v", id, n, sumSeries(scrapes, "tenax_items_total", job))
		}
		time.Sleep(100 * time.Millisecond)
	}

	r = w.tenax("export", id, "--store", pg)
	if r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	// From the records, per route: the calls, the answers recorded, the
	// failed calls (each try is one: outage moves an item at once), and
	// the calls' time in ms.
	calls, served, failed, callMS := map[string]int{}, map[string]int{}, map[string]int{}, map[string]int64{}
	records := 0
	for line := range strings.Lines(r.stdout) {
		var rec callRecord
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("export: %q: %v", line, err)
		}
		records++
		if rec.Error != "" {
			t.Errorf("a record failed: %s (b should serve every item)", line)
		}
		for _, try := range rec.Tries {
			if try.Route != "a" || try.Fallback != "" || try.CallMS <= 0 {
				t.Errorf("a try %+v: want an outage of a, its call timed (call_ms > 0)", try)
			}
			calls[try.Route]++
			failed[try.Route]++
			callMS[try.Route] += try.CallMS
		}
		if rec.CallMS <= 0 {
			t.Errorf("a record without its call time: %s", line)
		}
		calls[rec.Route] += rec.Attempts - len(rec.Tries)
		served[rec.Route]++
		callMS[rec.Route] += rec.CallMS
	}
	if records != n || served["a"] == 0 || failed["a"] == 0 || served["a"]+served["b"] != n {
		t.Fatalf("the records: %d, served by route %v, failed calls by route %v; want %d, some served by a before it went down, some of a's calls failed", records, served, failed, n)
	}
	t.Logf("route a: %d calls (%d failed), %d items; route b: %d calls, %d items", calls["a"], failed["a"], served["a"], calls["b"], served["b"])
	for _, route := range []string{"a", "b"} {
		on := map[string]string{"job_id": id, "route": route}
		for _, c := range []struct {
			name string
			want int
		}{
			{"tenax_call_duration_seconds", calls[route]},
			// Every call but an item's recorded answer is an error.
			{"tenax_call_errors_total", calls[route] - served[route]},
			{"tenax_route_faults_total", failed[route]},
		} {
			if got := sumSeries(scrapes, c.name, on); got != float64(c.want) {
				t.Errorf("%s{route=%q} = %v, want %d from the job's records", c.name, route, got, c.want)
			}
		}
		// Each call's time is on both: the histogram's sum in seconds, the
		// records' call_ms rounded up, at most 1 ms a call over it.
		sum := histogramSum(scrapes, "tenax_call_duration_seconds", on) * 1000
		if ms := float64(callMS[route]); sum > ms || sum < ms-float64(calls[route]) {
			t.Errorf("route %s's calls took %.3f ms by tenax_call_duration_seconds, %v ms by the records' call_ms: want the same, to the rounding up of each of its %d calls",
				route, sum, ms, calls[route])
		}
	}
	if got := sumSeries(scrapes, "tenax_items_total", map[string]string{"job_id": id, "outcome": "succeeded"}); got != n {
		t.Errorf("tenax_items_total{outcome=succeeded} = %v, want the %d records", got, n)
	}
}

// histogramSum adds the sums of name's histogram series whose labels
// include want.
func histogramSum(scrapes []map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var total float64
	for _, fams := range scrapes {
	metric:
		for _, m := range fams[name].GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if labels[k] != v {
					continue metric
				}
			}
			total += m.GetHistogram().GetSampleSum()
		}
	}
	return total
}

// mockServer is a mock provider on a real HTTP server that counts the
// requests it was sent.
type mockServer struct {
	*httptest.Server
	requests atomic.Int64
}

// countingMock starts a mockServer answering in 10–30 ms.
func countingMock(t *testing.T) *mockServer {
	t.Helper()
	srv := mock.New(mock.Config{Latency: 10 * time.Millisecond, LatencyMax: 30 * time.Millisecond})
	m := &mockServer{}
	m.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.requests.Add(1)
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(m.Close)
	return m
}
