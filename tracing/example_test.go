package tracing_test

import (
	"context"
	"fmt"
	"strings"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/tracing"
)

// A run's events become spans: StartJob opens the job span, the Run's
// Observe is the engine's OnEvent, End closes the job. Here the provider
// records the spans in memory; FromEnv exports them over OTLP instead.
func ExampleTracer_StartJob() {
	rec := tracetest.NewSpanRecorder()
	tr := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))

	ctx, run := tr.StartJob(context.Background(), tracing.Job{ID: "job_1", Name: "upper"})
	_, s, err := engine.RunSlice(ctx, []string{"a", "b"}, func(_ context.Context, s string) (string, error) {
		return strings.ToUpper(s), nil
	}, engine.Config{Concurrency: 1, OnEvent: run.Observe})
	run.End(&s, err)

	names := map[string]string{}
	for _, sp := range rec.Ended() {
		names[sp.SpanContext().SpanID().String()] = sp.Name()
	}
	for _, sp := range rec.Ended() {
		if sp.Name() == "item" || sp.Name() == "call" {
			fmt.Printf("%s under %s\n", sp.Name(), names[sp.Parent().SpanID().String()])
		}
	}
	// Output:
	// call under attempt
	// item under job
	// call under attempt
	// item under job
}
