package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/tenaxhq/tenax/breaker"
)

// gate decides when the next call may go. Everything that can hold a call
// back is here, checked in one order on one path (gate.pass), whether the
// state it reads is this engine's or shared with other engines
// (Config.Ledger, SharedBreaker, SharedLimiter: the workers of a job).
// Each stage is a method of admission (admission.go) whose comment says
// what it waits for and why it stands where it does:
//
//  1. budget: the call's estimated tokens are reserved against
//     budget.max_tokens, and a spent budget stops the run; once, first;
//  2. pause: the run's pause (a tripped breaker or a check-in awaiting
//     the operator) and another engine's open breaker;
//  3. breaker: the run breaker's permit;
//  4. cooldown: the provider's cooldown, a second breaker opened until
//     the time a server named (its quota exhausted), that then lets one
//     probe call through and closes when the probe meets no new cooldown;
//  5. limiters: the request and token rate limiters, configured or
//     learned from the provider's rate-limit headers, then the shared ones
//     (sharedLimiters);
//  6. slot, last: a call slot of the concurrency limit (adaptive or
//     fixed), which counts calls, not items, so an item sleeping before
//     its retry or waiting on a limiter holds none.
//
// A cached call makes no request and passes the pause and the breaker
// only. A wait at 2–6 gives back the permits taken at 3–4 and starts over
// at 2, so a long pause never releases a burst paced for a moment that
// has passed; a wait at 2–3 also forgets the call's pace. Waits end on
// the dispatch context: a stopped run leaves waiting items pending.
// Nothing polls: waiters sleep on a broadcast channel that every state
// change closes, or on a timer for the instant a breaker turns half-open.
type gate struct {
	br   *breaker.Breaker // the run's breaker
	cool *breaker.Breaker // provider cooldowns
	conc *limiter

	// Configured limits win over learned ones; a learned limiter is made on
	// the first rate-limit headers that name the provider's limit.
	req, tok                 atomic.Pointer[rate.Limiter]
	reqConfigured, tokConfig bool
	// learnMu makes each answer's read-then-reserve on the learned
	// limiters one step: two answers that both saw a full new limiter
	// each reserved its excess, and the run stalled a minute per extra
	// answer (TestConcurrentAnswersDrainTheLearnedLimiterOnce).
	learnMu sync.Mutex

	budget   Budget
	ledger   Ledger       // the shared account, or nil: reserved and spent
	reserved atomic.Int64 // estimated tokens of the calls under way
	// budgetWaiters counts the calls waiting in reserve for calls under
	// way to settle; only then does a settle wake the gate's waiters.
	budgetWaiters atomic.Int32
	spent         func() (tokens int64, usd float64)

	// What other engines share, or nil.
	sharedLim SharedLimiter
	sharedBr  SharedBreaker

	paused atomic.Bool
	// onHold is the operator's pause (Engine.Pause), apart from paused:
	// a trip answered Continue, or a check-in, unpauses the gate and must
	// not end a pause the operator asked for.
	onHold  atomic.Bool
	pauses  pauseClock
	changed atomic.Pointer[chan struct{}] // closed and replaced on every change
	// cooled counts twice for each cooldown begun, once before it is in
	// force and once after (odd while one is being set), to tell a pace
	// or a route's pick that a cooldown outdated (coolingSince). coolMu
	// keeps two cooldowns from setting it together.
	cooled atomic.Uint64
	coolMu sync.Mutex

	quota atomic.Pointer[quotaSeen] // the provider's latest rate-limit headers

	// spare is how many calls may go now without waiting on the learned
	// request limiter: the provider's bucket, dated by the calls that
	// followed the answer that counted it, holds more than the limiter
	// and the calls holding its paces will spend (mirrorDated).
	spare atomic.Int64
	// pacing counts the calls holding a pace of the request limiter
	// (asleep in it, or past it waiting for a slot) that have not
	// started: they will spend from the bucket, the limiter no longer
	// counts them.
	pacing atomic.Int64
	// hinted is until when (Unix nanoseconds) the server's retry hint on
	// an exhausted quota holds the request pace: no spare calls before.
	hinted atomic.Int64

	// refuse makes the gate refuse a call its breaker gives no permit
	// (errRouteRefused) instead of waiting: a route's gate, whose item
	// would rather go to another route. onChange, when set, hears of every
	// broadcast.
	refuse   bool
	onChange func()
}

// quotaSeen is a Quota, when it was seen, and the call whose answer
// carried it (zero when not known: ObserveQuota from outside a call).
type quotaSeen struct {
	Quota
	at   time.Time
	call callStart
}

// ticket is a call let through the gate. Report its end with gate.done.
type ticket struct {
	permit breaker.Permit // the run's breaker
	cool   breaker.Permit // the provider's cooldown
	tokens int64          // held against budget.max_tokens
	slot   bool           // holds a call slot
	// What the call spent, for a shared ledger.
	usedTokens int64
	costUSD    float64
	call       callStart // for adaptive concurrency
}

func newGate(cfg Config, br *breaker.Breaker, spent func() (int64, float64)) *gate {
	g := &gate{br: br, budget: cfg.Budget, ledger: cfg.Ledger, spent: spent,
		sharedLim: cfg.SharedLimiter, sharedBr: cfg.SharedBreaker}
	ch := make(chan struct{})
	g.changed.Store(&ch)
	g.cool = breaker.New(breaker.Settings{
		// Only TripUntil opens it: failures are the run breaker's business.
		Threshold: -1,
		Probes:    1,
		OnStateChange: func(from, to breaker.State, c breaker.Counts) {
			g.broadcast()
		},
	})
	if cfg.RequestsPerMinute > 0 {
		g.req.Store(requestLimiter(float64(cfg.RequestsPerMinute)))
		g.reqConfigured = true
	}
	if cfg.TokensPerMinute > 0 {
		g.tok.Store(tokenLimiter(float64(cfg.TokensPerMinute)))
		g.tokConfig = true
	}
	g.conc = newLimiter(cfg)
	return g
}

func requestLimiter(perMinute float64) *rate.Limiter {
	perSec := perMinute / 60
	return rate.NewLimiter(rate.Limit(perSec), max(1, int(math.Ceil(perSec))))
}

func tokenLimiter(perMinute float64) *rate.Limiter {
	// The burst must hold the largest single call, or WaitN refuses it.
	return rate.NewLimiter(rate.Limit(perMinute/60), max(int(perMinute/6), 1))
}

// broadcast wakes everything waiting at the gate to look again.
func (g *gate) broadcast() {
	ch := make(chan struct{})
	old := g.changed.Swap(&ch)
	close(*old)
	if g.onChange != nil {
		g.onChange()
	}
}

// pause holds every call at the gate until unpause.
func (g *gate) pause() {
	g.pauses.begin(time.Now())
	g.paused.Store(true)
	g.broadcast()
}

func (g *gate) unpause() {
	g.paused.Store(false)
	if !g.onHold.Load() {
		g.pauses.end(time.Now())
	}
	g.broadcast()
}

// hold holds every call at the gate for the operator until unhold,
// whatever a trip's or a check-in's pause does meanwhile; its time counts
// as paused, as theirs does.
func (g *gate) hold() {
	g.pauses.begin(time.Now())
	g.onHold.Store(true)
	g.broadcast()
}

func (g *gate) unhold() {
	g.onHold.Store(false)
	if !g.paused.Load() {
		g.pauses.end(time.Now())
	}
	g.broadcast()
}

// closed reports whether the run is paused, for a question or by the
// operator: no call goes.
func (g *gate) closed() bool { return g.paused.Load() || g.onHold.Load() }

// countsTokens reports whether a call's estimated tokens matter at g: a
// token rate limiter, or rate limits shared with other engines.
func (g *gate) countsTokens() bool { return g.tok.Load() != nil || g.sharedLim != nil }

// mayHold reports whether g may hold a call back for something a cached
// call skips: a request rate limiter or a provider cooldown.
func (g *gate) mayHold() bool { return g.req.Load() != nil || g.cool.State() != breaker.Closed }

// pauseClock adds up the time the gate stood paused for the operator (a
// tripped breaker's question, a check-in), so that a run's rate is
// measured over the time dispatch was open: a rate counting a pause said
// 1.5 items/s and an ETA of 32 minutes right after Continue, for a run
// that needed two.
type pauseClock struct {
	mu      sync.Mutex
	since   time.Time // the current pause's start; zero when open
	total   time.Duration
	resumed time.Time // the last pause's end
}

func (c *pauseClock) begin(now time.Time) {
	c.mu.Lock()
	if c.since.IsZero() {
		c.since = now
	}
	c.mu.Unlock()
}

func (c *pauseClock) end(now time.Time) {
	c.mu.Lock()
	if !c.since.IsZero() {
		c.total += now.Sub(c.since)
		c.since, c.resumed = time.Time{}, now
	}
	c.mu.Unlock()
}

// read returns the time paused up to now, when the current pause began
// (zero while open) and when the last pause ended.
func (c *pauseClock) read(now time.Time) (paused time.Duration, since, resumed time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	paused = c.total
	if !c.since.IsZero() {
		paused += now.Sub(c.since)
	}
	return paused, c.since, c.resumed
}

// ledgerError is shared state (the budget's ledger, the shared rate
// limits) failing to answer: the run stops, as when its checkpoint cannot
// be written, rather than spend or call unchecked.
type ledgerError struct {
	what string // "the budget's ledger"
	err  error
}

func (e *ledgerError) Error() string { return "engine: " + e.what + ": " + e.err.Error() }

func (e *ledgerError) Unwrap() error { return e.err }

// tryPermits takes the run breaker's and the cooldown's permits if both
// are free now, without waiting.
func (g *gate) tryPermits() (p, c breaker.Permit, ok bool) {
	if g.closed() || g.held() {
		return p, c, false
	}
	p, err := g.br.Allow()
	if err != nil {
		return p, c, false
	}
	if c, err = g.cool.Allow(); err != nil {
		g.release(p)
		return breaker.Permit{}, breaker.Permit{}, false
	}
	return p, c, true
}

// held reports whether another engine's breaker holds every call.
func (g *gate) held() bool {
	if g.sharedBr == nil {
		return false
	}
	held, _ := g.sharedBr.Hold()
	return held
}

// waitCooldown waits until the provider's cooldown may have ended. It only
// looks: taking a permit here would take the half-open breaker's one probe
// for a caller that does not call, and everyone would wait for a probe
// that never comes.
func (g *gate) waitCooldown(ctx context.Context) error {
	changed := *g.changed.Load()
	var timer <-chan time.Time
	switch g.cool.State() {
	case breaker.Closed:
		return nil
	case breaker.Open:
		d := time.Until(g.cool.ReadyAt())
		if d <= 0 {
			return nil // ready to turn half-open: the caller's Allow does it
		}
		t := time.NewTimer(d)
		defer t.Stop()
		timer = t.C
	}
	// Half-open with its probe out: the probe's outcome changes the state,
	// or its release broadcasts.
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-changed:
	case <-timer:
	}
	return nil
}

// waitLimiters waits for the request and token rate limiters. A call the
// request limiter would hold back takes a spare call instead, when the
// provider's bucket has one. held reports a request pace, counted in
// g.pacing from before it was taken (a mirror reading the limiter in
// between counts it once, not zero times); paced, that the call waited
// its turn in the request limiter, so that it went spaced from the calls
// around it, not in a burst (spare calls go together).
func (g *gate) waitLimiters(ctx context.Context, req, tok *rate.Limiter, tokens int) (held, paced bool, err error) {
	if req != nil {
		g.pacing.Add(1)
		paced = req.Tokens() < 1
		if paced && g.takeSpare() {
			paced = false
		} else if err := req.Wait(ctx); err != nil {
			g.pacing.Add(-1)
			return false, false, stopErr(ctx, err)
		}
	}
	if tok != nil && tokens > 0 {
		if err := tok.WaitN(ctx, min(tokens, tok.Burst())); err != nil {
			if req != nil {
				g.pacing.Add(-1)
			}
			return false, false, stopErr(ctx, err)
		}
	}
	return req != nil, paced, nil
}

// takeSpare takes one of the provider's spare calls, if one is left.
func (g *gate) takeSpare() bool {
	if g.reqConfigured {
		return false
	}
	for {
		n := g.spare.Load()
		if n <= 0 {
			return false
		}
		if g.spare.CompareAndSwap(n, n-1) {
			return true
		}
	}
}

// stopErr is ctx's cause when ctx is done, else err: a limiter refuses a
// wait that would outlast the context's deadline.
func stopErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// release gives back a permit that will not be used. A half-open probe slot
// freed this way may let a waiter through, so waiters look again.
func (g *gate) release(p breaker.Permit) {
	p.Release()
	if p.Probe() {
		g.broadcast()
	}
}

// abandon undoes what a ticket took before the call was made: the
// budget's hold, the slot, the call counted as executing (a route's gate
// that refuses the call after the run's gate let it through) and the
// cooldown's permit. The run breaker's permit is the caller's to release.
func (g *gate) abandon(t *ticket) {
	g.settle(t)
	g.conc.ended(t.call, outcomeNeutral, 0)
	t.call = callStart{}
	if t.slot {
		g.conc.release()
		t.slot = false
	}
	g.release(t.cool)
	t.cool = breaker.Permit{}
}

// reserve checks the budget before a call, counting the calls already under
// way at their estimates, and holds this call's estimate against the token
// budget until the call returns. With a shared ledger the ledger does both,
// for every engine that shares it.
func (g *gate) reserve(ctx context.Context, estimate int) (int64, error) {
	b := g.budget
	if !b.set() {
		return 0, nil
	}
	var held int64
	if b.MaxTokens > 0 {
		held = int64(estimate)
	}
	if g.ledger != nil {
		if err := g.ledger.Reserve(ctx, b, held); err != nil {
			if ctx.Err() != nil {
				// The run stopped while the ledger was asked: not the
				// ledger's failure.
				return 0, context.Cause(ctx)
			}
			if reached, ok := errors.AsType[*BudgetError](err); ok {
				return 0, reached
			}
			return 0, &ledgerError{"the budget's ledger", err}
		}
		return held, nil
	}
	waiting := false
	defer func() {
		if waiting {
			g.budgetWaiters.Add(-1)
		}
	}()
	for {
		changed := *g.changed.Load()
		// Holds first, then spend: a call's spend is counted before it
		// gives back its hold, so spend read after the holds covers every
		// hold found given back. Read the other way round, a call ending
		// in between was in neither, and the budget was overspent.
		reserved := g.reserved.Add(held)
		used, cost := g.spent()
		if b.MaxCostUSD > 0 && cost >= b.MaxCostUSD {
			g.reserved.Add(-held)
			return 0, &BudgetError{BudgetCostDetail(b.MaxCostUSD, cost)}
		}
		if b.MaxTokens <= 0 {
			return held, nil
		}
		if used+reserved <= b.MaxTokens {
			return held, nil
		}
		g.reserved.Add(-held)
		if used+held > b.MaxTokens || reserved == held {
			return 0, &BudgetError{BudgetTokensDetail(b.MaxTokens, used, reserved)}
		}
		// Only the estimates of the calls under way leave no room: they
		// usually spend less (max_tokens is a cap), so wait for them
		// to settle instead of stopping a run that spent a fraction of
		// its budget.
		if !waiting {
			// Counted first, then looked at again: a settle from now on
			// wakes this call.
			waiting = true
			g.budgetWaiters.Add(1)
			continue
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-changed:
		}
	}
}

// BudgetTokensDetail says that budget.max_tokens is reached, with used
// tokens spent and reserved more held by calls under way or about to go.
func BudgetTokensDetail(max, used, reserved int64) string {
	return fmt.Sprintf("budget.max_tokens of %d reached (%d used, %d more under way or next)", max, used, reserved)
}

// BudgetCostDetail says that budget.max_cost_usd is reached, with spent
// dollars spent.
func BudgetCostDetail(max, spent float64) string {
	return fmt.Sprintf("budget.max_cost_usd of $%.4f reached ($%.4f spent)", max, spent)
}

// settle gives back what a ticket holds against the budget and, with a
// shared ledger, tells it what the call spent.
func (g *gate) settle(t *ticket) {
	if g.ledger != nil {
		if g.budget.set() && (t.tokens != 0 || t.usedTokens != 0 || t.costUSD != 0) {
			g.ledger.Settle(t.tokens, t.usedTokens, t.costUSD)
		}
	} else if t.tokens != 0 {
		g.reserved.Add(-t.tokens)
		if g.budgetWaiters.Load() > 0 {
			// Calls waiting in reserve for the estimates of calls under
			// way look again; with none waiting, a call's end wakes
			// nobody (a broadcast makes a channel).
			g.broadcast()
		}
	}
	t.tokens, t.usedTokens, t.costUSD = 0, 0, 0
}

// callEnded returns what the call's ticket holds and tells adaptive
// concurrency the outcome; it returns the concurrency limit and whether it
// moved. cooldownFailed says the call met a new provider cooldown (its
// probe, if it was one, failed).
func (g *gate) callEnded(t *ticket, o outcome, cooldownFailed bool) (limit int, moved bool) {
	g.settle(t)
	var perSecond float64
	if l := g.req.Load(); l != nil && l.Limit() != rate.Inf {
		perSecond = float64(l.Limit())
	}
	limit, moved = g.conc.ended(t.call, o, perSecond)
	t.call = callStart{}
	if t.slot {
		g.conc.release()
		t.slot = false
	}
	if cooldownFailed {
		g.release(t.cool)
	} else {
		t.cool.Success()
	}
	t.cool = breaker.Permit{}
	return limit, moved
}

// cooldown pauses every call until the given instant; a later cooldown
// extends an earlier one. It reports whether it extended anything.
func (g *gate) cooldown(until time.Time) bool {
	if !until.After(time.Now()) {
		return false
	}
	if g.cool.State() == breaker.Open && !until.After(g.cool.ReadyAt()) {
		return false
	}
	g.coolMu.Lock()
	defer g.coolMu.Unlock()
	g.cooled.Add(1)
	g.cool.TripUntil(until)
	g.cooled.Add(1)
	return true
}

// coolingSince reports whether a cooldown began after the count at was
// read from g.cooled, or was being set as it was read. A caller that read
// the count, then found the gate free, and later meets a cooldown tells
// by it whether the cooldown is one it could have seen. Two separate
// reads cannot tell it with one increment: counted before the cooldown is
// in force, the count can be read with the gate still free; counted
// after, the gate can be met cooling with the count not yet moved
// (TestAnItemThatChoseARouteBeforeItsCooldownGoesElsewhere failed either
// way, 1 in 1,000 runs under -race).
func (g *gate) coolingSince(at uint64) bool {
	return at%2 == 1 || g.cooled.Load() != at
}

// learn takes the provider's rate-limit headers: the limits they name pace
// calls when the spec named none, and an exhausted quota is a cooldown.
// It returns the cooldown it set, if any.
//
// Both providers' quotas are buckets that hold a minute of the limit and
// refill continuously; their reset headers say when the bucket is full
// again. A learned limiter mirrors that bucket: it holds up to a minute,
// refills at the limit, and at every answer gives up what it holds beyond
// what the headers say remains less the calls still under way. A job that
// starts on a rested quota then spends it at once, as a client told the
// exact limit does, and meets the pace when it runs low, without a burst
// from a limiter fuller than the provider's bucket. Headers that came with
// a call the limiter paced are dated by that call (learnFrom).
func (g *gate) learn(q Quota, executing int) (until time.Time, reason string) {
	return g.learnFrom(q, executing, callStart{})
}

// learnFrom is learn for headers that came with the answer to call c: the
// learned request limiter then mirrors the bucket as it is now, dated by
// the calls started since c (mirrorDated), rather than as it was when c
// went.
func (g *gate) learnFrom(q Quota, executing int, c callStart) (until time.Time, reason string) {
	g.learnMu.Lock()
	defer g.learnMu.Unlock()
	now := time.Now()
	g.quota.Store(&quotaSeen{Quota: q, at: now, call: c})
	if q.RequestsLimit > 0 && !g.reqConfigured {
		perMinute := float64(q.RequestsLimit) * float64(time.Minute) / float64(q.window())
		if c.spaced && q.RequestsRemaining >= 0 {
			g.mirrorDated(now, perMinute, q.RequestsRemaining, c)
		} else {
			// Spare calls stand only on the latest dated count.
			g.spare.Store(0)
			g.mirror(&g.req, now, perMinute, q.RequestsRemaining, executing, 1)
		}
	}
	if q.TokensLimit > 0 && !g.tokConfig {
		g.mirror(&g.tok, now, float64(q.TokensLimit)*float64(time.Minute)/float64(q.window()), q.TokensRemaining, executing, 0)
	}
	if d, ok := refillFor(q.RequestsLimit, q.RequestsRemaining, q.RequestsReset, q.window(), executing); ok {
		until, reason = now.Add(d), "provider request quota nearly exhausted"
	}
	if d, ok := refillFor(q.TokensLimit, q.TokensRemaining, q.TokensReset, q.window(), 1); ok && now.Add(d).After(until) {
		until, reason = now.Add(d), "provider token quota exhausted until its reset"
	}
	if q.RetryAfter > 0 && !q.showsRoom() {
		// The server's explicit word on when to come back wins over what
		// its counts imply, shorter or longer: the counts are a model of
		// its bucket, the hint is the bucket speaking (docs/concurrency.md).
		// A hint beside counts that show room is about its own call (a
		// sporadic 429): re-anchoring the pace on it dropped the queue of
		// paced calls, a call's refill each time.
		hinted := now.Add(q.RetryAfter)
		if !until.IsZero() {
			until, reason = hinted, "provider quota exhausted until its retry hint"
		}
		g.admitAt(hinted)
		g.hinted.Store(hinted.UnixNano())
		g.spare.Store(0)
	}
	return until, reason
}

// learnedPerMinute is the request and token limits per minute the gate
// learned from the provider's headers, rounded; 0 for a limit the spec
// told (it is not learned) or not learned yet.
func (g *gate) learnedPerMinute() (requests, tokens int) {
	perMinute := func(p *atomic.Pointer[rate.Limiter], told bool) int {
		l := p.Load()
		if told || l == nil || l.Limit() == rate.Inf {
			return 0
		}
		return int(math.Round(float64(l.Limit()) * 60))
	}
	return perMinute(&g.req, g.reqConfigured), perMinute(&g.tok, g.tokConfig)
}

// showsRoom reports whether q's counts say the quota is not spent: some
// requests remain, and tokens too when they are counted. Absent counts
// show nothing.
func (q Quota) showsRoom() bool {
	return q.RequestsRemaining > 0 && q.TokensRemaining != 0
}

// admitAt makes a learned request limiter let a call go at the instant
// the server named, when the limit it learned would hold calls longer: at
// 3 a minute a drained limiter waits 20s for its next call where the
// server's retry-after-ms said 2.5s. A limiter the spec set is the
// operator's pace and stays. Calls already asleep in the old limiter keep
// their turn; calls that come to it later are paced anew.
func (g *gate) admitAt(at time.Time) {
	l := g.req.Load()
	if l == nil || g.reqConfigured || l.TokensAt(at) >= 1 {
		return
	}
	perCall := time.Duration(float64(time.Second) / float64(l.Limit()))
	n := rate.NewLimiter(l.Limit(), l.Burst())
	// Emptied one call's refill before at, it holds one call at at.
	n.ReserveN(at.Add(-perCall), l.Burst())
	g.req.CompareAndSwap(l, n)
}

// mirror makes or moves the learned limiter in p to a provider bucket of
// perMinute with remaining left, perCall of it held by each call under way
// (a call's tokens are not known here: 0). A remaining count of -1 means
// the provider sent none: the limiter then holds one second of the limit,
// not a minute it cannot see.
func (g *gate) mirror(p *atomic.Pointer[rate.Limiter], now time.Time, perMinute float64, remaining, executing, perCall int) {
	l := learned(p, now, perMinute, remaining >= 0)
	if remaining < 0 {
		return
	}
	if excess := int(l.TokensAt(now)) - max(remaining-executing*perCall, 0); excess > 0 {
		l.ReserveN(now, excess)
	}
}

// learned makes or moves the learned limiter in p to perMinute, holding a
// minute of it when the provider counts what remains (counted), else one
// second, and returns it.
func learned(p *atomic.Pointer[rate.Limiter], now time.Time, perMinute float64, counted bool) *rate.Limiter {
	burst := max(int(perMinute), 1)
	if !counted {
		burst = max(int(math.Ceil(perMinute/60)), 1)
	}
	l := p.Load()
	if l == nil {
		p.CompareAndSwap(nil, rate.NewLimiter(rate.Limit(perMinute/60), burst))
		l = p.Load()
	} else if math.Abs(float64(l.Limit())-perMinute/60) > 1e-9 || l.Burst() != burst {
		l.SetLimitAt(now, rate.Limit(perMinute/60))
		l.SetBurstAt(now, burst)
	}
	return l
}

// mirrorDated makes the learned request limiter mirror the provider's
// bucket as it is now, from the remaining count of the answer to call c:
// the bucket held remaining when c went, has refilled since c started,
// and every call started since has taken from it. mirror's reading of the
// same count, less the calls under way, dates it a round trip back and so
// leaves a round trip's refill in the bucket for good (a third of a second
// of a 6,000 rpm run at 300 ms), and never gives back what the limiter
// threw away (paces a cooldown made stale, a first round trip sent at
// concurrency 4): the provider's bucket held 60 unused calls all run
// long. What the limiter holds, the calls holding its paces and the spare
// calls left are brought to that estimate less spareReserve: a shortfall
// becomes spare calls, which go without waiting on the limiter; an excess
// is given up, by the limiter first.
func (g *gate) mirrorDated(now time.Time, perMinute float64, remaining int, c callStart) {
	l := learned(&g.req, now, perMinute, true)
	perSecond := perMinute / 60
	bucket := float64(remaining) + perSecond*now.Sub(c.at).Seconds() - float64(g.conc.starts.Load()-c.seq)
	// A bucket holds a minute; what is planned keeps a reserve. The
	// limiter below zero owes the paces of the calls asleep in it, which
	// pacing counts: the two add up to what the calls it let through
	// and will let through will spend. They are read while calls move:
	// off by the one or two that moved meanwhile, which the next answer
	// corrects.
	short := min(bucket, perMinute) - spareReserve(perSecond) - float64(g.pacing.Load()) - l.TokensAt(now)
	spare := int64(0)
	switch {
	case short <= -1:
		// More is planned than the bucket holds: the next paces wait
		// for the refill, or the calls meet an empty bucket.
		l.ReserveN(now, min(int(math.Ceil(-short)), l.Burst()))
	case now.UnixNano() >= g.hinted.Load():
		// A debt for a server's retry hint (admitAt) is not made up
		// with spare calls while the hint holds.
		spare = int64(math.Floor(short))
	}
	g.spare.Store(spare)
}

// spareReserve is what mirrorDated leaves in the provider's bucket at a
// request rate of perSecond: 100 ms of the rate, at least two calls. The
// estimate dates a call by its start in tenax, before the provider counts
// it (by milliseconds, tens of them on a loaded machine), and a bucket
// that reaches empty answers "nothing remaining", a cooldown and a probe's
// round trip for every call. With 50 ms, 6,000 rpm on a machine at load 6
// met that about once a second.
func spareReserve(perSecond float64) float64 { return max(2, perSecond*0.1) }

// refillFor is the pause an exhausted quota calls for. With the limit
// known, the reset (until the bucket is full) shared out over what is
// missing is one call's refill: pause for that when nothing remains, and
// leave the learned limiter, which holds no more than remains, to pace the
// rest. That holds for a bucket of a window refilled continuously, whose
// reset from empty is about the window. A reset under half of it says the
// server counts otherwise (a fixed window that ends then, or a shorter
// one): nothing comes back before it, so the pause is the whole reset.
// With the limit unknown, paceFor.
func refillFor(limit, remaining int, reset, window time.Duration, inFlight int) (time.Duration, bool) {
	if limit <= 0 {
		return paceFor(remaining, reset, inFlight)
	}
	if remaining != 0 || reset <= 0 {
		return 0, false
	}
	if reset < window/2 {
		return reset, true
	}
	return reset / time.Duration(limit), true
}

// quotaRoom reports whether the provider's latest headers, seen within
// the last few seconds, showed room for more calls than are under way: a
// 429 then is sporadic (a provider hiccup), not the shared limit.
func (g *gate) quotaRoom(executing int) (room, known bool) {
	q := g.quota.Load()
	if q == nil || time.Since(q.at) > 5*time.Second {
		return false, false
	}
	known = q.RequestsRemaining >= 0 || q.TokensRemaining >= 0
	room = (q.RequestsRemaining < 0 || q.RequestsRemaining > executing) && q.TokensRemaining != 0
	return room, known
}

// quotaRoomFor is quotaRoom for a 429 met by call c, when the latest
// headers came with the answer to a call too: the bucket they counted,
// refilled between the two calls' starts, less the calls started from
// the one to the other, held c's request or not (with c's own headers:
// something remained beside it). Compared with the calls under way
// instead, a bucket that mirrorDated spends down to its reserve read
// every sporadic 429 as the limit, and each paused every call for a
// probe's round trip.
func (g *gate) quotaRoomFor(c callStart, executing int) (room, known bool) {
	q := g.quota.Load()
	if q == nil || q.call.seq == 0 || c.seq == 0 || q.RequestsLimit <= 0 || q.RequestsRemaining < 0 {
		return g.quotaRoom(executing)
	}
	if time.Since(q.at) > 5*time.Second {
		return false, false
	}
	perSecond := float64(q.RequestsLimit) / q.window().Seconds()
	level := float64(q.RequestsRemaining) + perSecond*c.at.Sub(q.call.at).Seconds() - (float64(c.seq) - float64(q.call.seq))
	return level >= 1 && q.TokensRemaining != 0, true
}

// paceFor turns a quota's remaining count and reset time into a pause: none
// while more than inFlight calls remain; the whole reset when nothing
// remains; otherwise the reset shared out among what remains, so that the
// calls waiting for the last few slots go one by one (after a cooldown one
// probe goes first) instead of all at once into a 429. A remaining count of
// -1 means the provider sent none.
func paceFor(remaining int, reset time.Duration, inFlight int) (time.Duration, bool) {
	if remaining < 0 || reset <= 0 || remaining >= max(inFlight, 1) {
		return 0, false
	}
	return reset / time.Duration(remaining+1), true
}

// limiter is the call concurrency limit: a counting semaphore whose limit
// can move while it is held, with waiters served in arrival order so that
// items keep their input order and a release wakes one waiter, not all.
// With Config.Adaptive it moves by the rules in adaptive.go.
type limiter struct {
	mu      sync.Mutex
	limit   int
	used    int
	waiters []chan struct{} // FIFO; a receive means the slot is yours
	adapt   *adaptive       // nil when the limit is fixed

	executing atomic.Int64 // calls between started and release
	// starts counts the calls started, ever: the calls started after one
	// are what has been taken from the provider's bucket since its answer
	// counted it (gate.mirrorDated).
	starts atomic.Uint64
}

// tryAcquire takes a call slot if one is free and nobody waits for one.
// full reports that it was the last free one: concurrency, not something
// else, is what holds calls back.
func (l *limiter) tryAcquire() (full, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.used < l.limit && len(l.waiters) == 0 {
		l.used++
		return l.used >= l.limit, true
	}
	return false, false
}

// acquire waits for a call slot, served in arrival order.
func (l *limiter) acquire(ctx context.Context) error {
	l.mu.Lock()
	if l.used < l.limit && len(l.waiters) == 0 {
		l.used++
		l.mu.Unlock()
		return nil
	}
	ch := make(chan struct{}, 1)
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		for i, w := range l.waiters {
			if w == ch {
				l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
				l.mu.Unlock()
				return context.Cause(ctx)
			}
		}
		l.mu.Unlock()
		// Granted as we gave up: hand the slot on.
		l.release()
		return context.Cause(ctx)
	}
}

// started marks a call under way and returns what adaptive concurrency
// needs to judge its outcome.
func (l *limiter) started(atCapacity bool) callStart {
	l.executing.Add(1)
	c := callStart{counted: true, atCapacity: atCapacity, seq: l.starts.Add(1), at: time.Now()}
	if l.adapt != nil {
		c.gen = l.adapt.gen.Load()
	}
	return c
}

// release gives a slot back, to the first waiter if there is one.
func (l *limiter) release() {
	l.mu.Lock()
	l.used--
	l.grantLocked()
	l.mu.Unlock()
}

// grantLocked hands free slots to waiters. l.mu must be held.
func (l *limiter) grantLocked() {
	for l.used < l.limit && len(l.waiters) > 0 {
		ch := l.waiters[0]
		l.waiters[0] = nil
		l.waiters = l.waiters[1:]
		l.used++
		ch <- struct{}{}
	}
}

// Limit returns the current limit.
func (l *limiter) Limit() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.limit
}

// setLimit moves the limit; slots above a lowered limit are not taken back,
// they are simply not handed on until the calls holding them end.
func (l *limiter) setLimitLocked(n int) {
	l.limit = n
	l.grantLocked()
}
