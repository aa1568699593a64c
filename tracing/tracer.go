package tracing

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// scope names the instrumentation in every span tenax exports.
const scope = "github.com/tenaxhq/tenax/tracing"

// Tracer makes the spans of runs. One serves a whole process; it is safe
// for concurrent use. An off Tracer (Off, or FromEnv without an endpoint)
// makes no spans at all.
type Tracer struct {
	tracer trace.Tracer
	on     bool
	// shutdown flushes and stops the exporter FromEnv set up; nil for a
	// Tracer over a provider the caller owns.
	shutdown func(context.Context) error
	// failures tells of the uploads that failed (*ExportError), once
	// shutdown has flushed the last; nil for a caller's provider.
	failures func() error
}

// New returns a Tracer that makes its spans with tp: an SDK provider of
// the caller's own (tests give one with an in-memory exporter).
func New(tp trace.TracerProvider) *Tracer {
	return &Tracer{tracer: tp.Tracer(scope), on: true}
}

// Off returns a Tracer that makes no spans.
func Off() *Tracer {
	return &Tracer{tracer: noop.NewTracerProvider().Tracer(scope)}
}

// Enabled reports whether t makes spans: callers skip listening to events
// when it does not.
func (t *Tracer) Enabled() bool { return t != nil && t.on }

// Shutdown exports the spans still buffered and stops the exporter, or
// gives up when ctx ends. It returns an *ExportError when uploads failed
// during the run (their spans were dropped): the one report of them. It
// does nothing for a Tracer FromEnv did not set up.
func (t *Tracer) Shutdown(ctx context.Context) error {
	if t == nil || t.shutdown == nil {
		return nil
	}
	if err := t.shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: exporting the last spans: %w", err)
	}
	if t.failures != nil {
		if err := t.failures(); err != nil {
			return fmt.Errorf("tracing: %w", err)
		}
	}
	return nil
}

// ConfigError is a variable asking for an export tenax cannot make: the
// Tracer FromEnv returns beside it is off, and the run goes on without
// traces.
type ConfigError struct {
	// Variable and Value are the variable at fault.
	Variable, Value string
	// Want says what would work.
	Want string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("tracing off: %s=%s is not supported; %s", e.Variable, e.Value, e.Want)
}

// FromEnv returns the Tracer the standard OpenTelemetry variables ask for:
// spans exported over OTLP/HTTP (protobuf) when
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT is
// set, batched (OTEL_BSP_*) and sampled (OTEL_TRACES_SAMPLER) as the SDK
// reads them, with OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT, _COMPRESSION and
// the certificate variables honoured by the exporter. Without an
// endpoint, with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none it
// returns an off Tracer and sets nothing up. A protocol or exporter other
// than OTLP over HTTP/protobuf returns an off Tracer and a *ConfigError.
// version is tenax's, for the resource's service.version; OTEL_SERVICE_NAME
// and OTEL_RESOURCE_ATTRIBUTES override the resource's attributes.
func FromEnv(ctx context.Context, version string) (*Tracer, error) {
	if !wanted() {
		return Off(), nil
	}
	if err := supported(); err != nil {
		return Off(), err
	}
	client, err := newOTLPClient()
	if err != nil {
		return Off(), err
	}
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return Off(), fmt.Errorf("tracing: setting up the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "tenax"), attribute.String("service.version", version)),
		resource.WithHost(),
		resource.WithFromEnv(),
	)
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return Off(), fmt.Errorf("tracing: describing this process: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := New(tp)
	t.shutdown = tp.Shutdown
	t.failures = client.failures
	return t, nil
}

// wanted reports whether the variables ask for traces.
func wanted() bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(os.Getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != ""
}

// supported refuses what the OTLP/HTTP exporter cannot do: gRPC is left
// out on purpose (its client would grow the binary for every user).
func supported() error {
	if v := os.Getenv("OTEL_TRACES_EXPORTER"); v != "" && !strings.EqualFold(v, "otlp") {
		return &ConfigError{Variable: "OTEL_TRACES_EXPORTER", Value: v, Want: "tenax exports traces over otlp only (or none)"}
	}
	for _, name := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		v := os.Getenv(name)
		if v == "" {
			continue
		}
		if v != "http/protobuf" {
			return &ConfigError{Variable: name, Value: v, Want: "use http/protobuf (a collector's port 4318)"}
		}
		// The traces' own variable wins over the general one.
		return nil
	}
	return nil
}
