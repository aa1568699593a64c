package web

import (
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/report"
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

// BenchmarkJobView reads a job of 100,000 records (a tenth failed, in
// three groups) the way status does (report.BuildReport) and the way the
// job page does (buildView: the same report plus sample items, the latest
// items and the charts' series, in the same pass). docs/benchmarks.md
// reports the ratio of the two.
func BenchmarkJobView(b *testing.B) {
	const n = 100_000
	st := &jsonl.Store{Home: b.TempDir()}
	ctx := context.Background()
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: n, State: store.StateFailed})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now().Add(-time.Hour)
	cost := 0.001
	for i := range n {
		rec := store.Record{Idx: i, Input: json.RawMessage(`{"word":"w"}`), Output: json.RawMessage(`{"ok":true}`), Attempts: 1,
			DurationMS: int64(50 + i%400), FinishedAt: start.Add(time.Duration(i) * 36 * time.Millisecond),
			Usage: task.Usage{InputTokens: 40, OutputTokens: 12}, CostUSD: &cost}
		if i%10 == 0 {
			rec.Output, rec.Class, rec.Error = json.RawMessage(`null`), classify.Class(1+i%3), "upstream said no "+[]string{"a", "b", "c"}[i%3]
		}
		if err := j.Append(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		b.Fatal(err)
	}
	id := j.Manifest().ID
	b.Run("report", func(b *testing.B) {
		for b.Loop() {
			r, err := st.OpenReadOnly(ctx, id)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := report.BuildReport(ctx, r, nil); err != nil {
				b.Fatal(err)
			}
			r.Close()
		}
	})
	// The charts' share alone: the series of the same records, in memory.
	var recs []store.Record
	r, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		b.Fatal(err)
	}
	r.Scan(ctx, func(rec store.Record) error { recs = append(recs, rec); return nil })
	r.Close()
	b.Run("series", func(b *testing.B) {
		for b.Loop() {
			var s series
			for i := range recs {
				s.add(recs[i])
			}
			s.charts(8, chartSpan{})
		}
	})
	b.Run("page", func(b *testing.B) {
		for b.Loop() {
			v, err := buildView(ctx, st, id, timeWindow{})
			if err != nil || len(v.Charts) == 0 {
				b.Fatal(err)
			}
		}
	})
}
