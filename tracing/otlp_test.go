package tracing_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/tracing"
)

// collector is a stand-in for an OpenTelemetry collector's OTLP/HTTP
// receiver: it decodes the protobuf export requests it is sent.
type collector struct {
	*httptest.Server
	mu       sync.Mutex
	requests int
	spans    []*tracepb.Span
	service  string
}

func newCollector(t *testing.T) *collector {
	c := &collector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(body, &req)
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.requests++
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the collector got %s %s (%s): %v; want a protobuf export to /v1/traces", r.Method, r.URL.Path, r.Header.Get("Content-Type"), err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == "service.name" {
					c.service = kv.Value.GetStringValue()
				}
			}
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(nil)
	}))
	t.Cleanup(c.Close)
	return c
}

// otelVars are the variables FromEnv reads; each test sets all of them.
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER",
	"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
	"OTEL_SERVICE_NAME", "OTEL_EXPORTER_OTLP_HEADERS",
}

func setEnv(t *testing.T, env map[string]string) {
	for _, k := range otelVars {
		t.Setenv(k, env[k])
	}
}

// runJob runs three items (one retried) under tr and shuts it down.
func runJob(t *testing.T, tr *tracing.Tracer) {
	t.Helper()
	ctx, run := tr.StartJob(context.Background(), tracing.Job{ID: "job_e2e", Provider: "mock", Model: "m"})
	cfg := engine.Config{Concurrency: 3, Retry: retry.Policy{MaxAttempts: 3, Backoff: retry.Backoff{Base: time.Millisecond, Max: time.Millisecond, Jitter: retry.JitterNone}}}
	if tr.Enabled() {
		cfg.OnEvent = run.Observe
	}
	s, err := engine.New(cfg, instant(map[int][]string{0: {"ok"}, 1: {"reset", "ok"}, 2: {"ok"}}), discard{}).Run(ctx, source(3))
	run.End(&s, err)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := tr.Shutdown(sctx); err != nil {
		t.Fatal(err)
	}
}

func TestSpansAreExportedOverOTLPHTTPWhenAnEndpointIsSet(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(url string) map[string]string
	}{
		{"traces endpoint", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": url + "/v1/traces", "OTEL_SERVICE_NAME": "tenax-test"}
		}},
		{"general endpoint and protocol", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_SERVICE_NAME": "tenax-test"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t)
			setEnv(t, tc.env(c.URL))
			tr, err := tracing.FromEnv(context.Background(), "v9.9.9")
			if err != nil || !tr.Enabled() {
				t.Fatalf("FromEnv = enabled %v, %v; want a Tracer that exports", tr.Enabled(), err)
			}
			runJob(t, tr)

			c.mu.Lock()
			defer c.mu.Unlock()
			if c.service != "tenax-test" {
				t.Errorf("service.name %q, want OTEL_SERVICE_NAME's tenax-test", c.service)
			}
			byParent := map[string][]*tracepb.Span{}
			var jobs []*tracepb.Span
			for _, s := range c.spans {
				if len(s.ParentSpanId) == 0 {
					jobs = append(jobs, s)
				}
				byParent[string(s.ParentSpanId)] = append(byParent[string(s.ParentSpanId)], s)
			}
			if len(jobs) != 1 || jobs[0].Name != "job" {
				t.Fatalf("the collector got roots %d (%v), want one job span", len(jobs), jobs)
			}
			items := byParent[string(jobs[0].SpanId)]
			if len(items) != 3 {
				t.Fatalf("the job span has %d children, want 3 item spans", len(items))
			}
			attempts := 0
			for _, it := range items {
				as := byParent[string(it.SpanId)]
				for _, a := range as {
					calls := byParent[string(a.SpanId)]
					if a.Name != "attempt" || len(calls) != 1 || calls[0].Name != "call" {
						t.Errorf("item %s has child %s with %d children, want attempts of one call each", it.Name, a.Name, len(calls))
					}
				}
				attempts += len(as)
			}
			if attempts != 4 {
				t.Errorf("%d attempt spans under the items, want 4 (one item retried once)", attempts)
			}
		})
	}
}

func TestNothingIsExportedWithoutAnEndpoint(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     func(url string) map[string]string
		invalid bool
	}{
		{"no variables", func(string) map[string]string { return nil }, false},
		{"other variables only", func(string) map[string]string {
			return map[string]string{"OTEL_SERVICE_NAME": "x", "OTEL_EXPORTER_OTLP_HEADERS": "a=b", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"}
		}, false},
		{"sdk disabled", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_SDK_DISABLED": "true"}
		}, false},
		{"exporter none", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_TRACES_EXPORTER": "none"}
		}, false},
		{"grpc asked for", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
		}, true},
		{"traces protocol wins", func(url string) map[string]string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/json"}
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCollector(t)
			setEnv(t, tc.env(c.URL))
			tr, err := tracing.FromEnv(context.Background(), "v0")
			var ce *tracing.ConfigError
			if tc.invalid != errors.As(err, &ce) || (!tc.invalid && err != nil) {
				t.Errorf("FromEnv error %v, want a *ConfigError: %v", err, tc.invalid)
			}
			if tr.Enabled() {
				t.Fatal("FromEnv returned an enabled Tracer, want one that is off")
			}
			runJob(t, tr)
			c.mu.Lock()
			defer c.mu.Unlock()
			if c.requests != 0 {
				t.Errorf("the collector got %d requests, want none while tracing is off", c.requests)
			}
		})
	}
}
