package job

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
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
	if p := s.Task.BatchProblem(); p != "" {
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
//
// Long: batch mode's wiring (client, ledger, runner, online tail); splitting job's wiring is left in issue 21.
func executeBatch(ctx context.Context, s *spec.Spec, b *built, st store.Store, j store.Job, cp engine.Checkpoint, dir string, cfg engine.Config, inPath string, format input.Format, outcomes store.Outcomes, opts Options, log *slog.Logger) (*Result, error) {
	lt, ok := b.task.(*llm.Task)
	if !ok {
		return nil, usage(fmt.Errorf("this job ran in batch mode, which needs an llm task; the spec's task is %q", s.Task.Type))
	}
	if p := s.Task.BatchProblem(); p != "" {
		return nil, usage(errors.New(p))
	}
	if s.Batch == (spec.Batch{}) {
		s.Batch = spec.DefaultBatch() // resumed with a spec that says nothing of batches
	}
	ledger, closeLedger, err := openLedger(j, dir)
	if err != nil {
		return nil, err
	}
	defer closeLedger()

	codec := lt.Batch()
	limits := batch.Limits{MaxRequests: s.Batch.MaxRequests, MaxBytes: s.Batch.MaxBytes}
	client := batchClient(codec, limits)
	routes, err := batchRoutes(b.routes, limits)
	if err != nil {
		return nil, err
	}

	m := j.Manifest()
	retrySome, err := failuresToRetry(ctx, j, opts)
	if err != nil {
		return nil, err
	}
	want := func(idx int) bool {
		switch outcomes.Get(idx) {
		case store.Succeeded:
			return false
		case store.Failed:
			if retrySome != nil {
				_, retry := retrySome[idx]
				return retry
			}
			return opts.RetryFailures
		}
		return true
	}
	skipped := 0
	for idx := range m.Items {
		if !want(idx) {
			skipped++
		}
	}
	cfg.Total, cfg.Skipped, cfg.Planned = m.Items, skipped, opts.Limit
	if b.cache != nil {
		cfg.Cache = b.cache
	}
	cfg.Validator = b.validator

	// A signal stops the engine given to the CLI: polling ends at once (the
	// batches keep running at the provider), the online tail drains.
	bctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu      sync.Mutex
		tail    *engine.Engine
		stopped string
	)
	userEvents := opts.OnEvent
	cfg.OnEvent = func(ev engine.Event) {
		logEvent(log, ev)
		if userEvents != nil {
			userEvents(ev)
		}
	}
	stopCfg := cfg
	stopCfg.OnEvent = func(ev engine.Event) {
		if ev.Kind != engine.Stopping {
			return
		}
		log.Warn("stopping", "reason", ev.Reason)
		mu.Lock()
		stopped = ev.Reason
		t := tail
		mu.Unlock()
		cancel(fmt.Errorf("%w: %s", batch.ErrStopped, ev.Reason))
		if t != nil {
			t.Stop(engine.StopSignal, ev.Reason)
		}
	}
	stopper := engine.New(stopCfg, b.task, cp)

	online := func(_ context.Context, items []task.Item, carried map[int]*engine.Carried, cp batch.Checkpoint) (engine.Summary, error) {
		tcfg := cfg
		tcfg.Skipped, tcfg.Planned = m.Items-len(items), 0
		tcfg.Carried = carried
		// The online tail runs over every route; the routes an item left
		// in its waves count as tried (engine.Carried.Tries).
		tcfg.Routes = b.routes
		e := engine.New(tcfg, b.task, cp)
		mu.Lock()
		tail = e
		why := stopped
		mu.Unlock()
		if why != "" {
			e.Stop(engine.StopSignal, why)
		}
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

	r := batch.New(batch.Config{
		Client: client, Codec: codec, Provider: codec.Provider(), Ledger: ledger,
		Routes: routes, Fallback: s.Fallbacks.Outage,
		Retry: cfg.Retry, Ops: cfg.Retry,
		Validator: b.validator, Heal: cfg.Heal, NoHeal: cfg.NoHeal, Hints: cfg.Hints, Cache: cfg.Cache,
		PollMin: s.Batch.PollInterval, PollMax: s.Batch.PollMax,
		OnlineTail: s.Batch.OnlineTail, Online: online, MaxEnqueuedTokens: s.Batch.MaxEnqueuedTokens,
		TripShare: s.Batch.TripShare, TripMinimum: s.Breaker.Threshold,
		OnTrip: cfg.OnTrip, Operator: opts.Operator,
		Limit: opts.Limit, Total: m.Items, Skipped: skipped,
		OnProgress: opts.OnBatchProgress, Logger: log,
	})
	log.Info("job started in batch mode", "spec", s.Path(), "input", inPath, "items", m.Items, "skipped", skipped, "dir", dir, "provider", codec.Provider())
	if opts.OnStart != nil {
		opts.OnStart(Started{JobID: m.ID, Dir: dir, Store: DescribeStore(st), Engine: stopper, Stats: r.Stats, Redact: s.Redact, Spec: s})
	}
	sum, runErr := r.Run(bctx, batch.Input{
		Open: func() (batch.Source, error) {
			rd, err := input.Open(inPath, format)
			if err != nil {
				return nil, err
			}
			return badLines{rd}, nil
		},
		Want:  want,
		Job:   cp,
		JobID: m.ID,
	})
	if errors.Is(runErr, batch.ErrStopped) {
		runErr = nil
	}
	res, err := conclude(ctx, st, j, dir, sum.Summary, runErr, opts, log)
	if res != nil {
		res.Batch = &BatchResult{Waves: sum.Waves, Batches: sum.Batches, Requests: sum.Requests, Repolled: sum.Repolled,
			CostUSD: sum.BatchCostUSD, OnlineCostUSD: sum.FullCostUSD}
	}
	return res, err
}

// batchClient is the batch API of codec's provider.
func batchClient(codec *llm.Batch, limits batch.Limits) batch.Client {
	if codec.Wire() == llm.ProviderAnthropic {
		base, key, hc := codec.Endpoint()
		return batch.NewAnthropic(codec.Provider(), base, key, hc, limits)
	}
	return batch.NewOpenAIWith(codec.Provider(), codec.OpenAIOptions(), limits)
}

// batchRoutes are a routed job's routes as waves use them, in tier order
// (the spec's order within a tier): each with its own batch API.
func batchRoutes(routes []engine.Route, limits batch.Limits) ([]batch.Route, error) {
	sorted := slices.Clone(routes)
	slices.SortStableFunc(sorted, func(a, b engine.Route) int { return cmp.Compare(a.Tier, b.Tier) })
	var out []batch.Route
	for _, rt := range sorted {
		lt, ok := rt.Task.(*llm.Task)
		if !ok {
			return nil, fmt.Errorf("route %s: batch mode needs an llm task", rt.Name)
		}
		codec := lt.Batch()
		out = append(out, batch.Route{Name: rt.Name, Provider: rt.Provider, Model: rt.Model, Client: batchClient(codec, limits), Codec: codec})
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
