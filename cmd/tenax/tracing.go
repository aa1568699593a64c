package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/tracing"
)

// flushTimeout bounds the wait for the last spans to reach the collector
// as a command ends.
const flushTimeout = 10 * time.Second

// startTracing returns the Tracer the OTEL_* variables ask for (off, and
// free, without an endpoint) and a function that flushes it as the
// command ends. A variable asking for what tenax cannot do (gRPC) is
// warned about and the command goes on untraced.
func (g *globals) startTracing(ctx context.Context) (*tracing.Tracer, func()) {
	tr, err := tracing.FromEnv(ctx, version)
	if err != nil {
		fmt.Fprintf(g.stderr, "tenax: %v\n", err)
	}
	return tr, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			fmt.Fprintf(g.stderr, "tenax: %v\n", err)
		}
	}
}

// traceRun sets tracing up for one run of a job in this process: opts's
// events go to the trace when the variables ask for one. The function
// flushes the spans as the command ends.
func (g *globals) traceRun(ctx context.Context, opts *job.Options) (*jobTrace, func()) {
	tr, stop := g.startTracing(ctx)
	t := &jobTrace{tr: tr}
	t.observe(opts)
	return t, stop
}

// jobTrace traces one run of a job in this process: the job span from the
// job's start, the engine's events under it.
type jobTrace struct {
	tr  *tracing.Tracer
	run atomic.Pointer[tracing.Run]
}

// observe sends opts's engine events to the trace, when tracing is on;
// off, it leaves opts alone.
func (t *jobTrace) observe(opts *job.Options) {
	if !t.tr.Enabled() {
		return
	}
	prev := opts.OnEvent
	opts.OnEvent = func(ev engine.Event) {
		if prev != nil {
			prev(ev)
		}
		if r := t.run.Load(); r != nil {
			r.Observe(ev)
		}
	}
}

// started opens the job span as the job starts (job.Options.OnStart).
func (t *jobTrace) started(ctx context.Context, s job.Started) {
	if t.tr.Enabled() {
		_, r := t.tr.StartJob(ctx, traceJob(s.JobID, s.Spec, s.Redact))
		t.run.Store(r)
	}
}

// ended closes the job span with the run's result.
func (t *jobTrace) ended(res *job.Result, err error) {
	r := t.run.Load()
	if r == nil {
		return
	}
	var s *engine.Summary
	if res != nil {
		s = &res.Summary
	}
	r.End(s, err)
}

// traceJob describes a job for its spans; s may be nil (a resume on
// workers, whose spec lives in the database).
func traceJob(id string, s *spec.Spec, redact func(string) string) tracing.Job {
	j := tracing.JobOf(id, s)
	if redact != nil {
		j.Redact = redact
	}
	return j
}
