package worker_test

import (
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/tracing"
	"github.com/tenaxhq/tenax/worker"
)

// TestWorkersItemSpansAreChildrenOfTheEnqueuersJobSpan is issue 25's
// "the span context rides with the River job": the process that enqueues
// holds the job span, each River job's metadata carries it, and the item
// spans a worker makes (with its own tracer) hang under it.
func TestWorkersItemSpansAreChildrenOfTheEnqueuersJobSpan(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	enqRec, workRec := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	enqueuer := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(enqRec)))

	ctx, run := enqueuer.StartJob(t.Context(), tracing.Job{ID: "enqueue"})
	cr, err := job.Create(ctx, writeJob(t, 3, ""), c.Store(), job.Options{Home: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	e, err := c.Enqueue(ctx, cr)
	cr.Job.Close()
	run.End(nil, err)
	if err != nil {
		t.Fatal(err)
	}
	jobSpan := enqRec.Ended()[0].SpanContext()

	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Tracer: tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(workRec)))})
	items := func() []sdktrace.ReadOnlySpan {
		var out []sdktrace.ReadOnlySpan
		for _, s := range workRec.Ended() {
			if s.Name() == "item" {
				out = append(out, s)
			}
		}
		return out
	}
	waitFor(t, "three item spans", func() (bool, error) { return len(items()) == 3, nil })

	attempts := map[string]int{}
	for _, s := range workRec.Ended() {
		if s.Name() == "attempt" {
			attempts[s.Parent().SpanID().String()]++
		}
	}
	for _, it := range items() {
		p := it.Parent()
		if p.TraceID() != jobSpan.TraceID() || p.SpanID() != jobSpan.SpanID() {
			t.Errorf("an item span has parent %s/%s, want the enqueuer's job span %s/%s", p.TraceID(), p.SpanID(), jobSpan.TraceID(), jobSpan.SpanID())
		}
		if attempts[it.SpanContext().SpanID().String()] == 0 {
			t.Errorf("item span %s has no attempt spans", it.SpanContext().SpanID())
		}
	}
}
