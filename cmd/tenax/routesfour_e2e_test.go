package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readRouted reads a routed job's results file.
func readRouted(t *testing.T, path string) []routedRecord {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []routedRecord
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var rec routedRecord
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("bad record %q: %v", sc.Text(), err)
		}
		recs = append(recs, rec)
	}
	return recs
}

// TestFourProviderRoutesExampleLosesNothingAndAsksNobody runs
// examples/routes-four.yaml as it ships: openai, anthropic, bedrock and
// gemini routes, each rehearsed through its own SDK on a simulated
// deployment of its own, and bedrock answering 503 to every call. Every
// item succeeds on one of the other three, each of them serves some, the
// run's breaker never trips (it would exit 3 with no terminal), bedrock's
// breaker is open at the end, and every item that met bedrock first was
// moved by the outage fallback: its tries name bedrock's 503.
func TestFourProviderRoutesExampleLosesNothingAndAsksNobody(t *testing.T) {
	w := newWorkdir(t)
	w.examples("routes-four.yaml", "quickstart.jsonl")
	r := w.tenaxEnv(awsChildEnv(t), "run", "routes-four.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run routes-four.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	if strings.Contains(strings.ToLower(r.stderr), "circuit breaker open") {
		t.Errorf("the run's breaker tripped though three routes could serve:\n%s", r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "bedrock: breaker open") {
		t.Errorf("the summary does not show bedrock's breaker open:\n%s%s", r.stdout, r.stderr)
	}
	recs := readRouted(t, filepath.Join(w.dir, "out.jsonl"))
	served := map[string]int{}
	moved := 0
	for _, rec := range recs {
		served[rec.Route]++
		if rec.Error != "" || rec.Route == "bedrock" || rec.Model != "mock-json" {
			t.Errorf("item %d: route %q model %q error %q; want success on a route other than bedrock", rec.Idx, rec.Route, rec.Model, rec.Error)
		}
		for _, try := range rec.Tries {
			moved++
			if try.Route != "bedrock" || !strings.HasPrefix(try.Error, "503 ServiceUnavailableException") || try.Class != "retryable" {
				t.Errorf("item %d: try %+v; want bedrock's 503 ServiceUnavailableException, retryable", rec.Idx, try)
			}
		}
	}
	if len(recs) != 500 || moved == 0 {
		t.Errorf("%d records, %d moved off bedrock; want 500 and some items that met bedrock's outage first", len(recs), moved)
	}
	for _, route := range []string{"openai", "anthropic", "gemini"} {
		if served[route] == 0 {
			t.Errorf("route %s served no item (served: %v); want the healthy routes to share the job", route, served)
		}
	}
}

// TestContentFilterOnOneProviderMovesTheItemToAnother: a job of two
// rehearsed routes where one provider's filter stops every answer
// (Gemini's SAFETY finish, Bedrock's content_filtered stop reason,
// Anthropic's refusal) and fallbacks.content_filter is on: every item
// succeeds on the openai route, and each item that met the filter first
// carries it in its tries as an item failure, not a failure of its own.
func TestContentFilterOnOneProviderMovesTheItemToAnother(t *testing.T) {
	const spec = `
input: items.jsonl
task:
  type: llm
  prompt: "Describe item {{.n}}"
  timeout: 5s
routes:
  - {name: filtered, provider: %s, model: mock-echo, mock: {errors: {content_filter: 1}}}
  - {name: openai, provider: openai, model: mock-echo, mock: {}}
fallbacks: {content_filter: true}
retry: {max_attempts: 3, backoff: {base: 1ms, max: 5ms}}
concurrency: {max: 4}
cache: {enabled: false}
mock: {latency: 1ms}
`
	for _, tc := range []struct{ provider, words string }{
		{"gemini", "SAFETY"},
		{"bedrock", "content_filtered"},
		{"anthropic", "the model refused"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			w := newWorkdir(t)
			w.items("items.jsonl", 40)
			w.write("job.yaml", fmt.Sprintf(spec, tc.provider), 0o644)
			r := w.tenaxEnv(awsChildEnv(t), "run", "job.yaml", "--output", "out.jsonl")
			if r.code != 0 {
				t.Fatalf("run: exit %d, want 0\n%s", r.code, r.stderr)
			}
			moved := 0
			recs := readRouted(t, filepath.Join(w.dir, "out.jsonl"))
			for _, rec := range recs {
				if rec.Error != "" || rec.Route != "openai" {
					t.Errorf("item %d: route %q error %q; want success on openai", rec.Idx, rec.Route, rec.Error)
				}
				for _, try := range rec.Tries {
					moved++
					if try.Route != "filtered" || try.Class != "item" || !strings.Contains(try.Error, tc.words) {
						t.Errorf("item %d: try %+v; want %s's filter (%q), class item", rec.Idx, try, tc.provider, tc.words)
					}
				}
			}
			if len(recs) != 40 || moved == 0 {
				t.Errorf("%d records, %d moved off %s; want 40 and some items its filter stopped first", len(recs), moved, tc.provider)
			}
		})
	}
}
