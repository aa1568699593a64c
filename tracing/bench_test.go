package tracing_test

import (
	"context"
	"encoding/json"
	"io"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/tracing"
)

// BenchmarkEngine measures what tracing costs the engine per item: b.N
// items through a task that does nothing, with events listened to as the
// CLI does when tracing is off ("off": a hook that ignores them) and with
// a Run of the SDK batching into an exporter that drops the spans ("on").
// docs/tracing.md gives the ratio:
//
//	go test ./tracing -run '^$' -bench Engine -benchtime 200000x -count 3
func BenchmarkEngine(b *testing.B) {
	for _, mode := range []string{"off", "on"} {
		b.Run(mode, func(b *testing.B) {
			observe := func(engine.Event) {}
			var tp *sdktrace.TracerProvider
			var run *tracing.Run
			if mode == "on" {
				tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()))
				_, run = tracing.New(tp).StartJob(context.Background(), tracing.Job{ID: "bench", Provider: "mock", Model: "m"})
				observe = run.Observe
			}
			raw := json.RawMessage(`{"n":1}`)
			i := 0
			src := engine.SourceFunc(func() (task.Item, error) {
				if i == b.N {
					return task.Item{}, io.EOF
				}
				it := task.Item{Idx: i, Raw: raw}
				i++
				return it, nil
			})
			noop := task.Func(func(context.Context, task.Item) (task.Result, error) {
				return task.Result{Output: json.RawMessage(`"ok"`)}, nil
			})
			e := engine.New(engine.Config{Concurrency: 8, Total: b.N, OnEvent: observe}, noop, discard{})
			b.ReportAllocs()
			b.ResetTimer()
			s, err := e.Run(context.Background(), src)
			b.StopTimer()
			if err != nil || s.Succeeded != b.N {
				b.Fatalf("succeeded %d of %d: %v", s.Succeeded, b.N, err)
			}
			if run != nil {
				run.End(&s, nil)
				_ = tp.Shutdown(context.Background())
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
