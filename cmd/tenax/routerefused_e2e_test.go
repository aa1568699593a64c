package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
)

// refusingRoutesSpec is examples/routes.yaml made to refuse: route a
// answers 503 to every call, its breaker opens at the first and
// half-opens again 5ms later, so that while its one probe is out the
// items that picked a meet a refusal and pick again; b serves them all.
const refusingRoutesSpec = `
name: refusals
input: items.jsonl
task:
  type: llm
  output: json
  timeout: 2s
  prompt: |
    Describe the word '{{.word}}' as JSON.
routes:
  - name: a
    provider: mock
    model: mock-json
    mock:
      errors: {overloaded: 1}
  - name: b
    provider: mock
    model: mock-json
routing: weighted
fallbacks: {outage: true}
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  max_attempts: 4
  backoff: {base: 1ms, max: 2ms}
breaker:
  threshold: 1
  reset_timeout: 5ms
concurrency: {max: 32}
cache: {enabled: false}
mock:
  latency: {min: 5ms, max: 10ms}
`

// TestStatusShowsTheRefusalsTheRunCounted: a refused call leaves no
// record, so the calls a route's breaker turned away reach status only
// through the manifest's route_breakers, which the run writes as it ends.
// The other status test only ever saw 0 refused (the route picker keeps
// calls off a breaker that stays open). Here a real `tenax run --metrics`
// (runJob, as the command runs it, in this process so that /metrics can
// be read after the last item and before the endpoint closes) refuses
// calls on a half-open route; the engine's summary, /metrics'
// tenax_route_refused_total and tenax_route_faults_total, the manifest,
// and `tenax status` as text and as --json must all say the same nonzero
// counts.
func TestStatusShowsTheRefusalsTheRunCounted(t *testing.T) {
	w := newWorkdir(t)
	var words strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&words, `{"word": "w%d"}`+"\n", i)
	}
	w.write("items.jsonl", words.String(), 0o644)
	specPath := w.write("job.yaml", refusingRoutesSpec, 0o644)

	var stdout, stderr lockedBuffer
	g := &globals{home: w.home, logLevel: "warn", logFormat: "text", stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	var res *job.Result
	var scraped string
	err := runJob(context.Background(), g, runFlags{metrics: "127.0.0.1:0"}, func(ctx context.Context, o job.Options) (*job.Result, error) {
		r, err := job.Run(ctx, specPath, o)
		res = r
		// The run is over, its /metrics still served until runJob returns.
		scraped = scrapeMetrics(t, stderr.String())
		return r, err
	})
	if err != nil || res == nil {
		t.Fatalf("tenax run: %v\n%s", err, stderr.String())
	}
	if res.Succeeded != 1000 {
		t.Fatalf("%d of 1000 succeeded; want all, on b\n%s", res.Succeeded, stdout.String())
	}

	var ran engine.RouteStats
	for _, rt := range res.Summary.Routes {
		if rt.Name == "a" {
			ran = rt
		}
	}
	if ran.Refused == 0 || ran.Faults == 0 {
		t.Fatalf("the run's route a: %d faults, %d refused; want both nonzero (the test needs refusals)\n%s", ran.Faults, ran.Refused, stdout.String())
	}
	t.Logf("route a: %d calls, %d faults, %d refused", ran.Calls, ran.Faults, ran.Refused)

	for name, want := range map[string]int{"tenax_route_refused_total": ran.Refused, "tenax_route_faults_total": ran.Faults} {
		if got := metricValue(t, scraped, name, res.JobID, "a"); got != want {
			t.Errorf("/metrics %s{route=\"a\"} = %d after the run; the run's summary counted %d", name, got, want)
		}
	}

	b, err := os.ReadFile(filepath.Join(w.home, "jobs", res.JobID, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		RouteBreakers map[string]struct{ Faults, Refused int } `json:"route_breakers"`
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if kept := m.RouteBreakers["a"]; kept.Faults != ran.Faults || kept.Refused != ran.Refused {
		t.Errorf("manifest route_breakers.a = %d faults, %d refused; the run counted %d, %d", kept.Faults, kept.Refused, ran.Faults, ran.Refused)
	}
	if kept, ok := m.RouteBreakers["b"]; ok {
		t.Errorf("manifest route_breakers.b = %+v; b answered every call, it has nothing to keep", kept)
	}

	text := w.tenax("status", res.JobID)
	want := fmt.Sprintf("| breaker: %d fault(s), %d refused", ran.Faults, ran.Refused)
	var aLine string
	for _, line := range strings.Split(text.stdout, "\n") {
		if strings.Contains(line, " a: ") {
			aLine = line
		}
	}
	if text.code != 0 || !strings.HasSuffix(aLine, want) {
		t.Errorf("tenax status (exit %d): route a's line is %q, want it to end in %q\n%s%s", text.code, aLine, want, text.stdout, text.stderr)
	}

	st := w.tenax("status", res.JobID, "--json")
	var s struct {
		Routes []struct {
			Name            string
			Faults, Refused int
		} `json:"routes"`
	}
	if err := json.Unmarshal([]byte(st.stdout), &s); err != nil {
		t.Fatalf("status --json (exit %d): %v\n%s%s", st.code, err, st.stdout, st.stderr)
	}
	got := map[string][2]int{}
	for _, rt := range s.Routes {
		got[rt.Name] = [2]int{rt.Faults, rt.Refused}
	}
	if got["a"] != [2]int{ran.Faults, ran.Refused} || got["b"] != [2]int{} {
		t.Errorf("status --json routes (faults, refused) %v; want a %d, %d and b none", got, ran.Faults, ran.Refused)
	}
}

var metricsAt = regexp.MustCompile(`Prometheus metrics at (\S+)`)

// scrapeMetrics reads the /metrics whose address the run printed on its
// stderr.
func scrapeMetrics(t *testing.T, stderr string) string {
	t.Helper()
	m := metricsAt.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("the run printed no metrics address:\n%s", stderr)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v\n%s", m[1], resp.Status, err, b)
	}
	return string(b)
}

// metricValue is the value of the route's series name in a scrape,
// failing the test when it is not there.
func metricValue(t *testing.T, scrape, name, jobID, route string) int {
	t.Helper()
	series := fmt.Sprintf(`%s{job_id=%q,route=%q} `, name, jobID, route)
	for _, line := range strings.Split(scrape, "\n") {
		if v, ok := strings.CutPrefix(line, series); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return int(n)
		}
	}
	t.Fatalf("/metrics has no %s:\n%s", series, scrape)
	return 0
}
