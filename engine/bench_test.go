package engine_test

import (
	"context"
	"encoding/json"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// noopOutput is what the no-op task answers, once for all calls.
var noopOutput = json.RawMessage(`"ok"`)

// BenchmarkRunNoop measures the engine's own overhead: b.N items through a
// task that does nothing, checkpointed in the JSONL store with its default
// fsync policy. It reports items/s and the peak heap in use, sampled.
// docs/benchmarks.md runs it with -benchtime=1000000x.
func BenchmarkRunNoop(b *testing.B) {
	st := &jsonl.Store{Home: b.TempDir()}
	j, err := st.Create(context.Background(), store.Manifest{Created: time.Now(), Items: b.N})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
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
		return task.Result{Output: noopOutput}, nil
	})
	e := engine.New(engine.Config{Concurrency: 8, Total: b.N}, noop, j)

	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapInuse+ms.StackInuse)
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	s, err := e.Run(context.Background(), src)
	b.StopTimer()
	close(stop)
	<-sampled
	if err != nil || s.Succeeded != b.N {
		b.Fatalf("succeeded %d of %d: %v", s.Succeeded, b.N, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "items/s")
	b.ReportMetric(float64(peak)/(1<<20), "peak-MiB")
}
