package tracing_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/tracing"
)

// discard is a checkpoint that keeps nothing.
type discard struct{}

func (discard) Append(context.Context, ...store.Record) error { return nil }
func (discard) Flush(context.Context) error                   { return nil }

// source yields n items {"n": i}.
func source(n int) engine.Source {
	i := 0
	return engine.SourceFunc(func() (task.Item, error) {
		if i >= n {
			return task.Item{}, io.EOF
		}
		it := task.Item{Idx: i, ID: fmt.Sprintf("id-%d", i), Fields: map[string]any{"n": i}, Raw: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))}
		i++
		return it, nil
	})
}

var errReset = classify.WithClass(errors.New("connection reset"), classify.Retryable, "test")

// scripted answers item idx's calls with script[idx] in turn: "ok", "reset"
// (retryable), "fatal" (a 401 with the secret key in its message); each
// call takes a second.
func scripted(script map[int][]string) task.Task { return answering(script, time.Second) }

// instant is scripted with calls that take no time, for real clocks.
func instant(script map[int][]string) task.Task { return answering(script, 0) }

func answering(script map[int][]string, took time.Duration) task.Task {
	var mu sync.Mutex
	calls := map[int]int{}
	return task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
		mu.Lock()
		steps := script[it.Idx]
		step := steps[min(calls[it.Idx], len(steps)-1)]
		calls[it.Idx]++
		mu.Unlock()
		if took > 0 {
			time.Sleep(took)
		}
		switch step {
		case "reset":
			return task.Result{}, errReset
		case "fatal":
			return task.Result{}, classify.WithClass(errors.New("401 bad key sk-SECRET\nmore"), classify.Fatal, "test")
		}
		return task.Result{Output: json.RawMessage(`"done"`), Usage: task.Usage{InputTokens: 7, OutputTokens: 3}, FinishReason: "stop"}, nil
	})
}

// runTraced runs script through an engine whose events go to a Run of a
// Tracer over an in-memory exporter, and returns the spans it ended.
func runTraced(t *testing.T, script map[int][]string) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tr := tracing.New(tp)
	ctx, run := tr.StartJob(context.Background(), tracing.Job{
		ID: "job_1", Name: "demo", Provider: "mock", Model: "m-1",
		Redact: func(s string) string { return strings.ReplaceAll(s, "sk-SECRET", "[REDACTED]") },
	})
	cfg := engine.Config{
		Concurrency: 2,
		Retry:       retry.Policy{MaxAttempts: 5, Backoff: retry.Backoff{Base: 10 * time.Millisecond, Max: time.Second, Jitter: retry.JitterNone}},
		OnEvent:     run.Observe,
	}
	s, err := engine.New(cfg, scripted(script), discard{}).Run(ctx, source(len(script)))
	run.End(&s, err)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Ended()
}

// tree indexes spans by id and by parent.
type tree struct {
	byID     map[trace.SpanID]sdktrace.ReadOnlySpan
	children map[trace.SpanID][]sdktrace.ReadOnlySpan
	roots    []sdktrace.ReadOnlySpan
}

func treeOf(spans []sdktrace.ReadOnlySpan) tree {
	t := tree{byID: map[trace.SpanID]sdktrace.ReadOnlySpan{}, children: map[trace.SpanID][]sdktrace.ReadOnlySpan{}}
	for _, s := range spans {
		t.byID[s.SpanContext().SpanID()] = s
	}
	for _, s := range spans {
		if p := s.Parent(); p.IsValid() {
			t.children[p.SpanID()] = append(t.children[p.SpanID()], s)
		} else {
			t.roots = append(t.roots, s)
		}
	}
	for _, c := range t.children {
		sort.Slice(c, func(i, j int) bool { return c[i].StartTime().Before(c[j].StartTime()) })
	}
	return t
}

func attr(s sdktrace.ReadOnlySpan, key string) attribute.Value {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// shape draws an item's subtree as text: "item[attempt(call) attempt(call)]".
func shape(t tree, item sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	b.WriteString(item.Name() + "[")
	for i, a := range t.children[item.SpanContext().SpanID()] {
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(a.Name() + ":" + attr(a, "tenax.next").AsString() + "(")
		for _, c := range t.children[a.SpanContext().SpanID()] {
			b.WriteString(c.Name())
		}
		b.WriteString(")")
	}
	b.WriteString("]")
	return b.String()
}

func TestEachItemIsASpanTreeOfAttemptsAndCallsUnderTheJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := runTraced(t, map[int][]string{
			0: {"ok"},
			1: {"reset", "reset", "ok"},
			2: {"fatal"},
		})
		tr := treeOf(spans)
		if len(tr.roots) != 1 || tr.roots[0].Name() != "job" {
			t.Fatalf("roots %v, want the one job span", names(tr.roots))
		}
		job := tr.roots[0]
		items := tr.children[job.SpanContext().SpanID()]
		want := map[int64]string{
			0: "item[attempt:record(call)]",
			1: "item[attempt:retry(call) attempt:retry(call) attempt:record(call)]",
			2: "item[attempt:fail(call)]",
		}
		if len(items) != len(want) {
			t.Fatalf("the job span has %d children %v, want one item span per item", len(items), names(items))
		}
		for _, it := range items {
			idx := attr(it, "tenax.item.idx").AsInt64()
			if got := shape(tr, it); got != want[idx] {
				t.Errorf("item %d drawn as %s, want %s", idx, got, want[idx])
			}
			if it.SpanContext().TraceID() != job.SpanContext().TraceID() {
				t.Errorf("item %d is in trace %s, want the job's %s", idx, it.SpanContext().TraceID(), job.SpanContext().TraceID())
			}
		}
	})
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var n []string
	for _, s := range spans {
		n = append(n, s.Name())
	}
	return n
}

func TestSpansCarryRouteTokensClassAndOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		spans := runTraced(t, map[int][]string{0: {"reset", "ok"}, 1: {"fatal"}})
		tr := treeOf(spans)
		var items []sdktrace.ReadOnlySpan
		for _, s := range spans {
			if s.Name() == "item" {
				items = append(items, s)
			}
		}
		sort.Slice(items, func(i, j int) bool {
			return attr(items[i], "tenax.item.idx").AsInt64() < attr(items[j], "tenax.item.idx").AsInt64()
		})
		ok, failed := items[0], items[1]
		attempts := tr.children[ok.SpanContext().SpanID()]
		retried, called := attempts[0], tr.children[attempts[1].SpanContext().SpanID()][0]
		checks := []struct {
			what      string
			got, want any
		}{
			{"item 0 outcome", attr(ok, "tenax.outcome").AsString(), "succeeded"},
			{"item 0 attempts", attr(ok, "tenax.attempts").AsInt64(), int64(2)},
			{"item 0 output tokens", attr(ok, "gen_ai.usage.output_tokens").AsInt64(), int64(3)},
			{"item 0 id", attr(ok, "tenax.item.id").AsString(), "id-0"},
			{"retried attempt's class", attr(retried, "tenax.class").AsString(), "retryable"},
			{"retried attempt's status", retried.Status().Code, codes.Error},
			{"call's provider", attr(called, "gen_ai.provider.name").AsString(), "mock"},
			{"call's model", attr(called, "gen_ai.request.model").AsString(), "m-1"},
			{"call's input tokens", attr(called, "gen_ai.usage.input_tokens").AsInt64(), int64(7)},
			{"call's finish reason", fmt.Sprint(attr(called, "gen_ai.response.finish_reasons").AsStringSlice()), "[stop]"},
			{"call's duration", called.EndTime().Sub(called.StartTime()), time.Second},
			{"item 1 outcome", attr(failed, "tenax.outcome").AsString(), "failed"},
			{"item 1 class", attr(failed, "tenax.class").AsString(), "fatal"},
			{"item 1 status", failed.Status(), sdktrace.Status{Code: codes.Error, Description: "401 bad key [REDACTED]"}},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
			}
		}
		for _, s := range spans {
			if strings.Contains(s.Status().Description, "SECRET") {
				t.Errorf("span %s carries the secret in its status %q", s.Name(), s.Status().Description)
			}
		}
	})
}

// TestAWorkersItemIsAChildOfTheEnqueuersJobSpan follows the W3C context
// from the process that enqueued a job (Metadata in the River job) to a
// worker's Run (ItemParent) in another tracer provider.
func TestAWorkersItemIsAChildOfTheEnqueuersJobSpan(t *testing.T) {
	enqRec, workRec := tracetest.NewSpanRecorder(), tracetest.NewSpanRecorder()
	enqueuer := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(enqRec)))
	worker := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(workRec)))

	ctx, job := enqueuer.StartJob(context.Background(), tracing.Job{ID: "job_1"})
	meta := tracing.Metadata(ctx)
	job.End(nil, nil)

	run := worker.Follow(tracing.Job{ID: "job_1"})
	// River keeps keys of its own beside ours.
	var m map[string]any
	if err := json.Unmarshal(meta, &m); err != nil {
		t.Fatalf("metadata %s is not a JSON object: %v", meta, err)
	}
	m["river:other"] = 1
	withRiver, _ := json.Marshal(m)
	run.ItemParent(4, withRiver)
	now := time.Now()
	run.Observe(engine.Event{Kind: engine.ItemStarted, Time: now, Item: task.Item{Idx: 4}})
	run.Observe(engine.Event{Kind: engine.ItemFinished, Time: now.Add(time.Second), Item: task.Item{Idx: 4}, Record: store.Record{Idx: 4}})

	jobSpan := enqRec.Ended()[0]
	items := workRec.Ended()
	if len(items) != 1 {
		t.Fatalf("the worker ended %d spans, want its one item", len(items))
	}
	if p := items[0].Parent(); p.SpanID() != jobSpan.SpanContext().SpanID() || p.TraceID() != jobSpan.SpanContext().TraceID() || !p.IsRemote() {
		t.Errorf("the worker's item span has parent %s/%s (remote %v), want the enqueuer's job span %s/%s",
			p.TraceID(), p.SpanID(), p.IsRemote(), jobSpan.SpanContext().TraceID(), jobSpan.SpanContext().SpanID())
	}
}

func TestMetadataIsEmptyWithoutASpan(t *testing.T) {
	if m := tracing.Metadata(context.Background()); m != nil {
		t.Errorf("Metadata without a span = %s, want nil: nothing is stored when tracing is off", m)
	}
	_, run := tracing.Off().StartJob(context.Background(), tracing.Job{ID: "x"})
	ctx, _ := tracing.Off().StartJob(context.Background(), tracing.Job{ID: "x"})
	if m := tracing.Metadata(ctx); m != nil {
		t.Errorf("Metadata under an off Tracer's job = %s, want nil", m)
	}
	run.End(nil, nil)
}

func TestItemParentIgnoresMetadataWithoutTraceContext(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	run := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))).Follow(tracing.Job{ID: "j"})
	for _, meta := range []string{``, `not json`, `{}`, `{"traceparent":"garbage"}`, `[1]`} {
		run.ItemParent(0, []byte(meta))
		run.Observe(engine.Event{Kind: engine.ItemStarted, Time: time.Now(), Item: task.Item{Idx: 0}})
		run.Observe(engine.Event{Kind: engine.ItemPending, Time: time.Now(), Item: task.Item{Idx: 0}})
		spans := rec.Ended()
		if last := spans[len(spans)-1]; last.Parent().IsValid() {
			t.Errorf("metadata %q gave the item a parent %s, want a root span", meta, last.Parent().SpanID())
		}
	}
}

// TestCallSpansNameTheirRoutesProviderAndModel: with routes, each call
// span carries the route it was made on and that route's provider and
// model, not the task's.
func TestCallSpansNameTheirRoutesProviderAndModel(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	run := tracing.New(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))).Follow(tracing.Job{
		ID: "j", Provider: "openai", Model: "gpt-a",
		Routes: map[string]tracing.Route{"backup": {Provider: "anthropic", Model: "claude-b"}},
	})
	now := time.Now()
	run.Observe(engine.Event{Kind: engine.ItemStarted, Time: now, Item: task.Item{Idx: 0}})
	for _, route := range []string{"", "backup", "unlisted"} {
		run.Observe(engine.Event{Kind: engine.ItemCalled, Time: now, Item: task.Item{Idx: 0}, Route: route,
			Call: engine.Call{Number: 1, Queued: now, Started: now, Ended: now, Next: engine.StepRetry}})
	}
	var got []string
	for _, s := range rec.Ended() {
		if s.Name() == "call" {
			got = append(got, fmt.Sprintf("%s:%s/%s", attr(s, "tenax.route").AsString(), attr(s, "gen_ai.provider.name").AsString(), attr(s, "gen_ai.request.model").AsString()))
		}
	}
	want := ":openai/gpt-a backup:anthropic/claude-b unlisted:openai/gpt-a"
	if strings.Join(got, " ") != want {
		t.Errorf("call spans (route:provider/model) %v, want %s", got, want)
	}
}
