package tracing

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
)

// Job describes the job a Run traces, for its spans' attributes.
type Job struct {
	// ID is the job's id; Name its spec's name.
	ID, Name string
	// Provider and Model are the task's (LLM tasks), put on every call
	// span; empty for exec and http tasks.
	Provider, Model string
	// Redact replaces secrets in the error messages spans carry (the
	// spec's Redact); nil leaves them as they are.
	Redact func(string) string
	// Routes gives each route's provider and model by its name, for the
	// calls made on it (a run with routes); a call on a route not listed
	// carries Provider and Model.
	Routes map[string]Route
}

// Route is one route's provider and model.
type Route struct{ Provider, Model string }

// JobOf describes job id run from s for its spans: its name, its task's
// provider and model, its routes and its secrets. s may be nil (a job
// whose spec is not at hand).
func JobOf(id string, s *spec.Spec) Job {
	j := Job{ID: id}
	if s == nil {
		return j
	}
	j.Name, j.Provider, j.Model, j.Redact = s.Name, s.Task.Provider, s.Task.Model, s.Redact
	for _, rt := range s.Routes {
		if j.Routes == nil {
			j.Routes = map[string]Route{}
		}
		j.Routes[rt.Name] = Route{Provider: cmp.Or(rt.Provider, j.Provider), Model: cmp.Or(rt.Model, j.Model)}
	}
	return j
}

// Run follows one job's run on one process and turns its engine events
// into spans. Observe is its engine.Config.OnEvent; it is safe for
// concurrent use, as the engine calls it from every item's goroutine.
type Run struct {
	tracer trace.Tracer
	job    trace.Span // nil when following items of a job enqueued elsewhere
	parent context.Context
	info   Job
	// call holds the attributes of a call span made on no route.
	call []attribute.KeyValue

	mu      sync.Mutex
	items   map[int]trace.Span
	parents map[int]trace.SpanContext // ItemParent's, until the item starts
}

// StartJob starts the job span of a run, a child of ctx's span if any, and
// returns ctx carrying it (what Metadata reads) and the Run that follows
// the job's items under it. End ends it.
func (t *Tracer) StartJob(ctx context.Context, j Job) (context.Context, *Run) {
	ctx, span := t.tracer.Start(ctx, "job", trace.WithAttributes(jobAttrs(j)...))
	r := t.newRun(j)
	r.job, r.parent = span, ctx
	return ctx, r
}

// Follow returns a Run for the items of a job whose job span another
// process holds (a worker's share of a job): each item's span is a child
// of the span ItemParent gives for it, a root when none is given.
func (t *Tracer) Follow(j Job) *Run {
	r := t.newRun(j)
	r.parent = context.Background()
	return r
}

func (t *Tracer) newRun(j Job) *Run {
	r := &Run{tracer: t.tracer, info: j, items: map[int]trace.Span{}, parents: map[int]trace.SpanContext{}}
	r.call = deployment(j.Provider, j.Model, "")
	return r
}

// deployment is a call span's provider, model and route attributes.
func deployment(provider, model, route string) []attribute.KeyValue {
	var a []attribute.KeyValue
	if provider != "" {
		a = append(a, attribute.String("gen_ai.provider.name", provider))
	}
	if model != "" {
		a = append(a, attribute.String("gen_ai.request.model", model))
	}
	if route != "" {
		a = append(a, attribute.String("tenax.route", route))
	}
	return a
}

// callAttrs are the provider, model and route of a call made on route
// ("" for none).
func (r *Run) callAttrs(route string) []attribute.KeyValue {
	if route == "" {
		return r.call
	}
	rt, ok := r.info.Routes[route]
	if !ok {
		rt = Route{Provider: r.info.Provider, Model: r.info.Model}
	}
	return deployment(rt.Provider, rt.Model, route)
}

func jobAttrs(j Job) []attribute.KeyValue {
	a := []attribute.KeyValue{attribute.String("tenax.job.id", j.ID)}
	if j.Name != "" {
		a = append(a, attribute.String("tenax.job.name", j.Name))
	}
	return a
}

// ItemParent makes the span of item idx, when it starts, a child of the
// span whose W3C trace context metadata holds (Metadata's JSON, as a
// River job carries it). Metadata without one changes nothing.
func (r *Run) ItemParent(idx int, metadata []byte) {
	sc := spanContextOf(metadata)
	if !sc.IsValid() {
		return
	}
	r.mu.Lock()
	r.parents[idx] = sc
	r.mu.Unlock()
}

// Observe turns one engine event into spans: it is the Run's
// engine.Config.OnEvent.
func (r *Run) Observe(ev engine.Event) {
	switch ev.Kind {
	case engine.ItemStarted:
		r.startItem(ev.Item.Idx, ev.Item.ID, ev.Time)
	case engine.ItemCalled:
		if item := r.item(ev.Item.Idx); item != nil {
			r.attempt(item, ev)
		}
	case engine.ItemRetry:
		if item := r.item(ev.Item.Idx); item != nil {
			item.AddEvent("retry", trace.WithTimestamp(ev.Time), trace.WithAttributes(
				attribute.Int("tenax.retry", ev.Attempt), attribute.Int64("tenax.delay_ms", ev.Delay.Milliseconds())))
		}
	case engine.ItemHeal:
		if item := r.item(ev.Item.Idx); item != nil {
			item.AddEvent("heal", trace.WithTimestamp(ev.Time), trace.WithAttributes(attribute.Int("tenax.heal_attempt", ev.Attempt)))
		}
	case engine.ItemFinished:
		r.finishItem(ev)
	case engine.ItemPending:
		if item := r.takeItem(ev.Item.Idx); item != nil {
			item.SetAttributes(attribute.String("tenax.outcome", "pending"))
			item.End(trace.WithTimestamp(ev.Time))
		}
	case engine.BreakerChanged:
		r.jobEvent("breaker "+ev.State.String(), ev.Time)
	case engine.Cooldown:
		r.jobEvent("cooldown", ev.Time, attribute.String("tenax.until", ev.Until.UTC().Format(time.RFC3339Nano)), attribute.String("tenax.reason", ev.Reason))
	case engine.Stopping:
		r.jobEvent("stopping", ev.Time, attribute.String("tenax.reason", ev.Reason))
	}
}

// startItem opens item idx's span at start. The span starts outside the
// lock: the SDK's own locks are not nested in ours.
func (r *Run) startItem(idx int, id string, start time.Time) trace.Span {
	r.mu.Lock()
	parent := r.parent
	if sc, ok := r.parents[idx]; ok {
		parent = trace.ContextWithRemoteSpanContext(parent, sc)
		delete(r.parents, idx)
	}
	r.mu.Unlock()
	attrs := []attribute.KeyValue{attribute.String("tenax.job.id", r.info.ID), attribute.Int("tenax.item.idx", idx)}
	if id != "" {
		attrs = append(attrs, attribute.String("tenax.item.id", id))
	}
	_, span := r.tracer.Start(parent, "item", trace.WithTimestamp(start), trace.WithAttributes(attrs...))
	r.mu.Lock()
	old := r.items[idx]
	r.items[idx] = span
	r.mu.Unlock()
	if old != nil {
		// A second start of an item still open here (a duplicate
		// execution): the first one's span ends, unfinished.
		old.End(trace.WithTimestamp(start))
	}
	return span
}

func (r *Run) item(idx int) trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.items[idx]
}

// takeItem returns item idx's open span and forgets it, with any parent
// given for an item that never started.
func (r *Run) takeItem(idx int) trace.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	span := r.items[idx]
	delete(r.items, idx)
	delete(r.parents, idx)
	return span
}

// attempt draws one ItemCalled: the attempt from its queueing to its
// decision, and within it the call.
func (r *Run) attempt(item trace.Span, ev engine.Event) {
	c := ev.Call
	ctx := trace.ContextWithSpan(context.Background(), item)
	ctx, attempt := r.tracer.Start(ctx, "attempt", trace.WithTimestamp(c.Queued), trace.WithAttributes(
		attribute.Int("tenax.attempt", c.Number),
		attribute.String("tenax.next", c.Next.String()),
	))
	_, call := r.tracer.Start(ctx, "call", trace.WithTimestamp(c.Started), trace.WithAttributes(r.callAttrs(ev.Route)...))
	call.SetAttributes(
		attribute.Int64("gen_ai.usage.input_tokens", c.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", c.Usage.OutputTokens),
		attribute.Bool("tenax.cache_hit", c.CacheHit),
	)
	if c.FinishReason != "" {
		call.SetAttributes(attribute.StringSlice("gen_ai.response.finish_reasons", []string{c.FinishReason}))
	}
	if c.CostUSD > 0 {
		call.SetAttributes(attribute.Float64("tenax.cost_usd", c.CostUSD))
	}
	if ev.Err != nil {
		msg := r.message(ev.Err.Error())
		attempt.SetAttributes(classAttrs(ev.Decision)...)
		attempt.SetStatus(codes.Error, msg)
		if ev.Decision.Class != classify.Invalid {
			// An invalid output is a call that worked: the attempt
			// failed, not the call.
			call.SetAttributes(classAttrs(ev.Decision)...)
			call.SetStatus(codes.Error, msg)
		}
	}
	call.End(trace.WithTimestamp(c.Ended))
	attempt.End(trace.WithTimestamp(ev.Time))
}

func classAttrs(d classify.Decision) []attribute.KeyValue {
	return []attribute.KeyValue{attribute.String("tenax.class", d.Class.String()), attribute.String("tenax.reason", d.Reason)}
}

// finishItem ends an item's span with its record. An item recorded
// without starting (an input line that is not an item) gets a span of
// its own at that instant.
func (r *Run) finishItem(ev engine.Event) {
	rec := ev.Record
	item := r.takeItem(rec.Idx)
	if item == nil {
		item = r.startItem(rec.Idx, rec.ID, ev.Time)
		r.takeItem(rec.Idx)
	}
	item.SetAttributes(recordAttrs(rec)...)
	if rec.Failed() {
		item.SetStatus(codes.Error, r.message(rec.Error))
	}
	item.End(trace.WithTimestamp(ev.Time))
}

func recordAttrs(rec store.Record) []attribute.KeyValue {
	a := []attribute.KeyValue{
		attribute.String("tenax.outcome", "succeeded"),
		attribute.Int("tenax.attempts", rec.Attempts),
		attribute.Int("tenax.heal_attempts", rec.HealAttempts),
		attribute.Bool("tenax.cache_hit", rec.CacheHit),
		attribute.Int64("gen_ai.usage.input_tokens", rec.Usage.InputTokens),
		attribute.Int64("gen_ai.usage.output_tokens", rec.Usage.OutputTokens),
	}
	if rec.Failed() {
		a[0] = attribute.String("tenax.outcome", "failed")
		a = append(a, attribute.String("tenax.class", rec.Class.String()), attribute.String("tenax.fingerprint", rec.Fingerprint))
	}
	if rec.CostUSD != nil {
		a = append(a, attribute.Float64("tenax.cost_usd", *rec.CostUSD))
	}
	return a
}

// message is an error's first line, its secrets redacted: a span's status
// is read in a list, and traces leave the machine.
func (r *Run) message(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if r.info.Redact != nil {
		s = r.info.Redact(s)
	}
	return s
}

func (r *Run) jobEvent(name string, at time.Time, attrs ...attribute.KeyValue) {
	if r.job == nil {
		return
	}
	r.job.AddEvent(name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

// End ends the job span with how the run ended (s, when known; err, a
// failure of the run itself) and the span of every item still open, as
// pending. A Run from Follow has no job span; End ends its items only.
func (r *Run) End(s *engine.Summary, err error) {
	r.mu.Lock()
	open := r.items
	r.items = map[int]trace.Span{}
	r.mu.Unlock()
	now := time.Now()
	for _, item := range open {
		item.SetAttributes(attribute.String("tenax.outcome", "pending"))
		item.End(trace.WithTimestamp(now))
	}
	if r.job == nil {
		return
	}
	if s != nil {
		r.job.SetAttributes(
			attribute.Int("tenax.items.done", s.Done),
			attribute.Int("tenax.items.succeeded", s.Succeeded),
			attribute.Int("tenax.items.failed", s.Failed),
			attribute.Int("tenax.items.pending", s.Pending),
			attribute.Int("tenax.calls", s.Calls),
			attribute.Int64("gen_ai.usage.input_tokens", s.Usage.InputTokens),
			attribute.Int64("gen_ai.usage.output_tokens", s.Usage.OutputTokens),
		)
		if s.Stop != engine.StopNone {
			r.job.SetAttributes(attribute.String("tenax.stop", s.Stop.String()), attribute.String("tenax.stop_detail", r.message(s.StopDetail)))
		}
	}
	if err != nil {
		r.job.SetStatus(codes.Error, r.message(err.Error()))
	}
	r.job.End()
}
