package tracing_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
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

// TestAFailingCollectorIsToldOnceAtShutdown: a collector refusing every
// upload made the SDK hand each batch's error to OpenTelemetry's global
// handler, which logged one line per batch on stderr, through a run's
// progress line and after its summary, and Shutdown said nothing. Now
// no error reaches the global handler, and Shutdown returns one
// *ExportError that counts the failed uploads and gives the last reason.
func TestAFailingCollectorIsToldOnceAtShutdown(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		http.Error(w, "no space left for spans", http.StatusInternalServerError)
	}))
	defer srv.Close()
	setEnv(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL})
	var handled []error
	var mu sync.Mutex
	prev := otel.GetErrorHandler()
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, err)
	}))
	defer otel.SetErrorHandler(prev)

	tr, err := tracing.FromEnv(context.Background(), "v9.9.9")
	if err != nil || !tr.Enabled() {
		t.Fatalf("FromEnv = enabled %v, %v; want a Tracer that exports", tr.Enabled(), err)
	}
	ctx, run := tr.StartJob(context.Background(), tracing.Job{ID: "job_down", Provider: "mock", Model: "m"})
	s, err := engine.New(engine.Config{Concurrency: 3, OnEvent: run.Observe}, instant(map[int][]string{0: {"ok"}, 1: {"ok"}}), discard{}).Run(ctx, source(2))
	run.End(&s, err)
	if err != nil {
		t.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err = tr.Shutdown(sctx)
	var ee *tracing.ExportError
	if !errors.As(err, &ee) || ee.Failed < 1 || ee.Failed != ee.Uploads {
		t.Fatalf("Shutdown = %v; want an *ExportError counting every upload failed", err)
	}
	if msg := err.Error(); !strings.Contains(msg, "500") || !strings.Contains(msg, "no space left for spans") {
		t.Errorf("Shutdown's error %q does not give the collector's answer", msg)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(handled) > 0 {
		t.Errorf("%d errors went to OpenTelemetry's global handler (stderr in tenax): %v", len(handled), handled)
	}
}
