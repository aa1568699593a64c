// Package tracing turns a run's engine events into OpenTelemetry spans, so
// a job can be followed in Jaeger, Tempo or any OTLP backend:
//
//	job                     the run (tenax run / resume, or the enqueue of a job for workers)
//	└─ item                 one item, from dispatch to its record (or pending)
//	   └─ attempt           one pass: prepared, waited at the gate, called, decided
//	      └─ call           the task's call: provider, model, tokens, finish reason
//
// It watches the engine from outside: a Run is an engine.Config.OnEvent
// (through job.Options.OnEvent) and builds every span from the events'
// own times (engine.ItemCalled carries an attempt's), so the engine knows
// nothing of OpenTelemetry and pays nothing when no one traces.
//
// FromEnv sets up an exporter only when the standard variables ask for
// one (OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT,
// over OTLP/HTTP with protobuf); otherwise its Tracer is off: no SDK, no
// exporter, and the CLI does not even listen to the events.
//
// On workers, an item's span is a child of the job span of the process
// that enqueued it: Metadata puts the job span's W3C traceparent in each
// River job's metadata, and Run.ItemParent reads it back on the worker
// before the engine runs the item. See docs/tracing.md.
package tracing
