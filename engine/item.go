package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// itemRun is the state of one item while it runs.
type itemRun struct {
	item        task.Item
	retrier     *retry.Retrier
	tracker     *heal.Tracker // created at the first invalid output
	start       time.Time
	calls       int
	generations int
	heals       int
	healBase    int // re-asks made before this engine (Config.Carried)
	usage       task.Usage
	cost        float64
	costKnown   bool
	cacheHit    bool
	lastOutput  json.RawMessage
	finish      string // the last call's finish reason (LLM tasks)
}

// runItem brings one item to its outcome: a record, or pending when the run
// stops first. Calls are made under ctx; every wait is under dctx, the
// dispatch context that Stop cancels.
func (e *Engine) runItem(ctx, dctx context.Context, item task.Item) {
	r := &itemRun{item: item, retrier: e.cfg.Retry.Start(), start: time.Now()}
	if c := e.cfg.Carried[item.Idx]; c != nil {
		r.tracker, r.healBase = c.Tracker, c.Heals
		r.retrier = e.cfg.Retry.StartAfter(c.Streak)
	}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemStarted, Item: r.item})
	}
	for {
		if dctx.Err() != nil {
			e.pending(r.item)
			return
		}
		prep, perr := e.prepare(ctx, r.item)
		// An attempt that failed to prepare makes no request, but its failure
		// still needs a breaker permit to count.
		t, err := e.gate.pass(dctx, prep.Tokens, prep.Cached || perr != nil)
		if err != nil {
			var budget *BudgetError
			var ledger *ledgerError
			switch {
			case errors.As(err, &budget):
				e.Stop(StopBudget, budget.Detail)
			case errors.As(err, &ledger):
				e.failRun(ledger)
			}
			e.pending(r.item)
			return
		}
		e.active.Add(1)
		var res task.Result
		switch {
		case perr != nil:
			err = perr
		case prep.Run != nil:
			res, err = prep.Run(ctx)
		default:
			res, err = e.task.Run(ctx, r.item)
		}
		// The call stays active until its outcome is handled, so that a
		// tripped breaker's report counts it.
		next, delay := e.afterCall(ctx, r, &t, prep.Tokens, res, err)
		e.callEnded()
		switch next {
		case stepDone:
			return
		case stepPending:
			e.pending(r.item)
			return
		case stepRetry:
			e.resting.Add(1)
			e.kickRoom()
			err := sleep(dctx, delay)
			e.resting.Add(-1)
			if err != nil {
				e.pending(r.item)
				return
			}
		}
	}
}

// prepare readies one attempt: through the task's Preparer when it has one,
// so the prompt is rendered, estimated and keyed once; otherwise from the
// older Estimator and Cacher, asked only when something would use the
// answer.
func (e *Engine) prepare(ctx context.Context, item task.Item) (task.Prepared, error) {
	if e.prep != nil {
		return e.prep.Prepare(ctx, item)
	}
	var p task.Prepared
	limited := e.gate.tok.Load() != nil || e.cfg.Budget.MaxTokens > 0
	if e.est != nil && limited {
		p.Tokens = e.est.EstimateTokens(item)
	}
	if e.cach != nil && item.Feedback == nil && (limited || e.gate.req.Load() != nil || e.cfg.Budget.MaxCostUSD > 0 || e.gate.cool.State() != breaker.Closed) {
		p.Cached = e.cach.Cached(item)
	}
	return p, nil
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
// again (after a delay) or to leave the item pending. It settles the
// call's ticket: the breaker permit, the cooldown probe, the call slot and
// what adaptive concurrency learns.
func (e *Engine) afterCall(ctx context.Context, r *itemRun, t *ticket, estimate int, res task.Result, err error) (step, time.Duration) {
	r.calls++
	e.callsN.Add(1)
	e.account(r, res, estimate)
	t.usedTokens, t.costUSD = res.Usage.Total(), res.CostUSD

	var outErr *task.OutputError
	switch {
	case err == nil:
		e.endCall(t, outcomeSuccess, false)
		r.retrier.Success()
		r.generations++
		r.lastOutput = res.Output
		if res.CacheHit && r.calls == 1 {
			r.cacheHit = true
		}
		verr := e.validate(ctx, res.Output)
		if verr == nil {
			if e.succeed(ctx, r, res) {
				t.permit.Success()
			} else {
				t.permit.Release()
			}
			return stepDone, 0
		}
		if ctx.Err() != nil {
			t.permit.Release()
			return stepPending, 0
		}
		var marked *classify.Error
		if errors.As(verr, &marked) && marked.Class == classify.Fatal {
			// The validator itself cannot run: the setup is wrong. Other
			// validation errors are invalid whatever their words say.
			e.fail(ctx, r, t.permit, verr, classify.Decision{Class: classify.Fatal, Reason: marked.Reason})
			return stepDone, 0
		}
		if res.CacheKey != "" && e.cfg.Cache != nil {
			_ = e.cfg.Cache.Reject(res.CacheKey, verr.Error())
		}
		r.cacheHit = false
		return e.heal(ctx, r, t.permit, heal.OutputText(res.Output), verr), 0
	case errors.As(err, &outErr):
		// The call worked; its output is unusable. It resets the retry
		// streak and spends heal budget, as DESIGN.md requires.
		e.endCall(t, outcomeSuccess, false)
		r.retrier.Success()
		r.generations++
		r.lastOutput = mustJSONString(outErr.Output)
		r.cacheHit = false
		return e.heal(ctx, r, t.permit, outErr.Output, outErr.Err), 0
	}
	delay, d, stop := r.retrier.Failure(err)
	if ctx.Err() != nil || (d.Class == classify.Canceled && e.stopped()) {
		e.endCall(t, outcomeNeutral, false)
		t.permit.Release()
		return stepPending, 0
	}
	if d.Class == classify.Canceled {
		// Canceled, but not by this run (a task's own context, a user
		// rule): the item must not vanish into pending while the run goes
		// on, so it fails as this item's problem.
		d = classify.Decision{Class: classify.Item, Reason: "canceled, but not by the run: " + d.Reason}
		stop = err
	}
	o, cooled := outcomeNeutral, false
	if d.Class == classify.Retryable && isRateLimit(err) {
		o, cooled = e.rateLimited(err)
	}
	e.endCall(t, o, cooled)
	if stop != nil {
		e.fail(ctx, r, t.permit, err, d)
		return stepDone, 0
	}
	if t.permit.Probe() {
		// A failed probe re-opens the breaker; the item waits at the gate
		// with everyone else.
		t.permit.Failure()
	} else {
		t.permit.Release()
	}
	e.retries.Add(1)
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemRetry, Item: r.item, Attempt: r.retrier.Consecutive(), Delay: delay, Err: err, Decision: d})
	}
	return stepRetry, delay
}

// rateLimited judges a 429. When the provider's latest rate-limit headers
// showed room for more calls than are under way, it is sporadic: only its
// own item waits (its retry delay honours the hint), and it says nothing
// about capacity. Otherwise it is the shared limit speaking: a capacity
// signal for adaptive concurrency and, with a retry hint, a cooldown that
// pauses every call to the provider until the hint expires (DESIGN.md), so
// the herd does not come back at once.
func (e *Engine) rateLimited(err error) (o outcome, cooled bool) {
	if room, known := e.gate.quotaRoom(int(e.gate.conc.executing.Load())); known && room {
		return outcomeNeutral, false
	}
	var h retry.Hinter
	if errors.As(err, &h) && h.RetryAfter() > 0 && e.cfg.Retry.MaxHint >= 0 {
		until := time.Now().Add(min(h.RetryAfter(), e.maxHint()))
		e.Cooldown(until, "rate limited: retry hint")
		cooled = true
	}
	return outcomeCapacity, cooled
}

// endCall settles the gate's side of a call and reports a new concurrency
// limit. Limits move from many goroutines at once: reading the limit and
// emitting under one lock keeps the events in the order the limit took.
func (e *Engine) endCall(t *ticket, o outcome, cooled bool) {
	if _, moved := e.gate.callEnded(t, o, cooled); moved && e.cfg.OnEvent != nil {
		e.limitMu.Lock()
		if limit := e.gate.conc.Limit(); limit != e.lastLimit {
			e.lastLimit = limit
			e.emit(Event{Kind: ConcurrencyChanged, Limit: limit})
		}
		e.limitMu.Unlock()
	}
}

// heal handles an invalid output: it spends heal budget and prepares the
// re-ask, or records the item as failed. It reports whether to call again.
func (e *Engine) heal(ctx context.Context, r *itemRun, permit breaker.Permit, output string, verr error) step {
	if e.cfg.NoHeal {
		e.failWith(ctx, r, permit, verr, verr, classify.Decision{Class: classify.Invalid, Reason: "heal disabled"})
		return stepDone
	}
	if r.tracker == nil {
		r.tracker = heal.NewTracker(e.cfg.Heal)
	}
	msg, stop := heal.Reask(r.tracker, heal.ValidationCheck, output, verr, e.cfg.Hints)
	if stop != nil {
		e.failWith(ctx, r, permit, fmt.Errorf("%w (%v)", verr, stop), verr, classify.Decision{Class: classify.Invalid, Reason: heal.StopReason(stop)})
		return stepDone
	}
	permit.Release()
	r.heals++
	e.heals.Add(1)
	r.item.Feedback = &task.Feedback{PreviousOutput: output, Message: msg, Attempt: r.healBase + r.heals}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemHeal, Item: r.item, Attempt: r.healBase + r.heals, Err: verr, Decision: classify.Decision{Class: classify.Invalid, Reason: "validation"}})
	}
	return stepReask
}

func (e *Engine) validate(ctx context.Context, out json.RawMessage) error {
	if e.cfg.Validator == nil {
		return nil
	}
	return e.cfg.Validator.Validate(ctx, out)
}

// succeed records the item's success; it reports false when the record
// could not be written.
func (e *Engine) succeed(ctx context.Context, r *itemRun, res task.Result) bool {
	rec := e.record(r)
	rec.Output = res.Output
	if r.tracker != nil {
		// A healed item keeps what was healed: the output passed, so every
		// error the re-asks tracked is now fixed.
		r.tracker.Observe(nil)
		rec.TrackedErrors = heal.TrackedJSON(r.tracker)
	}
	return e.finish(ctx, r.item, rec, nil)
}

func (e *Engine) fail(ctx context.Context, r *itemRun, permit breaker.Permit, err error, d classify.Decision) {
	e.failWith(ctx, r, permit, err, err, d)
}

// failWith records the item as failed with err and reports the failure to
// the breaker if its class counts (Config.BreakerCount); its fingerprint
// is taken from fpErr, the error that names what is wrong (for an invalid
// output, the validation error without the heal loop's reason for
// stopping).
func (e *Engine) failWith(ctx context.Context, r *itemRun, permit breaker.Permit, err, fpErr error, d classify.Decision) {
	rec := e.record(r)
	rec.Output = r.lastOutput
	if rec.Output == nil {
		rec.Output = json.RawMessage("null")
	}
	rec.Error = err.Error()
	rec.Stderr = stderrTail(err)
	rec.Class = d.Class
	rec.Retryable = d.Class == classify.Retryable
	rec.Fingerprint = heal.FailureFingerprint(d.Class, fpErr)
	rec.TrackedErrors = heal.TrackedJSON(r.tracker)
	written := e.finish(ctx, r.item, rec, &Failure{Item: r.item, Err: err, Decision: d, Attempts: r.calls})
	if written && int(d.Class) < len(e.counted) && e.counted[d.Class] {
		permit.Failure()
	} else {
		permit.Release()
	}
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

func (e *Engine) pending(item task.Item) {
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemPending, Item: item})
	}
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
