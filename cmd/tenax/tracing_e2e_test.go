package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpCollector stands in for an OpenTelemetry collector's OTLP/HTTP
// receiver and keeps the spans it is sent.
type otlpCollector struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		err := proto.Unmarshal(body, &req)
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if err != nil {
			t.Errorf("the collector could not decode an export: %v", err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
	}))
	t.Cleanup(c.Close)
	return c
}

const tracedSpec = `
name: traced
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the number {{.n}} as JSON."
retry:
  max_attempts: 10
  backoff: {base: 1ms, max: 5ms}
concurrency: {max: 4}
cache: {enabled: false}
mock: {latency: 1ms, errors: {server: 0.3}}
`

// TestRunExportsOneSpanTreePerItem is issue 25's OTLP test through the
// CLI: with OTEL_EXPORTER_OTLP_ENDPOINT set, tenax run sends a job span
// whose children are one item span per item, each with as many attempt
// spans (each holding its call) as the item's record counts; without it,
// the same run sends nothing.
func TestRunExportsOneSpanTreePerItem(t *testing.T) {
	const n = 6
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	w.write("job.yaml", tracedSpec, 0o644)
	c := newOTLPCollector(t)

	r := w.tenaxEnv([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.URL, "OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf"}, "run", "job.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run exited %d:\n%s", r.code, r.stderr)
	}
	attempts := map[int]int{}
	for _, rec := range readRecords(t, filepath.Join(w.dir, "out.jsonl")) {
		attempts[rec.Idx] = rec.Attempts
	}

	c.mu.Lock()
	byParent := map[string][]*tracepb.Span{}
	var roots []*tracepb.Span
	for _, s := range c.spans {
		if len(s.ParentSpanId) == 0 {
			roots = append(roots, s)
		}
		byParent[string(s.ParentSpanId)] = append(byParent[string(s.ParentSpanId)], s)
	}
	c.mu.Unlock()
	if len(roots) != 1 || roots[0].Name != "job" {
		t.Fatalf("the collector got %d root spans, want one job span", len(roots))
	}
	items := byParent[string(roots[0].SpanId)]
	if len(items) != n {
		t.Fatalf("the job span has %d children, want %d item spans", len(items), n)
	}
	for _, it := range items {
		idx := -1
		for _, kv := range it.Attributes {
			if kv.Key == "tenax.item.idx" {
				idx = int(kv.Value.GetIntValue())
			}
		}
		as := byParent[string(it.SpanId)]
		if len(as) != attempts[idx] {
			t.Errorf("item %d has %d attempt spans, want its record's %d attempts", idx, len(as), attempts[idx])
		}
		for _, a := range as {
			if calls := byParent[string(a.SpanId)]; a.Name != "attempt" || len(calls) != 1 || calls[0].Name != "call" {
				t.Errorf("item %d has a child %q with %d children, want attempts of one call each", idx, a.Name, len(calls))
			}
		}
	}

	before := c.requests
	if r := w.tenax("run", "job.yaml"); r.code != 0 {
		t.Fatalf("the untraced run exited %d:\n%s", r.code, r.stderr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.requests != before {
		t.Errorf("the collector got %d more requests from a run without OTEL_ variables, want none", c.requests-before)
	}
}

// TestRunOnWorkersTracesItemsUnderTheJobSpan: `tenax run --workers 2`
// with an endpoint sends one trace whose job span (the enqueue and the
// attached run) parents every item span its workers made, the span
// context having gone through each River job's metadata.
func TestRunOnWorkersTracesItemsUnderTheJobSpan(t *testing.T) {
	const n = 5
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [echo, \"item {{.n}}\"]\n", 0o644)
	c := newOTLPCollector(t)
	r := w.tenaxEnv([]string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + c.URL}, "run", "job.yaml", "--store", pg, "--workers", "2", "-q")
	if r.code != 0 {
		t.Fatalf("run --workers 2 exited %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var job *tracepb.Span
	items := map[string]int{} // parent span id → item spans
	for _, s := range c.spans {
		switch s.Name {
		case "job":
			job = s
		case "item":
			items[string(s.ParentSpanId)]++
		}
	}
	if job == nil {
		t.Fatalf("no job span among the %d spans the collector got", len(c.spans))
	}
	if items[string(job.SpanId)] != n || len(items) != 1 {
		t.Errorf("item spans by parent %v, want all %d under the job span", items, n)
	}
}
