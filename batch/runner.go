package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// Codec is the task as waves use it: the body of an item's request and the
// result of an answer, exactly as an online call would send and read them.
// *llm.Batch implements it.
type Codec interface {
	// Body returns the request body for item (its Feedback included).
	Body(item task.Item) (json.RawMessage, error)
	// Result reads a successful answer to item's request.
	Result(item task.Item, body json.RawMessage) (task.Result, error)
	// Cached returns the result the response cache holds for item.
	Cached(item task.Item) (task.Result, bool)
}

// Estimator is a Codec that estimates the prompt tokens of an item's
// request, for Config.MaxEnqueuedTokens.
type Estimator interface {
	EstimateTokens(item task.Item) int
}

// Source yields a job's items in idx order; io.EOF ends it.
type Source interface {
	Next() (task.Item, error)
}

// Online runs items through the normal online path (the engine), writing
// their records to cp. The items carry their heal feedback, and carried
// (engine.Config.Carried) their State from the waves before: calls, heal
// trackers, retry streaks, usage and cost, which the engine continues into
// their one record. It returns how the run ended.
type Online func(ctx context.Context, items []task.Item, carried map[int]*engine.Carried, cp Checkpoint) (engine.Summary, error)

// Checkpoint is where a run writes its records: all it asks of a
// store.Job, and what engine.New takes for the online tail.
type Checkpoint interface {
	// Append writes records; a record appended is the item's outcome.
	Append(ctx context.Context, recs ...store.Record) error
	// Flush makes the records appended so far durable.
	Flush(ctx context.Context) error
}

// Defaults of Config's zero fields.
const (
	DefaultDiscount    = 0.5
	DefaultPollMin     = 5 * time.Second
	DefaultPollMax     = time.Minute
	DefaultTripShare   = 0.5
	DefaultTripMinimum = 5
)

// Config is what waves need besides the items.
type Config struct {
	// Client is the provider's batch API.
	Client Client
	// Codec builds requests and reads answers.
	Codec Codec
	// Provider names the provider in the ledger.
	Provider string
	// Ledger makes waves and batch ids durable.
	Ledger Ledger
	// Routes, when set, are a routed job's deployments, each with its
	// own batch API (Client, Codec and Provider are then not used): an
	// item's requests go where engine.Routes sends it, and records name
	// the route that produced them (route.go).
	Routes []Route
	// Routing and Fallbacks are the spec's, read as online: Routing
	// chooses among a tier's routes, Fallbacks move an item after an
	// answer (engine.Routes.After), to the route its next wave goes to.
	Routing   engine.Routing
	Fallbacks engine.Fallbacks

	// Retry is the items' retry policy, read as online: MaxAttempts
	// bounds the consecutive waves in which an item failed retryably or
	// expired, the next wave waits out the retry delay (Backoff, or a
	// hint capped by MaxHint), MaxElapsed counts from the item's first
	// wave, and Classifier classifies the requests' errors.
	Retry retry.Policy
	// Ops is the retry policy of the API operations themselves (upload,
	// create, status, cancel, results).
	Ops retry.Policy

	// Validator checks each output; nil accepts all.
	Validator engine.Validator
	// Heal, NoHeal and Hints are the heal loop's, as the engine takes them.
	Heal   heal.Budget
	NoHeal bool
	Hints  []heal.Hint
	// Cache, when set, is told about cached outputs that proved invalid,
	// and remembers healed ones (engine.ResponseCache).
	Cache engine.ResponseCache

	// Discount is the batch price as a fraction of the online price;
	// 0 means DefaultDiscount (both providers charge half).
	Discount float64
	// PollMin and PollMax bound the wait between two polls; it doubles
	// from PollMin while batches run.
	PollMin, PollMax time.Duration

	// MaxEnqueuedTokens caps the estimated tokens (Estimator) of the
	// requests a wave has in its batches: the provider's queue limit per
	// model. Past it, items wait for the next wave without a request and
	// without spending an attempt; a wave always takes at least one. 0
	// does not count.
	MaxEnqueuedTokens int
	// OnlineTail: a wave after the first of a run holding at most this
	// many items runs them online through Online instead. 0 never does.
	OnlineTail int
	// Online runs the online tail.
	Online Online

	// TripShare and TripMinimum: a wave in which at least TripMinimum
	// requests, and at least TripShare of its requests, errored with one
	// fingerprint trips the breaker before the next wave.
	TripShare   float64
	TripMinimum int
	// OnTrip is the breaker's action: TripPrompt asks Operator, anything
	// else stops the run. The tripped items stay pending either way
	// unless the operator says to continue.
	OnTrip   engine.TripAction
	Operator engine.Operator

	// Limit caps the fresh items a run takes (0 = all).
	Limit int
	// Total and Skipped are the job's item count and the items a resume
	// skips, for progress.
	Total, Skipped int

	// OnProgress receives the state of the wave's batches at each poll.
	OnProgress func(Progress)
	// Logger receives log lines; nil discards them.
	Logger *slog.Logger
}

// Progress is the state of a wave's batches at one poll.
type Progress struct {
	Wave    int
	Batches []Status
	// Counts sums the batches' counts.
	Counts Counts
	// ExpiresIn is the time left before the first batch's window closes.
	ExpiresIn time.Duration
}

// String is the progress line: "wave 2: 3 batches, 340/1000 requests
// done (328 succeeded, 12 errored), 23h59m left before the first window
// closes".
func (p Progress) String() string {
	c := p.Counts
	s := fmt.Sprintf("wave %d: %d batch(es), %d/%d requests done (%d succeeded, %d errored", p.Wave, len(p.Batches), c.Done(), c.Total, c.Succeeded, c.Errored)
	if c.Expired > 0 {
		s += fmt.Sprintf(", %d expired", c.Expired)
	}
	if c.Canceled > 0 {
		s += fmt.Sprintf(", %d canceled", c.Canceled)
	}
	s += ")"
	if p.ExpiresIn > 0 {
		s += fmt.Sprintf(", %s left before the first window closes", p.ExpiresIn.Round(time.Minute))
	}
	return s
}

// Summary is how a batch run ended.
type Summary struct {
	engine.Summary
	// Waves counts the waves this run worked on (the online tail
	// included); Batches the batches it submitted or re-polled; Requests
	// the requests it submitted.
	Waves, Batches, Requests int
	// Deferred counts the times an item waited for the next wave because
	// its wave's batches held MaxEnqueuedTokens already.
	Deferred int
	// Repolled counts the batches of an earlier, interrupted run that
	// this run polled again instead of submitting their requests anew.
	Repolled int
	// BatchCostUSD is what the batch answers cost at the batch price,
	// FullCostUSD what they would have cost online: the difference is
	// what batch mode saved. Summary.CostUSD adds the online tail's cost.
	BatchCostUSD, FullCostUSD float64
}

// Runner runs items in waves of provider batches.
type Runner struct {
	cfg   Config
	rules engine.Rules
	log   *slog.Logger
	job   Checkpoint
	// routes are Config.Routes, or the one unnamed route of Client and
	// Codec.
	routes []Route

	// rs chooses each item's route and keeps the routes' breakers and
	// counters: the engine's rule, without its gates.
	rs *engine.Routes

	// tally counts the run's records, calls, retries, re-asks, usage,
	// cost and trips, as the engine's does (the online tail's added).
	tally engine.Tally

	mu sync.Mutex
	// stats are the run's plan and its requests in batches; tally
	// fills in the rest.
	stats engine.Stats
	sum   Summary
}

// New returns a Runner for cfg.
func New(cfg Config) *Runner {
	if cfg.Discount <= 0 {
		cfg.Discount = DefaultDiscount
	}
	if cfg.PollMin <= 0 {
		cfg.PollMin = DefaultPollMin
	}
	if cfg.PollMax < cfg.PollMin {
		cfg.PollMax = max(DefaultPollMax, cfg.PollMin)
	}
	if cfg.TripShare <= 0 {
		cfg.TripShare = DefaultTripShare
	}
	if cfg.TripMinimum <= 0 {
		cfg.TripMinimum = DefaultTripMinimum
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Runner{cfg: cfg, log: log, rules: engine.Rules{Heal: cfg.Heal, NoHeal: cfg.NoHeal, Hints: cfg.Hints}, routes: cfg.Routes}
	if len(r.routes) == 0 {
		r.routes = []Route{{Route: engine.Route{Provider: cfg.Provider}, Client: cfg.Client, Codec: cfg.Codec}}
	}
	er := make([]engine.Route, len(r.routes))
	for i, rt := range r.routes {
		er[i] = rt.Route
	}
	r.rs = engine.NewRoutes(er, engine.RouteRules{Routing: cfg.Routing, Fallbacks: cfg.Fallbacks, Retry: cfg.Retry})
	r.stats.Total, r.stats.Skipped = cfg.Total, cfg.Skipped
	r.stats.Planned = max(cfg.Total-cfg.Skipped, 0)
	if cfg.Limit > 0 {
		r.stats.Planned = min(r.stats.Planned, cfg.Limit)
	}
	return r
}

// Stats returns the run's counters, as the engine's would read, for a
// progress line: InFlight counts requests in batches.
func (r *Runner) Stats() engine.Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.statsLocked()
}

// statsLocked is Stats with r.mu held: the routes' counters and breakers
// joined to the run's.
func (r *Runner) statsLocked() engine.Stats {
	s := r.stats
	r.tally.Fill(&s)
	s.Routes = r.rs.Stats() // nil for the implicit route
	return s
}

// Input is what a run works on.
type Input struct {
	// Open opens the job's input from its first item.
	Open func() (Source, error)
	// Want reports whether idx is to run (no record, or a failed one with
	// --retry-failures).
	Want func(idx int) bool
	// Job receives the records.
	Job Checkpoint
	// JobID names the job in the keys of its batches, by which a resume
	// finds a batch whose id a crash kept from the ledger: it must be
	// unique among the jobs that share the provider's account.
	JobID string
}

// flight is an item in a wave: the per-item core's state (its calls,
// re-asks, retry streak and heal tracker), which every answer moves
// through engine.Rules.Decide as the engine's calls do, and what batch
// keeps beside it.
type flight struct {
	engine.State
	Idx       int
	item      task.Item
	Feedback  *task.Feedback
	LastError string
	// RetryAt is when the item's retry delay ends (zero for none).
	RetryAt time.Time
	// carry says the item goes into the next wave without a request in
	// this one (a cached output that proved invalid).
	carry bool
	// ir is the item's routing: the route its requests go to, the
	// routes it left with their errors, what its fallbacks want.
	ir engine.ItemRoute
	// RetrySince is when the item's retry streak's max_elapsed clock
	// started, when not at Started: a fresh streak on another route.
	RetrySince time.Time
}

// route is the index of the route f's requests go to.
func (f *flight) route() int { return max(f.ir.Index(), 0) }

// newFlight is item idx's state at its first wave.
func (r *Runner) newFlight(idx int) *flight {
	now := time.Now()
	return &flight{State: engine.State{Retrier: r.cfg.Retry.Continue(now, 0), Started: now.UTC()}, Idx: idx}
}

// ledger is f's state as the ledger keeps it.
func (f *flight) ledger(routes []Route) (ItemState, error) {
	route := ""
	if i := f.ir.Index(); i >= 0 {
		route = routes[i].Name
	}
	st := ItemState{
		Idx: f.Idx, Calls: f.Calls, Heals: f.Heals, Generations: f.Generations, Failures: f.Retrier.Consecutive(),
		Usage: f.Usage, CostUSD: f.CostUSD, CostKnown: f.CostKnown, Started: f.Started,
		FinishReason: f.FinishReason, RateLimited: f.RateLimited,
		Feedback: f.Feedback, LastOutput: f.LastOutput, LastError: f.LastError, RetryAt: f.RetryAt,
		Route: route, Tries: f.ir.Tries(), RetrySince: f.RetrySince,
	}
	if f.Tracker != nil {
		b, err := json.Marshal(f.Tracker)
		if err != nil {
			return st, fmt.Errorf("batch: item %d's heal tracker: %w", f.Idx, err)
		}
		st.Tracker = b
	}
	return st, nil
}

// waveRun is one wave being worked on.
type waveRun struct {
	num   int
	fresh bool
	items map[int]*flight
	known []Entry // submitted batches from the ledger (resume)
	// dangling are intents without a submitted entry (resume): batches
	// that may exist at the provider without their id in the ledger.
	dangling []Entry
	// chunks counts the wave's intents in the ledger, so that a resume's
	// new submissions get keys of their own.
	chunks int
	// ledgered says the wave's entry is in the ledger already.
	ledgered bool
	batches  []waveBatch
	custom   map[string]*flight // custom id → item, for the join
	// cost and full are what the wave's answers cost at the batch price
	// and would have cost online.
	cost, full float64
}

// waveBatch is one batch of a wave and the route it went to: two routes'
// batch ids may be the same.
type waveBatch struct {
	id    string
	route int
}

// ErrStopped is the cause of a run stopped by its context.
var ErrStopped = errors.New("batch: stopped")

// Run brings the wanted items to their outcome in waves, or stops with them
// pending. It resumes an open wave from the ledger first.
func (r *Runner) Run(ctx context.Context, in Input) (Summary, error) {
	if in.JobID == "" {
		return Summary{}, errors.New("batch: Input.JobID is empty: the keys of the job's batches need it")
	}
	start := time.Now()
	r.job = in.Job
	r.mu.Lock()
	r.stats.Started = start
	r.mu.Unlock()
	entries, err := r.cfg.Ledger.Entries(ctx)
	if err != nil {
		return r.summary(start), err
	}
	w, last, err := r.openWave(entries, in)
	if err != nil {
		return r.summary(start), err
	}
	if w == nil {
		w = &waveRun{num: last + 1, fresh: true}
	}
	first := true
	for w != nil {
		next, stop, err := r.runWave(ctx, w, in, first)
		first = false
		if err != nil || stop {
			return r.summary(start), err
		}
		w = next
	}
	return r.summary(start), nil
}

func (r *Runner) summary(start time.Time) Summary {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.sum
	s.Stats = r.statsLocked()
	s.Elapsed = time.Since(start)
	return s
}

// stop records why the run stops short.
func (r *Runner) stop(reason engine.StopReason, detail string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sum.Stop == engine.StopNone {
		r.sum.Stop, r.sum.StopDetail = reason, detail
	}
}

// openWave finds the ledger's last wave and, when it is not closed,
// rebuilds it for a resume: its items' states and its known batches. It
// returns the last wave's number either way.
func (r *Runner) openWave(entries []Entry, in Input) (*waveRun, int, error) {
	var w *waveRun
	last := 0
	for _, e := range entries {
		last = max(last, e.Wave)
		switch e.Kind {
		case KindWave:
			w = &waveRun{num: e.Wave, fresh: e.Fresh, items: map[int]*flight{}, ledgered: true}
			for _, st := range e.Items {
				if in.Want(st.Idx) {
					f, err := r.restore(st)
					if err != nil {
						return nil, 0, err
					}
					w.items[st.Idx] = f
				}
			}
		case KindIntent:
			if w != nil && e.Wave == w.num {
				w.dangling = append(w.dangling, e)
				w.chunks++
			}
		case KindSubmitted:
			if w != nil && e.Wave == w.num {
				w.known = append(w.known, e)
				w.dangling = slices.DeleteFunc(w.dangling, func(i Entry) bool { return e.Key != "" && i.Key == e.Key })
			}
		case KindClosed:
			if w != nil && e.Wave == w.num {
				w = nil
			}
		}
	}
	return w, last, nil
}

// restore rebuilds an item's state from the ledger: its Retrier continues
// the streak, and measures retry.max_elapsed from the item's first wave.
func (r *Runner) restore(st ItemState) (*flight, error) {
	f := &flight{
		State: engine.State{
			Retrier: r.cfg.Retry.Continue(st.Started, st.Failures),
			Calls:   st.Calls, Generations: st.Generations, Heals: st.Heals,
			LastOutput: st.LastOutput, RateLimited: st.RateLimited, Started: st.Started,
			Spent: engine.Spent{Usage: st.Usage, CostUSD: st.CostUSD, CostKnown: st.CostKnown, FinishReason: st.FinishReason},
		},
		Idx:      st.Idx,
		Feedback: st.Feedback, LastError: st.LastError, RetryAt: st.RetryAt,
		ir: r.rs.Start(st.tries()), RetrySince: st.RetrySince,
	}
	if st.Route != "" || !r.routed() {
		r.rs.Put(&f.ir, r.routeAt(st.Route))
	}
	if !st.RetrySince.IsZero() {
		f.Retrier = r.cfg.Retry.Continue(st.RetrySince, st.Failures)
	}
	if len(st.Tracker) > 0 {
		f.Tracker = heal.NewTracker(r.cfg.Heal)
		if err := json.Unmarshal(st.Tracker, f.Tracker); err != nil {
			return nil, fmt.Errorf("batch: ledger: item %d: %w", st.Idx, err)
		}
	}
	return f, nil
}

// runWave runs one wave: it writes the wave to the ledger, submits what
// is not yet submitted, polls every batch to its end, applies the results,
// and returns the next wave (nil when nothing is carried). stop is true
// when the run stops short (breaker, operator, context).
func (r *Runner) runWave(ctx context.Context, w *waveRun, in Input, firstOfRun bool) (*waveRun, bool, error) {
	if w.items == nil {
		w.items = map[int]*flight{}
	}
	if err := r.waitRetries(ctx, w); err != nil {
		r.stop(engine.StopSignal, "interrupted while waiting out retry delays: a resume sends the wave")
		return nil, true, nil
	}
	if !firstOfRun && r.cfg.OnlineTail > 0 && r.cfg.Online != nil && len(w.items) <= r.cfg.OnlineTail && !w.fresh && len(w.known) == 0 {
		stop, err := r.runOnline(ctx, w, in)
		return nil, stop, err
	}
	r.mu.Lock()
	r.sum.Waves++
	r.mu.Unlock()
	if !w.ledgered {
		e, err := r.waveEntry(w)
		if err == nil {
			err = r.cfg.Ledger.Append(ctx, e)
		}
		if err != nil {
			return nil, true, err
		}
		w.ledgered = true
	}
	if err := r.submit(ctx, w, in); err != nil || ctx.Err() != nil {
		if ctx.Err() != nil {
			r.stop(engine.StopSignal, "interrupted while submitting: the submitted batches keep running; a resume polls them and submits the rest")
			return nil, true, nil
		}
		return nil, true, err
	}
	statuses, err := r.poll(ctx, w)
	if err != nil {
		if ctx.Err() != nil {
			r.stop(engine.StopSignal, "interrupted while polling: the batches keep running; a resume polls them")
			return nil, true, nil
		}
		return nil, true, err
	}
	carried, stop, err := r.collect(ctx, w, in, statuses)
	if err != nil || stop {
		return nil, true, err
	}
	if len(carried) == 0 {
		return nil, false, r.close(ctx, w, 0)
	}
	// The next wave is written before this one closes: a crash between
	// the two re-applies this wave's results, which gives the same
	// states again.
	next := &waveRun{num: w.num + 1, items: carried}
	e, err := r.waveEntry(next)
	if err == nil {
		err = r.cfg.Ledger.Append(ctx, e)
	}
	if err != nil {
		return nil, true, err
	}
	next.ledgered = true
	if err := r.close(ctx, w, 0); err != nil {
		return nil, true, err
	}
	return next, false, nil
}

// close writes w's closing entry with its costs.
func (r *Runner) close(ctx context.Context, w *waveRun, online int) error {
	return r.cfg.Ledger.Append(ctx, Entry{Kind: KindClosed, Wave: w.num, CostUSD: w.cost, FullCostUSD: w.full, Online: online})
}

// waveEntry is the ledger entry opening w.
func (r *Runner) waveEntry(w *waveRun) (Entry, error) {
	e := Entry{Kind: KindWave, Wave: w.num, Fresh: w.fresh}
	if w.fresh {
		return e, nil
	}
	idx := make([]int, 0, len(w.items))
	for i := range w.items {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		st, err := w.items[i].ledger(r.routes)
		if err != nil {
			return e, err
		}
		e.Items = append(e.Items, st)
	}
	return e, nil
}

// findSlack is how long before an intent Find looks: the provider's
// clock may be behind ours.
const findSlack = time.Hour

// adopt looks for the batches of the wave's dangling intents (a crash
// after a create, before its id's entry) at the provider, by their keys,
// and ledgers each one found as submitted: it is polled, not submitted
// again. An intent whose batch is not found (it was never created, or the
// provider cannot look batches up) leaves its requests to be submitted.
func (r *Runner) adopt(ctx context.Context, w *waveRun) error {
	for _, in := range w.dangling {
		f, ok := r.routes[r.routeAt(in.Route)].Client.(Finder)
		if !ok {
			r.log.Warn("a batch of the last run may have been created without its id reaching the ledger, and this provider cannot look it up: its requests are submitted again",
				"wave", w.num, "submission", in.Key, "requests", len(in.CustomIDs))
			continue
		}
		id, err := retry.DoValue(ctx, r.cfg.Ops, func(ctx context.Context) (string, error) {
			id, _, err := f.Find(ctx, in.Key, in.At.Add(-findSlack))
			return id, err
		})
		if err != nil {
			return fmt.Errorf("looking for batch %s at the provider: %w", in.Key, err)
		}
		if id == "" {
			continue
		}
		e := Entry{Kind: KindSubmitted, Wave: w.num, Key: in.Key, Batch: id, Provider: in.Provider, Route: in.Route, CustomIDs: in.CustomIDs}
		if err := r.cfg.Ledger.Append(ctx, e); err != nil {
			return err
		}
		r.log.Info("batch found by its key and adopted", "wave", w.num, "batch", id, "submission", in.Key)
		w.known = append(w.known, e)
	}
	w.dangling = nil
	return nil
}

// submit reads the input for the wave's items, answers cached ones,
// renders the others and submits them in chunks within the provider's
// limits, each batch's id made durable before the next step. Items of
// batches the ledger knows are not submitted again.
func (r *Runner) submit(ctx context.Context, w *waveRun, in Input) error {
	w.custom = map[string]*flight{}
	if err := r.adopt(ctx, w); err != nil {
		return err
	}
	s := &submission{w: w, job: in.JobID, covered: map[string]int{}, chunkNum: max(len(w.known), w.chunks), chunks: make([]chunk, len(r.routes))}
	for i, rt := range r.routes {
		s.chunks[i].lim = rt.Client.Limits()
	}
	for _, e := range w.known {
		w.batches = append(w.batches, waveBatch{e.Batch, r.routeAt(e.Route)})
		for _, id := range e.CustomIDs {
			s.covered[id] = r.routeAt(e.Route)
		}
	}
	r.mu.Lock()
	r.sum.Batches += len(w.known)
	r.sum.Repolled += len(w.known)
	r.mu.Unlock()
	src, err := in.Open()
	if err != nil {
		return err
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	for {
		it, err := src.Next()
		if err == io.EOF {
			break
		}
		var bad *engine.BadItem
		if errors.As(err, &bad) {
			r.badLine(ctx, s, in, bad)
			continue
		}
		if err != nil {
			return fmt.Errorf("reading the input: %w", err)
		}
		f := w.items[it.Idx]
		if f == nil {
			if !w.fresh || !in.Want(it.Idx) || (r.cfg.Limit > 0 && s.taken >= r.cfg.Limit) {
				continue
			}
			f = r.newFlight(it.Idx)
			w.items[it.Idx] = f
			s.taken++
		}
		f.item = it
		f.item.Feedback = f.Feedback
		if err := r.place(ctx, s, f); err != nil {
			return err
		}
	}
	for i := range s.chunks {
		if err := r.flush(ctx, s, i); err != nil {
			return err
		}
	}
	// Items the ledger put in this wave that the input no longer holds
	// (or a resumed wave's items already recorded) have nothing to join.
	for idx, f := range w.items {
		if f.item.Raw == nil && f.item.Fields == nil {
			delete(w.items, idx)
		}
	}
	return nil
}

// submission is one wave's requests being gathered into chunks within the
// provider's limits.
type submission struct {
	w       *waveRun
	job     string
	covered map[string]int // custom ids in batches the ledger knows → their route
	// chunks are the requests being gathered for each route.
	chunks   []chunk
	chunkNum int
	taken    int // fresh items taken, against Config.Limit
	enqueued int // estimated tokens in the provider's queue
}

// chunk is one route's requests being gathered into a batch.
type chunk struct {
	lim  Limits
	reqs []Request
	size int // bytes of reqs as the client sends them
}

// badLine records an unreadable line of a fresh wave as the engine
// records it: failed, class item.
func (r *Runner) badLine(ctx context.Context, s *submission, in Input, bad *engine.BadItem) {
	if !s.w.fresh || s.w.items[bad.Item.Idx] != nil || !in.Want(bad.Item.Idx) || (r.cfg.Limit > 0 && s.taken >= r.cfg.Limit) {
		return
	}
	s.taken++
	r.finish(ctx, bad.Record())
}

// place puts one read item of the wave where it belongs: left to a batch
// the ledger knows, answered from the cache, deferred to the next wave
// when the queue is full, failed when its request cannot be built, or
// added to the chunk being gathered (sending the chunk first when the
// request would not fit).
func (r *Runner) place(ctx context.Context, s *submission, f *flight) error {
	w := s.w
	// carry is this wave's say: an item carried by the last one (a
	// cached invalid output, a deferral) is in this one for good.
	f.carry = false
	cid := CustomID(f.Idx, w.num)
	w.custom[cid] = f
	if route, ok := s.covered[cid]; ok {
		// In a batch of the ledger's, still in the queue.
		r.rs.Put(&f.ir, route)
		s.enqueued += r.estimate(f)
		return nil
	}
	if err := r.choose(f); err != nil {
		// No route fits the item: it fails as the engine fails it.
		r.apply(ctx, w, f, Answer{CustomID: cid, Err: err})
		delete(w.custom, cid)
		return nil
	}
	codec := r.routes[f.route()].Codec
	est := r.estimate(f)
	if f.Feedback == nil {
		if res, ok := codec.Cached(f.item); ok {
			// Served from the cache: no request. An invalid cached
			// output goes into the next wave as a re-ask.
			f.carry = r.apply(ctx, w, f, answerOf(cid, res))
			delete(w.custom, cid)
			return nil
		}
	}
	if est > 0 && s.enqueued > 0 && s.enqueued+est > r.cfg.MaxEnqueuedTokens {
		// The queue is full for this wave: the item waits for the
		// next one, as it is, its attempts unspent.
		f.carry = true
		delete(w.custom, cid)
		r.mu.Lock()
		r.sum.Deferred++
		r.mu.Unlock()
		return nil
	}
	body, err := codec.Body(f.item)
	if err != nil {
		// An attempt that cannot be made, as the engine's failed
		// Prepare: its error is the item's.
		r.apply(ctx, w, f, Answer{CustomID: cid, Err: classify.WithClass(err, classify.Item, "request cannot be built")})
		delete(w.custom, cid)
		return nil
	}
	req := Request{CustomID: cid, Body: body}
	n := requestBytes(r.routes[f.route()].Client, req)
	c := &s.chunks[f.route()]
	if len(c.reqs) > 0 && (len(c.reqs)+1 > c.lim.MaxRequests || c.size+n > c.lim.MaxBytes) {
		if err := r.flush(ctx, s, f.route()); err != nil {
			return err
		}
	}
	c.reqs = append(c.reqs, req)
	c.size += n
	s.enqueued += est
	return nil
}

// estimate is f's request's estimated tokens on its route, when
// Config.MaxEnqueuedTokens counts them; else 0.
func (r *Runner) estimate(f *flight) int {
	if e, ok := r.routes[f.route()].Codec.(Estimator); ok && r.cfg.MaxEnqueuedTokens > 0 {
		return e.EstimateTokens(f.item)
	}
	return 0
}

// flush submits route's gathered chunk as one batch: its intent made
// durable first, then the batch created (looked up by its key before a
// second try), then its id made durable before the batch is polled. A
// route that will not create the batch opens its breaker, and the
// chunk's items go to the next route's chunk, when there is one.
func (r *Runner) flush(ctx context.Context, s *submission, route int) error {
	c := &s.chunks[route]
	if len(c.reqs) == 0 {
		return nil
	}
	w, reqs, rt := s.w, c.reqs, r.routes[route]
	c.reqs, c.size = nil, 0
	s.chunkNum++
	key := fmt.Sprintf("%s-w%d-c%d", s.job, w.num, s.chunkNum)
	ids := make([]string, len(reqs))
	for i, q := range reqs {
		ids[i] = q.CustomID
	}
	// The intent is durable before the batch is created: a crash
	// between the creation and the id's entry leaves an intent that a
	// resume looks up by its key instead of submitting it again.
	intent := Entry{Kind: KindIntent, Wave: w.num, Key: key, Provider: rt.Provider, Route: rt.Name, CustomIDs: ids, At: time.Now().UTC()}
	if err := r.cfg.Ledger.Append(ctx, intent); err != nil {
		return err
	}
	attempt := 0
	id, err := retry.DoValue(ctx, r.cfg.Ops, func(ctx context.Context) (string, error) {
		attempt++
		// A create tried again may have worked the first time with
		// its answer lost: look before creating another.
		if f, ok := rt.Client.(Finder); ok && attempt > 1 {
			if id, found, err := f.Find(ctx, key, intent.At.Add(-findSlack)); err != nil || found {
				return id, err
			}
		}
		return rt.Client.Submit(ctx, key, reqs)
	})
	if err != nil {
		err = fmt.Errorf("submitting batch %s of %d requests: %w", key, len(reqs), err)
		if ctx.Err() == nil && r.openRoute(route, err.Error()) {
			return r.reroute(ctx, s, ids, err)
		}
		return err
	}
	// The id is durable before the batch is polled: a crash from here
	// on re-polls it, never submits it again.
	if err := r.cfg.Ledger.Append(ctx, Entry{Kind: KindSubmitted, Wave: w.num, Key: key, Batch: id, Provider: rt.Provider, Route: rt.Name, CustomIDs: ids}); err != nil {
		return err
	}
	r.log.Info("batch submitted", "wave", w.num, "batch", id, "requests", len(reqs), "route", rt.Name)
	w.batches = append(w.batches, waveBatch{id, route})
	r.mu.Lock()
	r.sum.Batches++
	r.sum.Requests += len(reqs)
	r.stats.InFlight += len(reqs)
	r.stats.Limit = r.stats.InFlight
	r.mu.Unlock()
	r.rs.Called(route, len(reqs))
	r.tally.Called(len(reqs))
	return nil
}

// reroute places again the items of a batch their route refused to
// create: its breaker is open, so each item's next choice is another
// route. With fallbacks.outage the refusal is an outage of the route for
// each item, moved by the engine's rule (engine.Routes.After): its tries
// name the route and err.
func (r *Runner) reroute(ctx context.Context, s *submission, ids []string, err error) error {
	d := r.cfg.Ops.Classifier.Classify(err)
	for _, cid := range ids {
		f := s.w.custom[cid]
		if f == nil {
			continue
		}
		// The refused batch never entered the provider's queue: what
		// place counted for it there is given back before the next
		// route's batch counts it.
		s.enqueued -= r.estimate(f)
		if r.cfg.Fallbacks.Outage {
			r.rs.After(&f.ir, &f.State, &f.item, engine.Next{Step: engine.StepRetry, Err: err, Decision: d})
		}
		if err := r.place(ctx, s, f); err != nil {
			return err
		}
	}
	return nil
}

// requestBytes is req's size as the client sends it.
func requestBytes(c Client, req Request) int {
	switch c.(type) {
	case *Anthropic:
		return anthropicRequestBytes(req)
	case *Gemini:
		return geminiRequestBytes(req)
	}
	return openAILineBytes(req)
}

// cachedAnswer is a result the cache served, standing in for an answer.
type cachedAnswer struct {
	Answer
	res task.Result
}

func answerOf(cid string, res task.Result) cachedAnswer {
	return cachedAnswer{Answer: Answer{CustomID: cid}, res: res}
}

// poll waits for every batch of the wave to end, polling with a backoff
// from PollMin to PollMax and reporting progress at each round. It returns
// the batches' final states.
func (r *Runner) poll(ctx context.Context, w *waveRun) (map[waveBatch]Status, error) {
	statuses := make(map[waveBatch]Status, len(w.batches))
	delay := r.cfg.PollMin
	for {
		var list []Status
		ended := 0
		for _, b := range w.batches {
			st, ok := statuses[b]
			if !ok || !st.Ended {
				var err error
				st, err = retry.DoValue(ctx, r.cfg.Ops, func(ctx context.Context) (Status, error) {
					return r.routes[b.route].Client.Status(ctx, b.id)
				})
				if err != nil {
					return nil, fmt.Errorf("polling batch %s: %w", b.id, err)
				}
				statuses[b] = st
			}
			if st.Ended {
				ended++
			}
			list = append(list, st)
		}
		r.progress(w.num, list)
		if ended == len(w.batches) {
			return statuses, nil
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, context.Cause(ctx)
		case <-t.C:
		}
		delay = min(2*delay, r.cfg.PollMax)
	}
}

// progress reports one round of polls.
func (r *Runner) progress(wave int, list []Status) {
	p := Progress{Wave: wave, Batches: list}
	var soonest time.Time
	for _, st := range list {
		c := st.Counts
		p.Counts.Total += c.Total
		p.Counts.Processing += c.Processing
		p.Counts.Succeeded += c.Succeeded
		p.Counts.Errored += c.Errored
		p.Counts.Expired += c.Expired
		p.Counts.Canceled += c.Canceled
		if !st.Ended && !st.ExpiresAt.IsZero() && (soonest.IsZero() || st.ExpiresAt.Before(soonest)) {
			soonest = st.ExpiresAt
		}
	}
	if !soonest.IsZero() {
		p.ExpiresIn = time.Until(soonest)
	}
	r.log.Info("batches polled", "wave", wave, "batches", len(list), "done", p.Counts.Done(), "total", p.Counts.Total,
		"succeeded", p.Counts.Succeeded, "errored", p.Counts.Errored, "expired", p.Counts.Expired, "expires_in", p.ExpiresIn.Round(time.Second))
	if r.cfg.OnProgress != nil {
		r.cfg.OnProgress(p)
	}
}

// collect reads the answers of a finished wave, applies them in input
// order, and returns the items that go into the next wave. The bool is
// true when the run stops here (a breaker trip the operator did not
// continue, or an error).
func (r *Runner) collect(ctx context.Context, w *waveRun, in Input, statuses map[waveBatch]Status) (map[int]*flight, bool, error) {
	answers, err := r.answers(ctx, w, statuses)
	if err != nil {
		return nil, true, err
	}
	// The breaker looks at the wave's errors before any is recorded: a
	// large share with one fingerprint is the setup's fault (a credit
	// balance, a revoked key), and those items stay pending.
	tripRoute, tripped, report := r.tripCheck(w, answers)
	r.mu.Lock()
	r.stats.InFlight = 0
	r.mu.Unlock()
	carried := map[int]*flight{}
	var held []*flight
	for _, pa := range answers {
		if tripped != "" && pa.f.route() == tripRoute && pa.a.Err != nil && r.fingerprint(pa.a.Err) == tripped {
			held = append(held, pa.f)
			continue
		}
		if r.apply(ctx, w, pa.f, pa.a) {
			carried[pa.f.Idx] = pa.f
		}
	}
	for _, f := range w.items {
		if f.carry {
			carried[f.Idx] = f
		}
	}
	if err := in.Job.Flush(ctx); err != nil {
		return nil, true, fmt.Errorf("saving the wave's records: %w", err)
	}
	if tripped == "" {
		return carried, false, nil
	}
	return r.tripped(ctx, w, carried, held, report)
}

// pending is an answer read from a wave's results and the item it is for.
type pending struct {
	f *flight
	a Answer
}

// answers reads the results of every batch of the wave, marks each batch
// collected in the ledger, and returns one answer per request sent, in
// input order: a request without a result is treated as never processed.
func (r *Runner) answers(ctx context.Context, w *waveRun, statuses map[waveBatch]Status) ([]pending, error) {
	answered := make(map[string]bool, len(w.custom))
	var out []pending
	for _, b := range w.batches {
		st, id := statuses[b], b.id
		if st.Failed {
			r.log.Warn("the provider refused a batch; its requests go into the next wave", "batch", id, "problem", st.Problem)
		}
		err := r.cfg.Ops.Do(ctx, func(ctx context.Context) error {
			return r.routes[b.route].Client.Results(ctx, st, func(a Answer) error {
				f := w.custom[a.CustomID]
				if f == nil || answered[a.CustomID] {
					if _, _, perr := ParseCustomID(a.CustomID); perr != nil {
						r.log.Warn("a batch result names a request tenax did not send", "batch", id, "custom_id", a.CustomID)
					}
					return nil
				}
				answered[a.CustomID] = true
				// The request's batch says where it went (a resumed
				// wave's items may have moved before the crash).
				r.rs.Put(&f.ir, b.route)
				out = append(out, pending{f, a})
				return nil
			})
		})
		if err != nil {
			return nil, fmt.Errorf("reading the results of batch %s: %w", id, err)
		}
		c := st.Counts
		if err := r.cfg.Ledger.Append(ctx, Entry{Kind: KindCollected, Wave: w.num, Batch: id, Counts: &c}); err != nil {
			return nil, err
		}
	}
	for cid, f := range w.custom {
		if !answered[cid] {
			out = append(out, pending{f, Answer{CustomID: cid, Unprocessed: "missing"}})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].f.Idx < out[j].f.Idx })
	return out, nil
}

// tripped handles a wave whose errors tripped the breaker: the held items
// stay pending with the wave counted as an attempt, and the operator, if
// asked, says whether the run goes on. Stopped, the carried items go into
// the next wave's ledger entry unsubmitted, so a resume starts there.
func (r *Runner) tripped(ctx context.Context, w *waveRun, carried map[int]*flight, held []*flight, report engine.TripReport) (map[int]*flight, bool, error) {
	r.tally.Tripped()
	goOn, replied := false, false
	if r.cfg.OnTrip == engine.TripPrompt && r.cfg.Operator != nil {
		d := r.cfg.Operator.Trip(ctx, report)
		goOn, replied = d == engine.TripContinue, d != engine.TripNoAnswer
	}
	for _, f := range held {
		f.Calls++ // the wave was an attempt; the item stays pending
		carried[f.Idx] = f
	}
	if goOn {
		// Continue closes every route's breaker too, as online.
		r.rs.Reset()
		return carried, false, nil
	}
	next := &waveRun{num: w.num + 1, items: carried}
	e, err := r.waveEntry(next)
	if err == nil {
		err = r.cfg.Ledger.Append(ctx, e)
	}
	if err != nil {
		return nil, true, err
	}
	if err := r.close(ctx, w, 0); err != nil {
		return nil, true, err
	}
	reason := engine.StopBreaker
	if replied {
		reason = engine.StopOperator
	}
	r.stop(reason, "circuit breaker open: "+report.Reason)
	return nil, true, nil
}

// tripCheck looks for a route whose requests in this wave failed with
// one fingerprint in a large enough share to trip its breaker
// (breaker.Share, Config.TripShare and TripMinimum), and opens it. While
// another route can take its items it trips nothing else; otherwise
// tripCheck returns that route and fingerprint, which trip the run's
// breaker, and the operator's report. "" for none.
func (r *Runner) tripCheck(w *waveRun, answers []pending) (int, string, engine.TripReport) {
	byRoute := make([][]pending, len(r.routes))
	for _, pa := range answers {
		byRoute[pa.f.route()] = append(byRoute[pa.f.route()], pa)
	}
	rule := breaker.Share{Share: r.cfg.TripShare, Minimum: r.cfg.TripMinimum}
	for route, as := range byRoute {
		failures := map[string]int{}
		last := map[string]*engine.Failure{}
		for _, pa := range as {
			if pa.a.Err != nil {
				fp := r.fingerprint(pa.a.Err)
				failures[fp]++
				last[fp] = &engine.Failure{Item: pa.f.item, Err: pa.a.Err, Decision: r.cfg.Retry.Classifier.Classify(pa.a.Err), Attempts: pa.f.Calls + 1}
			}
		}
		fp, n, ok := rule.Trips(len(as), failures)
		if !ok {
			continue
		}
		report := engine.TripReport{
			Reason: fmt.Sprintf("%d of the %d requests of wave %d failed with the same error", n, len(as), w.num),
			Last:   last[fp],
		}
		if r.routed() {
			if r.openRoute(route, report.Reason) {
				continue
			}
			report.Reason = "route " + r.routes[route].Name + ": " + report.Reason + ", and no other route can serve"
		}
		report.Stats = r.Stats()
		return route, fp, report
	}
	return 0, "", engine.TripReport{}
}

// openRoute opens route i's breaker for the rest of the run and reports
// whether another route can take its items; why is logged.
func (r *Runner) openRoute(i int, why string) bool {
	others := r.rs.Open(i)
	if others {
		r.log.Warn("route breaker open: its items go to another route's batches", "route", r.routes[i].Name, "why", why)
	}
	return others
}

// fingerprint groups the errors of a wave's requests: the class and the
// words without the request id, which differs for every request.
func (r *Runner) fingerprint(err error) string {
	return heal.Fingerprint(r.cfg.Retry.Classifier.Classify(err).Class.String(), llm.ErrorWords(err))
}

// apply brings one answer to bear on its item, decided by the per-item
// core as the engine decides a call (engine.Rules.Decide): a record, or the
// item is carried into the next wave (a retry, whose wave waits out its
// delay, or a re-ask). It reports whether the item is carried.
func (r *Runner) apply(ctx context.Context, w *waveRun, f *flight, a any) bool {
	var res task.Result
	var err error
	switch a := a.(type) {
	case cachedAnswer:
		res = a.res
		r.tally.Called(1)
	case Answer:
		switch {
		case a.Unprocessed != "":
			// A request the provider never ran is a call that failed
			// retryably, whatever a classifier would make of the words.
			err = classify.WithClass(fmt.Errorf("batch request %s: %s before the provider processed it", a.CustomID, unprocessedWord(a.Unprocessed)), classify.Retryable, "batch request "+a.Unprocessed)
		case a.Err != nil:
			err = a.Err
		default:
			res, err = r.routes[f.route()].Codec.Result(f.item, a.Body)
			full := res.CostUSD
			res.CostUSD *= r.cfg.Discount
			w.cost += res.CostUSD
			w.full += full
			r.mu.Lock()
			r.sum.FullCostUSD += full
			r.sum.BatchCostUSD += res.CostUSD
			r.mu.Unlock()
		}
	}
	// The item's State and the run's Tally count the answer, as online.
	f.Account(res)
	r.tally.Spent(res)
	ans := engine.Answer{Result: res, Err: err}
	if err == nil {
		ans.Invalid = r.validate(ctx, res.Output)
		// The answers were made before; only the validator runs under
		// this run's context.
		ans.Canceled = ans.Invalid != nil && ctx.Err() != nil
	}
	streak := f.Retrier
	next := r.rs.After(&f.ir, &f.State, &f.item, r.rules.Decide(&f.State, ans))
	if f.Retrier != streak {
		// A fallback moved the item with a fresh streak: its
		// max_elapsed clock starts now, and the ledger keeps when.
		f.RetrySince = time.Now().UTC()
	}
	if r.cfg.Cache != nil {
		engine.SettleCache(r.cfg.Cache, next, res)
	}
	switch next.Step {
	case engine.StepRecord:
		r.succeed(ctx, f, res)
		return false
	case engine.StepFail:
		r.fail(ctx, f, next.Err, next.Decision, next.Cause)
		return false
	case engine.StepReask:
		f.Feedback = next.Feedback
		f.LastError = next.Err.Error()
		r.tally.Reasked()
	case engine.StepRetry:
		f.LastError = next.Err.Error()
		f.RetryAt = time.Now().Add(next.Delay)
		r.tally.Retried()
	}
	// StepPending (the validator cut short by the run) carries the item
	// as it is: a resume asks again.
	return true
}

func unprocessedWord(s string) string {
	switch s {
	case "expired":
		return "the completion window expired"
	case "canceled":
		return "the batch was canceled"
	}
	return "no result came back"
}

// waitRetries waits until the retry delay of every item of w has ended:
// the next request of a retried item goes no sooner than online mode's
// retry would, counted from when its answer was read.
func (r *Runner) waitRetries(ctx context.Context, w *waveRun) error {
	var until time.Time
	for _, f := range w.items {
		if f.RetryAt.After(until) {
			until = f.RetryAt
		}
	}
	d := time.Until(until)
	if d <= 0 {
		return nil
	}
	r.log.Info("waiting out the retry delay before the next wave", "wave", w.num, "delay", d.Round(time.Millisecond))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-t.C:
		return nil
	}
}

func (r *Runner) validate(ctx context.Context, out json.RawMessage) error {
	if r.cfg.Validator == nil {
		return nil
	}
	return r.cfg.Validator.Validate(ctx, out)
}

// succeed records the item's success: the engine's record of its State.
func (r *Runner) succeed(ctx context.Context, f *flight, res task.Result) {
	r.finish(ctx, f.Success(f.item, r.served(f), res.Output))
}

// fail records the item as failed with err; fpErr names what is wrong, for
// the fingerprint.
func (r *Runner) fail(ctx context.Context, f *flight, err error, d classify.Decision, fpErr error) {
	r.finish(ctx, f.Failure(f.item, r.served(f), err, fpErr, d))
}

// served names the route of f's last request for its record.
func (r *Runner) served(f *flight) engine.Served { return f.ir.Served() }

// finish appends the record; a store that fails stops nothing here, the
// wave's Flush reports it.
func (r *Runner) finish(ctx context.Context, rec store.Record) {
	if err := r.job.Append(ctx, rec); err != nil {
		r.log.Error("recording an item failed", "idx", rec.Idx, "error", err)
		return
	}
	r.tally.Recorded(rec.Failed())
	r.rs.Recorded(rec.Route, rec.Failed())
}
