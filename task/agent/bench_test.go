package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// timedModel answers two steps of calls — one call whose arguments fail
// the schema, one that runs — then the final answer, and notes when each
// answer left it, per item: the moment its body would have been read.
type timedModel struct {
	mu       sync.Mutex
	answered map[int]time.Time
}

func (m *timedModel) Next(_ context.Context, item task.Item, _ []agent.Def, steps []agent.Step) (agent.Reply, error) {
	res := task.Result{Usage: task.Usage{InputTokens: 10, OutputTokens: 1}, FinishReason: "tool_calls"}
	rep := agent.Reply{Text: "step", Result: res, Calls: []agent.Call{badCall("bad"), okCall("ok")}}
	if len(steps) == 2 {
		rep = agent.Reply{Result: task.Result{Output: json.RawMessage(`"done"`), FinishReason: "stop"}}
	}
	m.mu.Lock()
	m.answered[item.Idx] = time.Now()
	m.mu.Unlock()
	return rep, nil
}

// windowLog times each answer's append in a step log: from the moment
// the model answered (timedModel) to the append's start (what ran before
// the write) and to its return (the answer durable).
type windowLog struct {
	agent.StepLog
	m              *timedModel
	mu             sync.Mutex
	before, window []time.Duration
}

func (w *windowLog) AppendSteps(ctx context.Context, idx int, entries ...[]byte) error {
	start := time.Now()
	err := w.StepLog.AppendSteps(ctx, idx, entries...)
	if !bytes.HasPrefix(entries[0], []byte(`{"kind":"answer"`)) {
		return err
	}
	done := time.Now()
	w.m.mu.Lock()
	answered := w.m.answered[idx]
	w.m.mu.Unlock()
	w.mu.Lock()
	w.before = append(w.before, start.Sub(answered))
	w.window = append(w.window, done.Sub(answered))
	w.mu.Unlock()
	return err
}

// BenchmarkAnswerToDurable measures the window in which a kill -9 pays
// for a model answer twice: from the answer's arrival to its fsync in
// steps.jsonl (the JSONL store, on this machine's disk), 16 items at once
// as examples/agent-kills.yaml runs them, each of three answers whose
// calls' results are appended as they come. It reports the window's
// median and 99th percentile, and the median of the part before the
// write begins (judging the calls, before this was the order; now
// nothing). docs/agents.md and docs/benchmarks.md hold the figures.
func BenchmarkAnswerToDurable(b *testing.B) {
	s := &jsonl.Store{Home: b.TempDir()}
	j, err := s.Create(b.Context(), store.Manifest{Items: b.N})
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	sl, ok := store.StepsOf(j)
	if !ok {
		b.Fatal("the JSONL job keeps no steps")
	}
	echo := func(context.Context, task.Item) (task.Result, error) {
		return task.Result{Output: json.RawMessage(`"echo hi"`)}, nil
	}
	tool, err := agent.NewTool(agent.Def{Name: "echo", Parameters: echoSchema}, task.Func(echo), true)
	if err != nil {
		b.Fatal(err)
	}
	m := &timedModel{answered: map[int]time.Time{}}
	a, err := agent.New(agent.Config{Model: m, Tools: []*agent.Tool{tool}})
	if err != nil {
		b.Fatal(err)
	}
	log := &windowLog{StepLog: sl, m: m}
	d := a.Durable(log, nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	b.ResetTimer()
	for range 16 {
		wg.Go(func() {
			for idx := int(next.Add(1)) - 1; idx < b.N; idx = int(next.Add(1)) - 1 {
				if _, err := d.Run(b.Context(), task.Item{Idx: idx}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	slices.Sort(log.window)
	slices.Sort(log.before)
	at := func(ds []time.Duration, q float64) float64 {
		return float64(ds[int(q*float64(len(ds)-1))].Microseconds())
	}
	b.ReportMetric(at(log.window, 0.5), "window-p50-µs")
	b.ReportMetric(at(log.window, 0.99), "window-p99-µs")
	b.ReportMetric(at(log.before, 0.5), "before-write-p50-µs")
}
