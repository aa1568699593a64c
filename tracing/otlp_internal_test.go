package tracing

import (
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// clearOTLP sets every variable newOTLPClient reads to env's value or "".
func clearOTLP(t *testing.T, env map[string]string) {
	for _, name := range []string{"ENDPOINT", "HEADERS", "TIMEOUT", "COMPRESSION", "CERTIFICATE", "CLIENT_CERTIFICATE", "CLIENT_KEY"} {
		for _, k := range []string{"OTEL_EXPORTER_OTLP_" + name, "OTEL_EXPORTER_OTLP_TRACES_" + name} {
			t.Setenv(k, env[k])
		}
	}
}

func TestOTLPClientReadsTheStandardVariables(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		url     string
		headers map[string]string
		gzip    bool
		bad     string // the variable a *ConfigError names
	}{
		{"the general endpoint gets /v1/traces", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318/"}, "http://c:4318/v1/traces", map[string]string{}, false, ""},
		{"the traces' endpoint is taken as it is", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://t/x"}, "https://t/x", map[string]string{}, false, ""},
		{"headers are decoded, the traces' win", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_HEADERS": "a=1", "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "api-key=a%20b, x=y"}, "http://c/v1/traces", map[string]string{"api-key": "a b", "x": "y"}, false, ""},
		{"gzip", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"}, "http://c/v1/traces", map[string]string{}, true, ""},
		{"an endpoint without a scheme", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "c:4318"}, "", nil, false, "OTEL_EXPORTER_OTLP_ENDPOINT"},
		{"an unknown compression", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_COMPRESSION": "zstd"}, "", nil, false, "OTEL_EXPORTER_OTLP_COMPRESSION"},
		{"a timeout that is no number", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_EXPORTER_OTLP_TIMEOUT": "10s"}, "", nil, false, "OTEL_EXPORTER_OTLP_TIMEOUT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clearOTLP(t, tt.env)
			c, err := newOTLPClient()
			var ce *ConfigError
			if tt.bad != "" {
				if !errors.As(err, &ce) || ce.Variable != tt.bad {
					t.Fatalf("newOTLPClient: %v, want a *ConfigError naming %s", err, tt.bad)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.url != tt.url || c.gzip != tt.gzip || len(c.headers) != len(tt.headers) {
				t.Errorf("url %q gzip %v headers %v, want %q %v %v", c.url, c.gzip, c.headers, tt.url, tt.gzip, tt.headers)
			}
			for k, v := range tt.headers {
				if c.headers[k] != v {
					t.Errorf("header %s = %q, want %q", k, c.headers[k], v)
				}
			}
		})
	}
}

// TestOTLPClientSendsWhatACollectorDecodes: the request encoded by hand is
// the official ExportTraceServiceRequest, gzipped when asked, with the
// headers; a 503 is tried again and a 400 is not.
func TestOTLPClientSendsWhatACollectorDecodes(t *testing.T) {
	var calls atomic.Int32
	var got coltracepb.ExportTraceServiceRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		var body io.Reader = r.Body
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(r.Body)
			if err != nil {
				t.Error(err)
				return
			}
			body = zr
		}
		b, _ := io.ReadAll(body)
		if err := proto.Unmarshal(b, &got); err != nil || r.Header.Get("Api-Key") != "k" || r.Header.Get("Content-Type") != "application/x-protobuf" {
			t.Errorf("the collector got %v with headers %v: want a protobuf export with api-key k", err, r.Header)
		}
	}))
	defer srv.Close()
	clearOTLP(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL, "OTEL_EXPORTER_OTLP_HEADERS": "api-key=k", "OTEL_EXPORTER_OTLP_COMPRESSION": "gzip"})
	c, err := newOTLPClient()
	if err != nil {
		t.Fatal(err)
	}
	spans := []*tracepb.ResourceSpans{
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "item 0"}, {Name: "attempt 1"}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "item 1"}}}}},
	}
	if err := c.UploadTraces(context.Background(), spans); err != nil || c.failures() != nil {
		t.Fatalf("UploadTraces: %v, failures %v; want the second try (after a 503) to succeed", err, c.failures())
	}
	if calls.Load() != 2 || !proto.Equal(&got, &coltracepb.ExportTraceServiceRequest{ResourceSpans: spans}) {
		t.Errorf("after %d requests the collector decoded %v, want the spans sent in 2 requests", calls.Load(), &got)
	}

	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "no such tenant", http.StatusBadRequest)
	}))
	defer bad.Close()
	c.url = bad.URL + "/v1/traces"
	calls.Store(0)
	if err := c.upload(context.Background(), spans); err == nil || calls.Load() != 1 {
		t.Errorf("a 400 gave %v after %d requests, want its error after 1 (not tried again)", err, calls.Load())
	}
}
