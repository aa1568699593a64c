package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// hasLedger reports whether the job holds a batch ledger (a file in its
// directory, or notes in its store): the job ran in batch mode, and a
// resume continues in it.
func hasLedger(ctx context.Context, j store.Job, dir string) (bool, error) {
	if dir != "" {
		_, err := os.Stat(filepath.Join(dir, batch.LedgerFile))
		return err == nil, nil
	}
	notes, ok := store.Notes(j)
	if !ok {
		return false, nil
	}
	entries, err := notes.Notes(ctx, batch.NoteKind)
	return len(entries) > 0, err
}

// openLedger opens the job's batch ledger: a file in its directory, or
// notes in its store (PostgreSQL). close releases it.
func openLedger(j store.Job, dir string) (l batch.Ledger, close func() error, err error) {
	if dir != "" {
		fl, err := batch.OpenFileLedger(dir)
		if err != nil {
			return nil, nil, err
		}
		return fl, fl.Close, nil
	}
	if notes, ok := store.Notes(j); ok {
		return batch.NewNoteLedger(notes), func() error { return nil }, nil
	}
	return nil, nil, usage(errors.New("batch mode keeps its batch ids in the job directory or the job's database, and this store has neither"))
}

// useBatchMode switches a spec to batch mode (`tenax run --batch`), with
// the batch section's defaults when the spec writes none.
func useBatchMode(s *spec.Spec) error {
	if p := s.BatchProblem(); p != "" {
		return fmt.Errorf("--batch: %s", p)
	}
	s.Task.Mode = "batch"
	if s.Batch == (spec.Batch{}) {
		s.Batch = spec.DefaultBatch()
	}
	return nil
}

// executeBatch runs the job's items in waves of provider batches (package
// batch); small later waves and nothing else go through the engine.
func (x *execution) executeBatch(ctx context.Context, cfg engine.Config) (*Result, error) {
	codec, err := x.batchCodec()
	if err != nil {
		return nil, err
	}
	ledger, closeLedger, err := openLedger(x.j, x.dir)
	if err != nil {
		return nil, err
	}
	defer closeLedger()
	limits := batch.Limits{MaxRequests: x.s.Batch.MaxRequests, MaxBytes: x.s.Batch.MaxBytes}
	routes, err := batchRoutes(x.b.routes, limits)
	if err != nil {
		return nil, err
	}
	want, skipped, err := x.plan(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	// A signal stops the engine given to the CLI: polling ends at once (the
	// batches keep running at the provider), the online tail drains.
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stop := &batchStop{cancel: cancel, log: x.log}
	stopCfg := cfg
	stopCfg.OnEvent = stop.onEvent
	stopper := engine.New(stopCfg, x.b.task, x.cp)

	client, err := batchClient(ctx, codec, limits)
	if err != nil {
		return nil, err
	}
	s := x.s
	r := batch.New(batch.Config{
		Client: client, Codec: codec, Provider: codec.Provider(), Ledger: ledger,
		Routes: routes, Routing: cfg.Routing, Fallbacks: cfg.Fallbacks,
		Retry: cfg.Retry, Ops: cfg.Retry,
		Validator: x.b.validator, Heal: cfg.Heal, NoHeal: cfg.NoHeal, Hints: cfg.Hints, Cache: cfg.Cache,
		PollMin: s.Batch.PollInterval, PollMax: s.Batch.PollMax,
		OnlineTail: s.Batch.OnlineTail, Online: x.onlineTail(ctx, cfg, stop), MaxEnqueuedTokens: s.Batch.MaxEnqueuedTokens,
		TripShare: s.Batch.TripShare, TripMinimum: s.Breaker.Threshold,
		OnTrip: cfg.OnTrip, Operator: x.opts.Operator,
		Limit: x.opts.Limit, Total: x.m.Items, Skipped: skipped,
		OnProgress: x.opts.OnBatchProgress, Logger: x.log,
	})
	x.log.Info("job started in batch mode", "spec", s.Path(), "input", x.inPath, "items", x.m.Items, "skipped", skipped, "dir", x.dir, "provider", codec.Provider())
	if x.opts.OnStart != nil {
		x.opts.OnStart(Started{JobID: x.m.ID, Dir: x.dir, Store: DescribeStore(x.st), Engine: stopper, Stats: r.Stats, Redact: s.Redact, Spec: s})
	}
	// tenax stop reaches the waves and the tail through the stopper.
	stopWatch := x.watchControl(ctx, stopper, false)
	defer stopWatch()
	sum, runErr := r.Run(bctx, batch.Input{
		Open: func() (batch.Source, error) {
			rd, err := input.OpenScanned(x.inPath, x.format, x.scanned)
			if err != nil {
				return nil, err
			}
			return badLines{rd}, nil
		},
		Want:  want,
		Job:   x.cp,
		JobID: x.m.ID,
	})
	if errors.Is(runErr, batch.ErrStopped) {
		runErr = nil
	}
	res, err := x.conclude(ctx, sum.Summary, runErr)
	if res != nil {
		res.Batch = &BatchResult{Waves: sum.Waves, Batches: sum.Batches, Requests: sum.Requests, Repolled: sum.Repolled,
			CostUSD: sum.BatchCostUSD, OnlineCostUSD: sum.FullCostUSD}
	}
	return res, err
}

// batchCodec is the batch codec of the job's llm task, once the spec is
// checked for batch mode; a spec resumed in batch mode that says nothing
// of batches takes the batch section's defaults.
func (x *execution) batchCodec() (*llm.Batch, error) {
	lt, ok := x.b.task.(*llm.Task)
	if !ok {
		return nil, usage(fmt.Errorf("this job ran in batch mode, which needs an llm task; the spec's task is %q", x.s.Task.Type))
	}
	if p := x.s.BatchProblem(); p != "" {
		return nil, usage(errors.New(p))
	}
	if x.s.Batch == (spec.Batch{}) {
		x.s.Batch = spec.DefaultBatch()
	}
	return lt.Batch(), nil
}

// batchStop carries a stop of the engine the CLI holds (a signal, an
// operator's abort) to the waves, whose polling it cancels, and to the
// online tail, which it drains, whether the tail runs yet or not.
type batchStop struct {
	cancel context.CancelCauseFunc
	log    *slog.Logger

	mu      sync.Mutex
	tail    *engine.Engine
	stopped string // the stop's reason, once there is one
}

// onEvent is the CLI's engine's OnEvent: its Stopping stops the run.
func (b *batchStop) onEvent(ev engine.Event) {
	if ev.Kind != engine.Stopping {
		return
	}
	b.log.Warn("stopping", "reason", ev.Reason)
	b.mu.Lock()
	b.stopped = ev.Reason
	t := b.tail
	b.mu.Unlock()
	b.cancel(fmt.Errorf("%w: %s", batch.ErrStopped, ev.Reason))
	if t != nil {
		t.Stop(engine.StopSignal, ev.Reason)
	}
}

// startTail makes e the online tail a stop reaches, stopping it at once
// when the run is already stopping.
func (b *batchStop) startTail(e *engine.Engine) {
	b.mu.Lock()
	b.tail = e
	why := b.stopped
	b.mu.Unlock()
	if why != "" {
		e.Stop(engine.StopSignal, why)
	}
}

// onlineTail runs a small later wave's items through the engine, under
// the run's configuration cfg.
func (x *execution) onlineTail(ctx context.Context, cfg engine.Config, stop *batchStop) batch.Online {
	return func(_ context.Context, items []task.Item, carried map[int]*engine.Carried, cp batch.Checkpoint) (engine.Summary, error) {
		tcfg := cfg
		tcfg.Skipped, tcfg.Planned = x.m.Items-len(items), 0
		tcfg.Carried = carried
		// The online tail runs over every route; the routes an item left
		// in its waves count as tried (engine.Carried.Tries).
		tcfg.Routes = x.b.routes
		e := engine.New(tcfg, x.b.task, cp)
		stop.startTail(e)
		i := 0
		// The caller's context, not the batch one: the first signal
		// drains the tail, the second cancels it.
		return e.Run(ctx, engine.SourceFunc(func() (task.Item, error) {
			if i == len(items) {
				return task.Item{}, io.EOF
			}
			i++
			return items[i-1], nil
		}))
	}
}

// batchClient is the batch API of codec's provider.
func batchClient(ctx context.Context, codec *llm.Batch, limits batch.Limits) (batch.Client, error) {
	base, key, hc := codec.Endpoint()
	switch codec.Wire() {
	case llm.ProviderAnthropic:
		return batch.NewAnthropic(codec.Provider(), base, key, hc, limits), nil
	case llm.ProviderGemini:
		return batch.NewGemini(ctx, codec.Provider(), codec.Model(), base, key, hc, limits)
	}
	return batch.NewOpenAIWith(codec.Provider(), codec.OpenAIOptions(), limits), nil
}

// batchRoutes are a routed job's routes as waves use them, in the spec's
// order (engine.Routes chooses by tier and strategy, as online): each with
// its own batch API.
func batchRoutes(routes []engine.Route, limits batch.Limits) ([]batch.Route, error) {
	var out []batch.Route
	for _, rt := range routes {
		lt, ok := rt.Task.(*llm.Task)
		if !ok {
			return nil, fmt.Errorf("route %s: batch mode needs an llm task", rt.Name)
		}
		codec := lt.Batch()
		client, err := batchClient(context.Background(), codec, limits)
		if err != nil {
			return nil, fmt.Errorf("route %s: %w", rt.Name, err)
		}
		out = append(out, batch.Route{Route: rt, Client: client, Codec: codec})
	}
	return out, nil
}

// BatchResult is what a batch mode run did.
type BatchResult struct {
	// Waves, Batches and Requests count this run's waves, its batches
	// (submitted or re-polled) and the requests it submitted; Repolled
	// the batches of an earlier run it polled again instead.
	Waves, Batches, Requests, Repolled int
	// CostUSD is what the batches' answers cost; OnlineCostUSD what they
	// would have cost online.
	CostUSD, OnlineCostUSD float64
}

// badLines is the input as batch mode reads it: an unreadable line is an
// *engine.BadItem, as the engine's source gives it.
type badLines struct{ r *input.Reader }

func (b badLines) Next() (task.Item, error) {
	it, err := b.r.Next()
	var le *input.LineError
	if errors.As(err, &le) {
		return task.Item{}, &engine.BadItem{Item: it, Err: le}
	}
	return it, err
}

func (b badLines) Close() error { return b.r.Close() }
