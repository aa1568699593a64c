package web

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// BenchmarkRunNoop is engine's BenchmarkRunNoop (b.N no-op items, the
// JSONL checkpoint) without and with what --ui adds: every event through a
// Monitor with its metrics and an open page subscribed. docs/benchmarks.md
// reports the ratio of the two.
func BenchmarkRunNoop(b *testing.B) {
	for _, watched := range []bool{false, true} {
		name := "plain"
		if watched {
			name = "monitor"
		}
		b.Run(name, func(b *testing.B) {
			st := &jsonl.Store{Home: b.TempDir()}
			j, err := st.Create(context.Background(), store.Manifest{Created: time.Now(), Items: b.N})
			if err != nil {
				b.Fatal(err)
			}
			defer j.Close()
			raw := json.RawMessage(`{"n":1}`)
			out := json.RawMessage(`"ok"`)
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
				return task.Result{Output: out}, nil
			})
			cfg := engine.Config{Concurrency: 8, Total: b.N}
			var m *Monitor
			if watched {
				m = NewMonitor(prometheus.NewRegistry())
				_, stop := m.Subscribe()
				defer stop()
				cfg.OnEvent = m.Observe
			}
			e := engine.New(cfg, noop, j)
			if m != nil {
				m.Start("bench", e.Stats, nil)
			}
			b.ReportAllocs()
			b.ResetTimer()
			s, err := e.Run(context.Background(), src)
			b.StopTimer()
			if err != nil || s.Succeeded != b.N {
				b.Fatalf("succeeded %d of %d: %v", s.Succeeded, b.N, err)
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
		})
	}
}
