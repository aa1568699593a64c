package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// validationName is the check name under which validation errors are
// fingerprinted.
const validationName = "validate"

// itemRun is the state of one item while it runs.
type itemRun struct {
	item        task.Item
	retrier     *retry.Retrier
	tracker     *heal.Tracker // created at the first invalid output
	start       time.Time
	calls       int
	generations int
	heals       int
	usage       task.Usage
	cost        float64
	costKnown   bool
	cacheHit    bool
	lastOutput  json.RawMessage
	finish      string // the last call's finish reason (LLM tasks)
	// probing: this item's next call is the one allowed after a cooldown;
	// probeSeq is the cooldown count it started from.
	probing  bool
	probeSeq uint64
}

// runItem brings one item to its outcome: a record, or pending when the run
// stops first.
func (e *Engine) runItem(ctx context.Context, item task.Item) {
	r := &itemRun{item: item, retrier: e.cfg.Retry.Start(), start: time.Now()}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemStarted, Item: &r.item})
	}
	for {
		if e.isStopping() || ctx.Err() != nil {
			e.pending(&r.item)
			return
		}
		permit, held, ok := e.beforeCall(ctx, r)
		if !ok {
			e.endProbe(r)
			e.pending(&r.item)
			return
		}
		gen := e.adapt.generation()
		e.callStarted()
		res, err := e.task.Run(ctx, r.item)
		e.reserved.Add(-held)
		// The call stays active until its outcome is handled, so that a
		// tripped breaker's report counts it.
		next, delay := e.afterCall(ctx, r, permit, gen, res, err)
		e.callEnded()
		e.endProbe(r)
		switch next {
		case stepDone:
			return
		case stepPending:
			e.pending(&r.item)
			return
		case stepRetry:
			if !e.sleep(ctx, delay) {
				e.pending(&r.item)
				return
			}
		}
	}
}

// step is what an item does after a call.
type step uint8

const (
	stepDone    step = iota // recorded
	stepPending             // stopped without a record
	stepRetry               // wait, then call again
	stepReask               // call again with feedback
)

// afterCall handles one call's result: it records the item, or says to call
// again (after a delay) or to leave the item pending.
func (e *Engine) afterCall(ctx context.Context, r *itemRun, permit breaker.Permit, gen uint64, res task.Result, err error) (step, time.Duration) {
	r.calls++
	e.calls.Add(1)
	e.account(r, res, err)

	var outErr *task.OutputError
	switch {
	case err == nil:
		r.retrier.Success()
		r.generations++
		r.lastOutput = res.Output
		if res.CacheHit && r.calls == 1 {
			r.cacheHit = true
		}
		verr := e.validate(ctx, res.Output)
		if verr == nil {
			e.succeed(ctx, r, res)
			permit.Success()
			e.adaptSuccess()
			return stepDone, 0
		}
		if ctx.Err() != nil {
			permit.Release()
			return stepPending, 0
		}
		var marked *classify.Error
		if errors.As(verr, &marked) && marked.Class == classify.Fatal {
			// The validator itself cannot run: the setup is wrong. Other
			// validation errors are invalid whatever their words say.
			e.fail(ctx, r, verr, classify.Decision{Class: classify.Fatal, Reason: marked.Reason})
			permit.Failure()
			return stepDone, 0
		}
		if res.CacheKey != "" && e.cfg.Cache != nil {
			_ = e.cfg.Cache.Reject(res.CacheKey, verr.Error())
		}
		r.cacheHit = false
		return e.heal(ctx, r, permit, outputText(res.Output), verr), 0
	case errors.As(err, &outErr):
		// The call worked; its output is unusable. It resets the retry
		// streak and spends heal budget, as DESIGN.md requires.
		r.retrier.Success()
		r.generations++
		r.lastOutput = mustJSONString(outErr.Output)
		r.cacheHit = false
		return e.heal(ctx, r, permit, outErr.Output, outErr.Err), 0
	}
	delay, d, stop := r.retrier.Failure(err)
	if ctx.Err() != nil || (d.Class == classify.Canceled && e.isStopping()) {
		permit.Release()
		return stepPending, 0
	}
	if d.Class == classify.Canceled {
		// Canceled, but not by this run (a task's own context, a user
		// rule): the item must not vanish into pending while the run goes
		// on, so it fails as this item's problem.
		d = classify.Decision{Class: classify.Item, Reason: "canceled, but not by the run: " + d.Reason}
		stop = err
	}
	if d.Class == classify.Retryable {
		var h retry.Hinter
		if errors.As(err, &h) && h.RetryAfter() > 0 && isRateLimit(err) && e.cfg.Retry.MaxHint >= 0 {
			// A 429's hint pauses every call to the provider, whether or
			// not this item retries.
			e.Cooldown(time.Now().Add(min(h.RetryAfter(), e.maxHint())), "rate limited: retry hint")
		}
		if isOverload(err) {
			e.adaptOverload(gen)
		}
	}
	if stop != nil {
		e.fail(ctx, r, err, d)
		permit.Failure()
		return stepDone, 0
	}
	if permit.Probe() {
		// A failed probe re-opens the breaker; the item waits at the gate
		// with everyone else.
		permit.Failure()
	} else {
		permit.Release()
	}
	e.retries.Add(1)
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemRetry, Item: &r.item, Attempt: r.retrier.Consecutive(), Delay: delay, Err: err, Decision: d})
	}
	return stepRetry, delay
}

// heal handles an invalid output: it spends heal budget and prepares the
// re-ask, or records the item as failed. It reports whether to call again.
func (e *Engine) heal(ctx context.Context, r *itemRun, permit breaker.Permit, output string, verr error) step {
	if e.cfg.NoHeal {
		e.failWith(ctx, r, verr, verr, classify.Decision{Class: classify.Invalid, Reason: "heal disabled"})
		permit.Failure()
		return stepDone
	}
	if r.tracker == nil {
		r.tracker = heal.NewTracker(e.cfg.Heal)
	}
	r.tracker.Observe([]heal.Observed{{Name: validationName, Message: verr.Error()}})
	next, ok := r.tracker.Next()
	var stop error
	if !ok {
		if stop = r.tracker.Err(); stop == nil {
			stop = fmt.Errorf("heal budget exhausted: %w", heal.ErrBudget)
		}
	} else {
		stop = r.tracker.Spend(next.Fingerprint, output)
	}
	if stop != nil {
		e.failWith(ctx, r, fmt.Errorf("%w (%v)", verr, stop), verr, classify.Decision{Class: classify.Invalid, Reason: stopReason(stop)})
		permit.Failure()
		return stepDone
	}
	permit.Release()
	r.heals++
	e.heals.Add(1)
	var stderr string
	var sc classify.StderrCarrier
	if errors.As(verr, &sc) {
		stderr = sc.Stderr()
	}
	msg := heal.FormatFeedback(heal.FeedbackInput{PreviousOutput: output, Err: verr, Stderr: stderr, Hints: e.cfg.Hints})
	r.item.Feedback = &task.Feedback{PreviousOutput: output, Message: msg, Attempt: r.heals}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemHeal, Item: &r.item, Attempt: r.heals, Err: verr, Decision: classify.Decision{Class: classify.Invalid, Reason: "validation"}})
	}
	return stepReask
}

func stopReason(err error) string {
	var se *heal.StopError
	if errors.As(err, &se) {
		return "heal: " + se.Reason
	}
	return "heal budget"
}

// beforeCall takes the item through the gate before a call: the budget
// (reserving the call's estimated tokens), the pause of a tripped breaker
// or a check-in and a breaker permit, a provider cooldown (after which one
// call goes first), then the rate limiters. A pause or a cooldown that
// comes while the item waits on the limiters sends it back to the gate
// with the tokens it already holds, so that a long pause never releases a
// burst. It returns the permit and the tokens reserved, or false when the
// run stops meanwhile.
func (e *Engine) beforeCall(ctx context.Context, r *itemRun) (breaker.Permit, int64, bool) {
	if e.cacher != nil && r.item.Feedback == nil && e.mayWait() && e.cacher.Cached(r.item) {
		// Served from the cache: no call, nothing to pace or pay for.
		permit, _, ok := e.permit(ctx)
		return permit, 0, ok
	}
	estimate := 0
	if e.est != nil && (e.tokLimit != nil || e.cfg.Budget.MaxTokens > 0) {
		estimate = e.est.EstimateTokens(r.item)
	}
	held, ok := e.reserve(estimate)
	if !ok {
		return breaker.Permit{}, 0, false
	}
	// With no limiter there is nothing to pace: one pass through the gate.
	unlimited := e.reqLimit == nil && (e.tokLimit == nil || estimate == 0)
	paced := unlimited
	for {
		permit, waited, ok := e.permit(ctx)
		if !ok {
			e.reserved.Add(-held)
			return breaker.Permit{}, 0, false
		}
		if waited && !unlimited {
			// A pause or an open breaker held the item: whatever rate it
			// was paced at is stale, and a burst of items released together
			// must be paced again.
			paced = false
		}
		if wait := e.cooldownWait(r); wait != nil {
			permit.Release()
			if !wait(ctx) {
				e.reserved.Add(-held)
				return breaker.Permit{}, 0, false
			}
			continue
		}
		if paced {
			return permit, held, true
		}
		// The limiters come after the gate, so tokens are only taken by
		// items that may call now.
		permit.Release()
		if !e.waitLimiters(ctx, estimate) {
			e.reserved.Add(-held)
			return breaker.Permit{}, 0, false
		}
		paced = true
	}
}

// mayWait reports whether the gate has anything that could hold a call
// back besides the breaker: rate limiters, a budget, a cooldown. Only then
// is it worth asking the task whether the item is a cache hit.
func (e *Engine) mayWait() bool {
	if e.reqLimit != nil || e.tokLimit != nil || e.cfg.Budget.MaxTokens > 0 || e.cfg.Budget.MaxCostUSD > 0 {
		return true
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cooling
}

// reserve checks the budget before a call, counting the calls already
// under way at their estimates, and holds this call's estimate against the
// token budget (released once the call returns). It returns the tokens
// held, and false, stopping the run, once a budget is reached.
func (e *Engine) reserve(estimate int) (int64, bool) {
	b := e.cfg.Budget
	var held int64
	if b.MaxTokens > 0 {
		held = int64(estimate)
		used := e.inTokens.Load() + e.outTokens.Load()
		if reserved := e.reserved.Add(held); used+reserved > b.MaxTokens {
			e.reserved.Add(-held)
			e.Stop(StopBudget, fmt.Sprintf("budget.max_tokens of %d reached (%d used, %d more under way or next)", b.MaxTokens, used, reserved))
			return 0, false
		}
	}
	if cost := float64(e.costMicro.Load()) / 1e6; b.MaxCostUSD > 0 && cost >= b.MaxCostUSD {
		e.reserved.Add(-held)
		e.Stop(StopBudget, fmt.Sprintf("budget.max_cost_usd of $%.4f reached ($%.4f spent)", b.MaxCostUSD, cost))
		return 0, false
	}
	return held, true
}

// cooldownWait returns nil when the item may call now as far as cooldowns
// go, and otherwise a function that waits until it should look again. The
// first item to find a cooldown over makes the first call alone.
func (e *Engine) cooldownWait(r *itemRun) func(context.Context) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.cooling {
		// Cooldown sets cooling whenever it sets a pause, so nothing is
		// pending: no need to read the clock under the lock.
		return nil
	}
	if d := time.Until(e.cooldown); d > 0 {
		return func(ctx context.Context) bool { return e.sleep(ctx, d) }
	}
	if r.probing {
		return nil
	}
	if !e.probing {
		e.probing, r.probing, r.probeSeq = true, true, e.cooldownSeq
		return nil
	}
	changed := e.changed
	return func(ctx context.Context) bool {
		select {
		case <-changed:
			return true
		case <-ctx.Done():
			return false
		case <-e.stopping:
			return false
		}
	}
}

// waitLimiters waits for the request and token rate limiters.
func (e *Engine) waitLimiters(ctx context.Context, estimate int) bool {
	if e.reqLimit != nil {
		if !e.waitLimiter(ctx, func(ctx context.Context) error { return e.reqLimit.Wait(ctx) }) {
			return false
		}
	}
	if e.tokLimit != nil && estimate > 0 {
		n := min(estimate, e.tokLimit.Burst())
		if !e.waitLimiter(ctx, func(ctx context.Context) error { return e.tokLimit.WaitN(ctx, n) }) {
			return false
		}
	}
	return true
}

// endProbe ends the item's post-cooldown call: if it set no new cooldown
// the provider has room again and everyone may call; either way the
// waiting items look again.
func (e *Engine) endProbe(r *itemRun) {
	if !r.probing {
		return
	}
	r.probing = false
	e.mu.Lock()
	e.probing = false
	if e.cooldownSeq == r.probeSeq {
		e.cooling = false
	}
	e.broadcastLocked()
	e.mu.Unlock()
}

// waitLimiter waits on a rate limiter, giving up when the run stops.
func (e *Engine) waitLimiter(ctx context.Context, wait func(context.Context) error) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-e.stopping:
			cancel()
		case <-wctx.Done():
		}
	}()
	return wait(wctx) == nil
}

// permit waits at the gate for a breaker permit. It reports false when the
// run stops first.
func (e *Engine) permit(ctx context.Context) (p breaker.Permit, waited, ok bool) {
	for {
		e.mu.Lock()
		paused, changed := e.paused, e.changed
		e.mu.Unlock()
		if !paused {
			p, err := e.br.Allow()
			if err == nil {
				return p, waited, true
			}
		}
		waited = true
		var t *time.Timer
		var timer <-chan time.Time
		if !paused {
			d := time.Until(e.br.ReadyAt())
			if d <= 0 {
				// Half-open with every probe slot taken: wait for a change.
				d = time.Second
			}
			t = time.NewTimer(d)
			timer = t.C
		}
		select {
		case <-ctx.Done():
		case <-e.stopping:
		case <-changed:
		case <-timer:
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil || e.isStopping() {
			return breaker.Permit{}, waited, false
		}
	}
}

// account adds a call's usage and cost to the item and the run, and
// corrects the token limiter from the real usage.
func (e *Engine) account(r *itemRun, res task.Result, err error) {
	if res.FinishReason != "" {
		r.finish = res.FinishReason
	}
	if res.Usage.Total() == 0 && res.CostUSD == 0 {
		return
	}
	r.usage = r.usage.Add(res.Usage)
	e.inTokens.Add(res.Usage.InputTokens)
	e.outTokens.Add(res.Usage.OutputTokens)
	if res.CostUSD > 0 {
		r.cost += res.CostUSD
		r.costKnown = true
		e.costMicro.Add(int64(math.Round(res.CostUSD * 1e6)))
	}
	if e.tokLimit != nil && e.est != nil {
		if extra := int(res.Usage.Total()) - e.est.EstimateTokens(r.item); extra > 0 {
			// Spent more than estimated: take the difference as debt.
			e.tokLimit.ReserveN(time.Now(), min(extra, e.tokLimit.Burst()))
		}
	}
}

func (e *Engine) validate(ctx context.Context, out json.RawMessage) error {
	if e.cfg.Validator == nil {
		return nil
	}
	return e.cfg.Validator.Validate(ctx, out)
}

func (e *Engine) succeed(ctx context.Context, r *itemRun, res task.Result) {
	rec := e.record(r)
	rec.Output = res.Output
	_ = e.finish(ctx, &r.item, &rec, nil)
}

func (e *Engine) fail(ctx context.Context, r *itemRun, err error, d classify.Decision) {
	e.failWith(ctx, r, err, err, d)
}

// failWith records the item as failed with err; its fingerprint is taken
// from fpErr, the error that names what is wrong (for an invalid output,
// the validation error without the heal loop's reason for stopping).
func (e *Engine) failWith(ctx context.Context, r *itemRun, err, fpErr error, d classify.Decision) {
	rec := e.record(r)
	rec.Output = r.lastOutput
	if rec.Output == nil {
		rec.Output = json.RawMessage("null")
	}
	rec.Error = err.Error()
	rec.Stderr = stderrTail(err)
	rec.Class = d.Class
	rec.Retryable = d.Class == classify.Retryable
	name := d.Class.String()
	if d.Class == classify.Invalid {
		name = validationName
	}
	rec.Fingerprint = heal.Fingerprint(name, fpErr.Error())
	if r.tracker != nil {
		if b, jerr := json.Marshal(r.tracker.Errors()); jerr == nil {
			rec.TrackedErrors = b
		}
	}
	_ = e.finish(ctx, &r.item, &rec, &Failure{Item: r.item, Err: err, Decision: d, Attempts: r.calls})
}

func (e *Engine) record(r *itemRun) store.Record {
	rec := store.Record{
		Idx:                r.item.Idx,
		ID:                 r.item.ID,
		Input:              r.item.Raw,
		Attempts:           r.calls,
		HealAttempts:       r.heals,
		GenerationAttempts: r.generations,
		CacheHit:           r.cacheHit && r.heals == 0,
		FinishReason:       r.finish,
		Usage:              r.usage,
		DurationMS:         time.Since(r.start).Milliseconds(),
		FinishedAt:         time.Now().UTC(),
	}
	if r.costKnown {
		c := r.cost
		rec.CostUSD = &c
	}
	return rec
}

// stderrTail is the end of a failed command's stderr carried by err (an
// exec task's exit, a command validator's failure), at most
// store.MaxStderrTail bytes cut at a line or rune boundary; "" for errors
// of HTTP calls, whose bodies are not stderr.
func stderrTail(err error) string {
	d := classify.Describe(err)
	if d.Stderr == "" || d.Status != 0 {
		return ""
	}
	s := strings.TrimRight(d.Stderr, " \t\r\n")
	if len(s) <= store.MaxStderrTail {
		return s
	}
	s = s[len(s)-store.MaxStderrTail:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < len(s)/2 {
		return s[i+1:]
	}
	return strings.ToValidUTF8(s, "")
}

func (e *Engine) pending(item *task.Item) {
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemPending, Item: item})
	}
}

// outputText is an output as a model or a command should see it again: the
// string itself for a JSON string, the JSON text otherwise.
func outputText(out json.RawMessage) string {
	var s string
	if len(out) > 0 && out[0] == '"' && json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

func mustJSONString(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

// isRateLimit reports whether err is a provider's rate limit (429).
func isRateLimit(err error) bool {
	var sc classify.StatusCoder
	return errors.As(err, &sc) && sc.HTTPStatus() == 429
}

// isOverload reports whether err says the provider is saturated: a 429
// rate limit, a 529 or an overloaded error. Adaptive concurrency halves on
// them.
func isOverload(err error) bool {
	var sc classify.StatusCoder
	if errors.As(err, &sc) {
		switch sc.HTTPStatus() {
		case 429, 529, 503:
			return true
		}
	}
	var pc classify.ProviderCoder
	return errors.As(err, &pc) && strings.Contains(pc.ProviderCode(), "overloaded")
}
