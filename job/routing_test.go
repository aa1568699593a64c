package job_test

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/job"
)

// TestCostRoutingTakesTheRoutesPrices: routing: cost sends every item to
// the route whose price (routes[].price) makes its call the cheaper one,
// whatever the order of the routes.
func TestCostRoutingTakesTheRoutesPrices(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 20)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "Describe the word {{.word}} as JSON, with its text and its length, please"
  output: json
routes:
  - {name: dear, provider: mock, model: mock-json, price: {input_per_mtok: 3, output_per_mtok: 15}}
  - {name: cheap, provider: mock, model: mock-json, price: {input_per_mtok: 0.15, output_per_mtok: 0.6}}
routing: cost
mock: {latency: 0s}
cache: {enabled: false}
`, 0o644)
	res := w.run("job.yaml")
	if res.ExitCode != 0 {
		t.Fatalf("exit %d, want 0", res.ExitCode)
	}
	for idx, r := range w.records(res.JobID) {
		if r.Route != "cheap" {
			t.Errorf("item %d went to %q; want cheap, the route whose price is lower", idx, r.Route)
		}
	}
}

// TestCostRoutingRefusesARouteWithoutAPrice: a route whose model tenax
// cannot price would rank last whatever it costs; validate says so and
// names the key that fixes it.
func TestCostRoutingRefusesARouteWithoutAPrice(t *testing.T) {
	w := newLLMWorld(t)
	path := w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "{{.word}}"
routes:
  - {name: ours, provider: openai, api_key: sk-x, model: ft-our-model}
  - {name: known, provider: openai, api_key: sk-x, model: gpt-4o-mini}
routing: cost
`, 0o644)
	s, err := job.LoadSpec(path, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	_, err = job.Notes(s)
	if err == nil || !strings.Contains(err.Error(), "routes[0] (ours) has no price") || !strings.Contains(err.Error(), "routes[0].price") {
		t.Errorf("Notes: %v; want routes[0] named as unpriced, with the key to set", err)
	}
}

// TestResumeRetriesTheFailuresOfOneRoute: --route re-runs only the failed
// items whose record the route produced; a name that is no route of the
// job is refused, pointing at tenax status.
func TestResumeRetriesTheFailuresOfOneRoute(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 30)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  prompt: "{{.word}}"
routes:
  - {name: a, provider: mock, model: mock-echo, mock: {errors: {server: 1}}}
  - {name: b, provider: mock, model: mock-echo, mock: {errors: {server: 1}}}
retry: {max_attempts: 1}
breaker: {threshold: 1000}
mock: {latency: 0s}
cache: {enabled: false}
`, 0o644)
	res := w.run("job.yaml")
	onA := 0
	for _, r := range w.records(res.JobID) {
		if r.Route == "a" {
			onA++
		}
	}
	if res.Failed != 30 || onA == 0 || onA == 30 {
		t.Fatalf("%d failed, %d on a; want all 30 failed, spread over both routes", res.Failed, onA)
	}
	opts := job.Options{Home: w.home, Logger: slog.New(slog.DiscardHandler), RetryRoutes: []string{"a"}}
	again, err := job.Resume(t.Context(), res.JobID, opts)
	if err != nil {
		t.Fatalf("resume --route a: %v", err)
	}
	if ran := again.Summary.Succeeded + again.Summary.Failed; ran != onA {
		t.Errorf("resume --route a ran %d items; want the %d whose failure a produced", ran, onA)
	}
	opts.RetryRoutes = []string{"c"}
	_, err = job.Resume(t.Context(), res.JobID, opts)
	if err == nil || !strings.Contains(err.Error(), `--route "c" names no route`) || !strings.Contains(err.Error(), "tenax status "+res.JobID) {
		t.Errorf("resume --route c: %v; want a refusal pointing at tenax status", err)
	}
}
