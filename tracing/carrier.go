package tracing

import (
	"context"
	"encoding/json"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Metadata returns ctx's span context as a JSON object of W3C Trace
// Context headers ({"traceparent": "00-…"}), for a River job's metadata;
// nil when ctx carries no span (tracing off), so that nothing is stored.
func Metadata(ctx context.Context) []byte {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return nil
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	b, err := json.Marshal(c)
	if err != nil {
		return nil
	}
	return b
}

// spanContextOf reads the span context Metadata wrote into a JSON object
// that may hold other keys; an invalid one when there is none.
func spanContextOf(metadata []byte) trace.SpanContext {
	if len(metadata) == 0 {
		return trace.SpanContext{}
	}
	var fields map[string]any
	if json.Unmarshal(metadata, &fields) != nil {
		return trace.SpanContext{}
	}
	c := propagation.MapCarrier{}
	for _, k := range (propagation.TraceContext{}).Fields() {
		if v, ok := fields[k].(string); ok {
			c[k] = v
		}
	}
	return trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), c))
}
