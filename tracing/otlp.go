package tracing

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// otlpClient sends spans to a collector over OTLP/HTTP with protobuf
// bodies: the otlptrace.Client behind FromEnv's exporter. It is tenax's
// own because otlptracehttp imports gRPC's configuration, and with it
// golang.org/x/net/trace, whose html/template turns the linker's
// dead-code elimination of methods off: +33 MB in the release binary
// (docs/tracing.md).
type otlpClient struct {
	url         string
	headers     map[string]string
	gzip        bool
	timeout     time.Duration
	http        *http.Client
	maxAttempts int

	// The uploads' outcomes. A failed upload is counted and kept here,
	// not returned: the SDK would hand it to OpenTelemetry's global error
	// handler, whose log lines land on stderr through a run's progress
	// line, one per batch, for as long as the collector is away. The
	// Tracer tells of them once, as the command ends (failures).
	uploads, failed atomic.Int64
	lastErr         atomic.Pointer[error]
}

// failures returns nil when every upload went through, else one error
// that counts the failed ones and keeps the last one's reason.
func (c *otlpClient) failures() error {
	n := c.failed.Load()
	if n == 0 {
		return nil
	}
	return &ExportError{Failed: n, Uploads: c.uploads.Load(), Err: *c.lastErr.Load()}
}

// ExportError is spans that never reached the collector: Failed of
// Uploads batches were dropped, the last for Err. Tracer.Shutdown
// returns it.
type ExportError struct {
	Failed, Uploads int64
	Err             error
}

func (e *ExportError) Error() string {
	return fmt.Sprintf("%d of %d span uploads failed, their spans dropped; the last: %v", e.Failed, e.Uploads, e.Err)
}

func (e *ExportError) Unwrap() error { return e.Err }

// otlpEnv reads the traces' variable name, else the general one.
func otlpEnv(name string) string {
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
		return v
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_" + name)
}

// newOTLPClient reads the standard OTLP variables: the endpoint
// (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces), headers, timeout,
// compression, and the certificate files for TLS.
func newOTLPClient() (*otlpClient, error) {
	c := &otlpClient{headers: map[string]string{}, timeout: 10 * time.Second, maxAttempts: 5}
	if v := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"); v != "" {
		c.url = v
	} else {
		c.url = strings.TrimSuffix(os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	}
	u, err := url.Parse(c.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &ConfigError{Variable: "OTEL_EXPORTER_OTLP_ENDPOINT", Value: c.url, Want: "an http:// or https:// URL, e.g. http://localhost:4318"}
	}
	if h := otlpEnv("HEADERS"); h != "" {
		for _, kv := range strings.Split(h, ",") {
			k, v, ok := strings.Cut(kv, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, &ConfigError{Variable: "OTEL_EXPORTER_OTLP_HEADERS", Value: "(not shown)", Want: "key=value pairs separated by commas"}
			}
			if dv, err := url.PathUnescape(strings.TrimSpace(v)); err == nil {
				v = dv
			}
			c.headers[k] = v
		}
	}
	if t := otlpEnv("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return nil, &ConfigError{Variable: "OTEL_EXPORTER_OTLP_TIMEOUT", Value: t, Want: "milliseconds, e.g. 10000"}
		}
		c.timeout = time.Duration(ms) * time.Millisecond
	}
	switch v := otlpEnv("COMPRESSION"); v {
	case "", "none":
	case "gzip":
		c.gzip = true
	default:
		return nil, &ConfigError{Variable: "OTEL_EXPORTER_OTLP_COMPRESSION", Value: v, Want: "gzip or none"}
	}
	tlsc, err := otlpTLS()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsc
	c.http = &http.Client{Transport: tr}
	return c, nil
}

// otlpTLS is the TLS configuration the certificate variables ask for; nil
// for the system's roots and no client certificate.
func otlpTLS() (*tls.Config, error) {
	ca, cert, key := otlpEnv("CERTIFICATE"), otlpEnv("CLIENT_CERTIFICATE"), otlpEnv("CLIENT_KEY")
	if ca == "" && cert == "" && key == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CERTIFICATE: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CERTIFICATE: %s holds no PEM certificate", ca)
		}
	}
	if cert != "" || key != "" {
		pair, err := tls.LoadX509KeyPair(cert, key)
		if err != nil {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_CLIENT_CERTIFICATE and _CLIENT_KEY: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// Start does nothing: the HTTP client connects on the first upload.
func (c *otlpClient) Start(context.Context) error { return nil }

// Stop closes the client's idle connections.
func (c *otlpClient) Stop(context.Context) error {
	c.http.CloseIdleConnections()
	return nil
}

// UploadTraces sends one ExportTraceServiceRequest holding spans, trying
// again after a 429, 502, 503 or 504 (after the server's Retry-After when
// it names one) until the timeout. A failure is counted (failures), and
// the spans dropped.
func (c *otlpClient) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	c.uploads.Add(1)
	if err := c.upload(ctx, spans); err != nil {
		c.failed.Add(1)
		c.lastErr.Store(&err)
	}
	return nil
}

// upload is UploadTraces' work: its error is the upload's failure.
func (c *otlpClient) upload(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	body, err := exportRequest(spans)
	if err != nil {
		return err
	}
	if c.gzip {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		if _, err := zw.Write(body); err != nil {
			return err
		}
		if err := zw.Close(); err != nil {
			return err
		}
		body = b.Bytes()
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		again, hint, err := c.post(ctx, body)
		if !again || attempt == c.maxAttempts {
			return err
		}
		if hint > 0 {
			wait = hint
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, context.Cause(ctx))
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// post sends body once; again reports a failure worth another try, with
// the server's Retry-After when it gave one.
func (c *otlpClient) post(ctx context.Context, body []byte) (again bool, hint time.Duration, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return false, 0, err
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	if c.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return ctx.Err() == nil, 0, fmt.Errorf("tracing: exporting spans to %s: %w", c.url, err)
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
	if resp.StatusCode/100 == 2 {
		return false, 0, nil
	}
	err = fmt.Errorf("tracing: exporting spans to %s: %s %s", c.url, resp.Status, bytes.TrimSpace(msg))
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout:
		if s, perr := strconv.Atoi(resp.Header.Get("Retry-After")); perr == nil && s > 0 {
			hint = time.Duration(s) * time.Second
		}
		return true, hint, err
	}
	return false, 0, err
}

// exportRequest encodes an ExportTraceServiceRequest: field 1, repeated
// ResourceSpans. Its Go type lives in a package that imports gRPC, so the
// one field is written here.
func exportRequest(spans []*tracepb.ResourceSpans) ([]byte, error) {
	var b []byte
	for _, rs := range spans {
		m, err := proto.Marshal(rs)
		if err != nil {
			return nil, fmt.Errorf("tracing: encoding spans: %w", err)
		}
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendBytes(b, m)
	}
	return b, nil
}
