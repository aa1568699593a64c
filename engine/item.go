package engine

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// itemRun is the state of one item while it runs. A dispatcher worker
// keeps one for all its items (reset readies it for the next), so that an
// item run by Run allocates nothing of its own: the retry streak and the
// record's Append argument live in it too (TestTheItemPathAllocatesAtMost,
// docs/benchmarks.md). Nothing may keep a pointer into it past runItem.
type itemRun struct {
	State
	item task.Item
	// queued, called and returned time the attempt under way: called
	// and returned on a named route (its call time, Served.CallMS) or
	// when someone listens to events, queued only for a listener
	// (ItemCalled).
	queued, called, returned time.Time

	route ItemRoute // the item's routing
	rt    ticket    // a named route's gate's ticket for the call under way

	// retrier is the item's retry streak when it starts afresh
	// (State.Retrier then points at it).
	retrier retry.Retrier
	// out is the item's record: Append's argument while it is written
	// (a variadic argument of an interface call is otherwise copied to
	// the heap), then, once recorded, the record as built (an Append
	// may redact its argument in place). Do returns it.
	out [1]store.Record
	// detached is the calls' context without its cancellation, for
	// the checkpoint's Append: a record is written even as the run
	// stops. A worker makes it once for all its items.
	detached context.Context
	recorded bool
}

// reset readies r for item, keeping nothing of the item before but the
// detached context: r serves one context's items (a worker's).
func (r *itemRun) reset(item task.Item) {
	*r = itemRun{item: item, detached: r.detached}
}

// runItem brings r's item to its outcome: a record, or pending when the
// run stops first. Calls are made under ctx; every wait is under dctx,
// the dispatch context that Stop cancels. It returns whether the item was
// recorded; its record is then r.out[0].
func (e *Engine) runItem(ctx, dctx context.Context, r *itemRun) bool {
	if c := e.cfg.Carried[r.item.Idx]; c != nil {
		// The item goes on from where the waves left it: its record
		// counts what they spent, as one item's one record.
		r.State = c.State
		r.route = e.routing.Start(c.Tries)
	}
	if r.Retrier == nil || r.Started.IsZero() {
		// One clock read starts both clocks. Continue, inlined, builds
		// its Retrier on the stack; it is copied into r.
		now := time.Now()
		if r.Retrier == nil {
			r.retrier = *e.cfg.Retry.Continue(now, 0)
			r.Retrier = &r.retrier
		}
		if r.Started.IsZero() {
			r.Started = now
		}
	}
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemStarted, Item: r.item})
	}
	for {
		if dctx.Err() != nil {
			e.pending(r.item)
			return r.recorded
		}
		if e.cfg.OnEvent != nil {
			r.queued = time.Now()
		}
		t, prep, perr, err := e.passItem(ctx, dctx, r)
		if err != nil {
			e.pending(r.item)
			return r.recorded
		}
		e.active.Add(1)
		res, err := e.call(ctx, r, prep, perr)
		// The call stays active until its outcome is handled, so that a
		// tripped breaker's report counts it.
		next := e.afterCall(ctx, r, &t, prep.Tokens, res, err)
		e.callEnded()
		if e.cfg.OnEvent != nil && perr == nil && !res.CacheHit {
			e.emit(Event{Kind: CallEnded, Item: r.item, Elapsed: r.returned.Sub(r.called), Err: err, Decision: next.Decision, Route: r.route.Served().Route})
		}
		switch next.Step {
		case StepRecord, StepFail:
			return r.recorded
		case StepPending:
			e.pending(r.item)
			return r.recorded
		case StepRetry:
			e.rest.n.Add(1)
			e.kickRoom()
			err := sleep(dctx, next.Delay)
			e.rest.n.Add(-1)
			if err != nil {
				e.pending(r.item)
				return r.recorded
			}
		}
	}
}

// call makes the item's attempt on its route: prep's Run when the task
// readied one, the route's task otherwise, perr without a request.
func (e *Engine) call(ctx context.Context, r *itemRun, prep task.Prepared, perr error) (res task.Result, err error) {
	// A named route's record keeps its calls' time (call_ms); a run
	// without routes reads the clock only for its listener, which
	// spares the bare per-item path two clock reads a call.
	timed := e.cfg.OnEvent != nil || r.route.named()
	if timed {
		r.called = time.Now()
	}
	switch {
	case perr != nil:
		err = perr
	case prep.Run != nil:
		res, err = prep.Run(ctx)
	default:
		res, err = r.route.cur.Task.Run(e.stepCtx(ctx), r.item)
	}
	if timed {
		r.returned = time.Now()
		if perr == nil && !res.CacheHit {
			r.route.timed(r.returned.Sub(r.called))
		}
	}
	return res, err
}

// passItem picks the item's route, readies its next attempt and takes it
// through the gate (passRouted). perr is a failure to prepare: the attempt
// makes no request, but its failure still needs a breaker permit to
// count. err means the item stops here, pending: the run stopped, or a
// budget or a shared ledger stops it now.
func (e *Engine) passItem(ctx, dctx context.Context, r *itemRun) (t ticket, prep task.Prepared, perr, err error) {
	t, prep, perr, err = e.passRouted(ctx, dctx, r)
	if err == nil {
		return t, prep, perr, nil
	}
	// errors.AsType, unlike errors.As with a variable declared here,
	// moves nothing to the heap on the items that pass (docs/benchmarks.md).
	if budget, ok := errors.AsType[*BudgetError](err); ok {
		e.Stop(StopBudget, budget.Detail)
	} else if ledger, ok := errors.AsType[*ledgerError](err); ok {
		e.failRun(ledger)
	}
	return t, prep, perr, err
}

// prepare readies one attempt on route rt: through its task's Preparer
// when it has one, so the prompt is rendered, estimated and keyed once;
// otherwise from the older Estimator and Cacher, asked only when
// something would use the answer.
func (e *Engine) prepare(ctx context.Context, rt *route, item task.Item) (task.Prepared, error) {
	if rt.prep != nil {
		return rt.prep.Prepare(ctx, item)
	}
	var p task.Prepared
	if rt.est == nil && rt.cach == nil {
		return p, nil
	}
	limited := e.cfg.Budget.MaxTokens > 0 || e.gate.countsTokens() || rt.gate.countsTokens()
	if rt.est != nil && limited {
		p.Tokens = rt.est.EstimateTokens(item)
	}
	if rt.cach != nil && item.Feedback == nil && (limited || e.cfg.SharedBreaker != nil || e.cfg.Budget.MaxCostUSD > 0 || e.gate.mayHold() || rt.gate.mayHold()) {
		p.Cached = rt.cach.Cached(item)
	}
	return p, nil
}

// afterCall handles one call's result as the per-item core decides
// (Rules.Decide): it records the item, or says to call again (after a
// delay) or to leave the item pending. It settles the call's tickets
// (settle): the breaker permits, the cooldown probe, the call slots and
// what adaptive concurrency learns.
func (e *Engine) afterCall(ctx context.Context, r *itemRun, t *ticket, estimate int, res task.Result, err error) Next {
	if res.Quota != nil {
		// First: a 429 is judged by the headers it came with.
		c := t.call
		if r.rt != (ticket{}) {
			c = r.rt.call
		}
		e.observe(r.route.cur, Quota(*res.Quota), c)
	}
	e.n.Called(1)
	e.account(r, res, estimate)
	t.usedTokens, t.costUSD = res.Usage.Total(), res.CostUSD

	a := Answer{Result: res, Err: err}
	worked := err == nil || isOutputError(err)
	if worked {
		// The call worked, whatever its output is worth: it is a success
		// for the gates.
		e.settle(r, t, true, Next{})
		if err == nil {
			a.Invalid = e.validate(ctx, res.Output)
		}
	} else {
		a.Stopped = e.stopped()
	}
	if err != nil || a.Invalid != nil {
		a.Canceled = ctx.Err() != nil
	}
	rules := Rules{Heal: e.cfg.Heal, NoHeal: e.cfg.NoHeal, Hints: e.cfg.Hints}
	next := rules.Decide(&r.State, a)
	e.called(r, res, next)
	if e.cfg.Cache != nil {
		SettleCache(e.cfg.Cache, next, res)
	}
	if !worked {
		e.settle(r, t, false, next)
	}
	next = e.routing.After(&r.route, &r.State, &r.item, next)
	switch next.Step {
	case StepRecord:
		// The breaker hears of the call as it ends, before its record
		// is written (failWith).
		t.permit.Success()
		e.succeed(ctx, r, res)
	case StepPending:
		t.permit.Release()
	case StepFail:
		e.failWith(ctx, r, t.permit, next.Err, next.Cause, next.Decision)
	case StepReask:
		t.permit.Release()
		e.n.Reasked()
		r.item.Feedback = next.Feedback
		if e.cfg.OnEvent != nil {
			e.emit(Event{Kind: ItemHeal, Item: r.item, Attempt: next.Attempt, Err: next.Err, Decision: next.Decision})
		}
	case StepRetry:
		e.retryLater(r, t, next)
	}
	return next
}

// retryLater settles a call whose item is retried after next.Delay.
func (e *Engine) retryLater(r *itemRun, t *ticket, next Next) {
	if t.permit.Probe() {
		// A failed probe re-opens the breaker; the item waits at the gate
		// with everyone else.
		t.permit.Failure()
	} else {
		t.permit.Release()
	}
	e.n.Retried()
	if e.cfg.OnEvent != nil {
		e.emit(Event{Kind: ItemRetry, Item: r.item, Attempt: next.Attempt, Delay: next.Delay, Err: next.Err, Decision: next.Decision})
	}
}

// called reports the call that just ended, before what its decision
// leads to is done, when someone listens to events.
func (e *Engine) called(r *itemRun, res task.Result, next Next) {
	if e.cfg.OnEvent == nil {
		return
	}
	e.emit(Event{Kind: ItemCalled, Item: r.item, Attempt: r.Calls, Err: next.Err, Decision: next.Decision, Route: r.route.Served().Route, Call: Call{
		Number: r.Calls, Queued: r.queued, Started: r.called, Ended: r.returned,
		Usage: res.Usage, CostUSD: res.CostUSD, CacheHit: res.CacheHit, FinishReason: res.FinishReason,
		Next: next.Step,
	}})
}

// endCall settles the gate's side of a call and reports a new concurrency
// limit. Limits move from many goroutines at once: reading the limit and
// emitting under one lock keeps the events in the order the limit took.
func (e *Engine) endCall(t *ticket, o outcome, cooled bool) {
	if _, moved := e.gate.callEnded(t, o, cooled); moved && e.cfg.OnEvent != nil {
		e.limits.mu.Lock()
		if limit := e.gate.conc.Limit(); limit != e.limits.last {
			e.limits.last = limit
			e.emit(Event{Kind: ConcurrencyChanged, Limit: limit})
		}
		e.limits.mu.Unlock()
	}
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
	rec := r.Success(r.item, r.route.Served(), res.Output)
	if !e.finish(r.appendCtx(ctx), r.item, rec, &r.out, nil) {
		return false
	}
	if r.route.cur != nil {
		r.route.cur.succeeded.Add(1)
	}
	r.kept(rec)
	return true
}

// failWith reports the failure to the breaker if its class counts
// (Config.BreakerCount), then records the item as failed with err; its
// fingerprint is taken from fpErr, the error that names what is wrong
// (for an invalid output, the validation error without the heal loop's
// reason for stopping).
//
// The breaker hears first: the call's slot is already handed on, and a
// checkpoint that takes its time (a worker's group commit) let the next
// items call past the threshold. A worker's trip at threshold 3 held its
// calls only after 25–32 fatal answers at the mock's 1 ms
// (TestAWorkerTripHoldsWithinItsCallsInFlight).
func (e *Engine) failWith(ctx context.Context, r *itemRun, permit breaker.Permit, err, fpErr error, d classify.Decision) {
	if int(d.Class) < len(e.counted) && e.counted[d.Class] {
		permit.Failure()
	} else {
		permit.Release()
	}
	rec := r.Failure(r.item, r.route.Served(), err, fpErr, d)
	if e.finish(r.appendCtx(ctx), r.item, rec, &r.out, &Failure{Item: r.item, Err: err, Decision: d, Attempts: r.Calls}) {
		r.kept(rec)
		if r.route.cur != nil {
			r.route.cur.failed.Add(1)
		}
	}
}

// kept marks the item recorded with rec.
func (r *itemRun) kept(rec store.Record) {
	r.recorded = true
	r.out[0] = rec
}

// appendCtx is the context the item's record is appended under: ctx's
// values without its cancellation.
func (r *itemRun) appendCtx(ctx context.Context) context.Context {
	if r.detached == nil {
		r.detached = context.WithoutCancel(ctx)
	}
	return r.detached
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

// SettleCache tells the response cache what a decision found about the
// call's output res: an output that proved invalid is rejected; one that
// passed after re-asks is stored as the answer to the item's first
// question too (Next.Remember). The cache's failures only cost a call
// made again, so they are not the item's. Every driver of the per-item
// core (the engine, batch waves) calls it after Rules.Decide.
func SettleCache(c ResponseCache, next Next, res task.Result) {
	if next.Reject && res.CacheKey != "" {
		_ = c.Reject(res.CacheKey, next.Cause.Error())
	}
	if next.Remember != "" && len(res.Output) > 0 {
		_ = c.Put(next.Remember, res.Output)
	}
}
