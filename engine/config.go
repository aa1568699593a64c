package engine

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Config is what the engine needs besides the task, the items and the
// checkpoint. The zero value runs one item at a time with the default retry
// policy and breaker, no validation and the abort trip action.
type Config struct {
	// Concurrency is the most items in flight (default 8).
	Concurrency int
	// Adaptive makes Concurrency a ceiling: the limit on calls at once
	// starts at InitialConcurrency and finds the provider's capacity by
	// itself (slow start, then one more per round trip; down on 429s that
	// are a pattern, at most once per round trip). See adaptive.go.
	Adaptive bool
	// InitialConcurrency is where adaptive concurrency starts (default
	// min(4, Concurrency)).
	InitialConcurrency int

	// Retry is the per-item retry policy; its Classifier classifies every
	// error the task returns.
	Retry retry.Policy
	// Breaker configures the circuit breaker. Its OnStateChange is
	// wrapped, not replaced: the engine needs it too.
	Breaker breaker.Settings
	// OnTrip is what happens when the breaker opens.
	OnTrip TripAction
	// BreakerCount lists the classes of final failures that count toward
	// the breaker; nil counts every class (docs/classes.md, "What counts"). A final
	// failure of another class neither counts nor resets the count.
	BreakerCount []classify.Class
	// Operator is asked on TripPrompt and at check-ins. Without one,
	// TripPrompt acts as TripAbort and check-ins are skipped.
	Operator Operator

	// Validator checks each output; nil accepts every output.
	Validator Validator
	// Heal bounds the re-asks of an item whose output is invalid.
	Heal heal.Budget
	// NoHeal fails an invalid output at once, without re-asking
	// (heal.max_attempts: 0 in a spec).
	NoHeal bool
	// Hints are matched against validation errors and added to feedback.
	Hints []heal.Hint
	// Carried holds, by item index, what items spent before this engine
	// runs them (the batch waves before a batch job's online tail): their
	// heal budgets and retry streaks continue instead of starting afresh.
	// Nil for a plain run.
	Carried map[int]*Carried
	// Cache, when set, is told about cached outputs that proved invalid,
	// and given a healed output as the answer to the item's first
	// question (docs/heal.md, "A heal is remembered").
	Cache ResponseCache

	// RequestsPerMinute and TokensPerMinute pace calls (0 = unlimited).
	// Tokens are estimated before a call when the task implements
	// Estimator, and corrected from the usage it reports.
	RequestsPerMinute int
	TokensPerMinute   int

	// Pacing reproduces older tools' batches, for those who need them.
	Pacing Pacing

	// CheckinEvery pauses after every N finished items to ask the
	// Operator whether to go on (0 = never).
	CheckinEvery int

	// Budget stops dispatch, like an operator abort, once reached.
	Budget Budget
	// QuotaShare, when set, is the share of a provider's quota this engine
	// may learn from its rate-limit headers: 1/N for one of the N workers
	// of a job, which all see the same headers. The limits and remaining
	// counts that ObserveQuota learns are scaled by it, so N engines
	// together spend a rested quota once and pace at the limit, not N
	// times it. Nil, or a share of 1 or more, is all of it; limits the
	// spec set are not scaled.
	QuotaShare func() float64

	// Ledger, when set, keeps Budget's account in place of this engine's
	// own, so that engines in many processes spend one budget (the workers
	// of a job: package worker keeps it in PostgreSQL). Nil keeps it here.
	Ledger Ledger
	// SharedLimiter, when set, paces calls by rate limits kept outside the
	// engine, shared with engines in other processes (the workers of a
	// job: package worker keeps them in PostgreSQL). It is asked after
	// this engine's own limiters, before a call slot is taken. Nil shares
	// none.
	SharedLimiter SharedLimiter
	// SharedBreaker, when set, holds calls while another engine's breaker
	// is open and hears of the cooldowns this engine begins. Nil shares
	// none.
	SharedBreaker SharedBreaker

	// Total is the number of items of the input, for progress and reports.
	// Skipped is how many of them a resume skips.
	Total   int
	Skipped int
	// Planned is how many items this run means to finish, when fewer than
	// Total-Skipped (a --limit run); 0 means all of them.
	Planned int

	// Routes are the deployments the run calls, each with its own task
	// and gate (docs/routes.md); none runs the task given to New alone,
	// as always. With routes, that task is not called.
	Routes []Route
	// Routing chooses among one tier's routes.
	Routing Routing
	// Fallbacks says which failures move an item to another route.
	Fallbacks Fallbacks
	// SharedRoute, when set, gives each route the state it shares with
	// the other engines of the job (the workers of a job: package worker
	// keeps it in PostgreSQL): its breaker, its cooldowns and its told
	// rate limits. It is called once per route by New. Nil keeps each
	// route's state in this engine alone.
	SharedRoute func(name string) SharedRoute

	// OnEvent receives every event. It is called from the engine's
	// goroutines, outside its locks, and must not block.
	OnEvent func(Event)
}

// Pacing spaces dispatches out: batches of BatchSize items with BatchDelay
// between batches (each batch finishes before the next starts), and
// ItemDelay between two dispatches.
type Pacing struct {
	BatchSize  int
	BatchDelay time.Duration
	ItemDelay  time.Duration
}

// Budget caps what a run may spend. Both are checked before each call.
type Budget struct {
	MaxCostUSD float64
	MaxTokens  int64
}

// set reports whether the budget caps anything.
func (b Budget) set() bool { return b.MaxTokens > 0 || b.MaxCostUSD > 0 }

// Ledger is a budget's account kept outside the engine, shared with other
// engines that spend the same budget. The engine asks it before each call
// that makes a request and tells it how each call ended; it keeps no
// account of its own then.
type Ledger interface {
	// Reserve checks b against what every engine sharing the ledger has
	// spent and holds for its calls under way, and holds tokens (the
	// call's estimate, 0 without a token budget) for this call. A reached
	// budget holds nothing and returns a *BudgetError; any other error is
	// the ledger failing, which stops the run as a storage failure does.
	Reserve(ctx context.Context, b Budget, tokens int64) error
	// Settle gives back what Reserve held for a call that ended (or never
	// started) and adds what it spent. It is called as each call ends and
	// must not block.
	Settle(held, usedTokens int64, costUSD float64)
}

// SharedLimiter is request and token rate limits kept outside the engine
// and spent by every engine that shares them.
type SharedLimiter interface {
	// Wait takes one request's turn and, when tokens > 0, that many
	// tokens' turn, and waits for it. It returns ctx's cause when ctx ends
	// first; any other error is the shared state failing to answer, which
	// stops the run as a storage failure does.
	Wait(ctx context.Context, tokens int) error
}

// SharedBreaker is the breaker and provider cooldown state an engine
// shares with the other engines of one job.
type SharedBreaker interface {
	// Hold reports whether another engine's breaker holds every call,
	// and a channel that is closed once that may have changed.
	Hold() (held bool, changed <-chan struct{})
	// Cooldown tells the other engines of a cooldown this engine began
	// after a 429 (its retry hint, capped by retry.Policy.MaxHint). It is
	// called as the call that met it ends.
	Cooldown(until time.Time)
}

// SharedRoute is one route's state kept outside the engine, shared with
// the other engines of a job, so that one engine's finding about a route
// holds them all: an outage opens the route's breaker once for the job, a
// 429's cooldown pauses every engine's calls to it. The engine tells it
// of the changes it makes and follows the ones the others made (Follow).
// Its methods must not block, but Wait.
type SharedRoute interface {
	// Wait is the route's told rate limits (Route.RequestsPerMinute,
	// TokensPerMinute), spent by every engine, as SharedLimiter is the
	// run's.
	SharedLimiter
	// Opened says this engine's breaker of the route opened (or a probe
	// failed and it opened again) until the given instant, when it lets
	// probes through.
	Opened(until time.Time)
	// Closed says this engine's breaker of the route closed: a probe was
	// answered, or the operator continued.
	Closed()
	// Cooldown says this engine began a cooldown on the route: a 429's
	// retry hint, an exhausted quota.
	Cooldown(until time.Time)
	// Follow returns the route's state as the engines last shared it, and
	// a channel closed once it may have changed.
	Follow() (RouteState, <-chan struct{})
}

// RouteState is one route's state as the engines of a job share it.
type RouteState struct {
	// Open says some engine opened the route's breaker and none closed it
	// since; OpenUntil is when it lets probes through.
	Open      bool
	OpenUntil time.Time
	// Cooldown is when the route's latest cooldown ends.
	Cooldown time.Time
}

// BudgetError is a budget reached: dispatch stops (StopBudget) and the
// item stays pending. Detail says which budget and where it stands.
type BudgetError struct{ Detail string }

func (e *BudgetError) Error() string { return e.Detail }

// TripAction is what the engine does when the breaker opens.
type TripAction uint8

const (
	// TripAbort stops the run: in-flight calls finish and are recorded,
	// everything else stays pending.
	TripAbort TripAction = iota
	// TripPrompt asks the Operator: continue (reset the breaker) or abort.
	TripPrompt
	// TripWait waits out the breaker's reset timeout, then lets its probes
	// through; success closes it, failure opens it again.
	TripWait
)

// String returns the action's spec name.
func (a TripAction) String() string {
	switch a {
	case TripPrompt:
		return "prompt"
	case TripWait:
		return "wait"
	default:
		return "abort"
	}
}

// Validator checks an output; an error means the output is invalid and the
// heal loop re-asks. Package validate implements it.
type Validator interface {
	Validate(ctx context.Context, output json.RawMessage) error
}

// ResponseCache is the response cache as the engine sees it: an entry
// whose output proved invalid is rejected so that the next run
// regenerates it, and an output that passed after re-asks is put under
// the key of the item's first question (Next.Remember), so that the next
// run is served it at once. Package cache implements it.
type ResponseCache interface {
	Reject(key string, reason string) error
	Put(key string, value []byte) error
}

// Cacher is implemented by tasks with a response cache: an item it would
// serve from the cache makes no call, so it passes the rate limiters,
// cooldowns and budget without waiting.
type Cacher interface {
	Cached(item task.Item) bool
}

// Quota is what a provider's rate-limit headers said on a response. A count
// whose header was absent is -1; a reset that was absent is 0.
// Engine.ObserveQuota takes it: the limits pace calls when the spec set
// none, and an exhausted quota pauses dispatch until its reset.
type Quota struct {
	// RequestsLimit and RequestsRemaining count requests per minute.
	RequestsLimit, RequestsRemaining int
	// TokensLimit and TokensRemaining count tokens per minute.
	TokensLimit, TokensRemaining int
	// RequestsReset and TokensReset are how long until the quotas are
	// whole again.
	RequestsReset, TokensReset time.Duration
	// RetryAfter is the server's explicit retry hint on the same response
	// (retry-after-ms, Retry-After), 0 when it gave none. It wins over
	// what the counts imply: an exhausted quota pauses until the hint
	// expires, and a limiter learned from the counts lets a call go then.
	RetryAfter time.Duration
}

// share scales q's limits and remaining counts to f of them (0 < f < 1),
// rounding down but keeping a known limit at 1 or more; other f leave q
// whole. Resets stay: a share refills as fast as the whole.
func (q Quota) share(f float64) Quota {
	if !(f > 0 && f < 1) {
		return q
	}
	scale := func(n int, keepOne bool) int {
		if n <= 0 {
			return n
		}
		m := int(float64(n) * f)
		if keepOne {
			m = max(m, 1)
		}
		return m
	}
	q.RequestsLimit, q.RequestsRemaining = scale(q.RequestsLimit, true), scale(q.RequestsRemaining, false)
	q.TokensLimit, q.TokensRemaining = scale(q.TokensLimit, true), scale(q.TokensRemaining, false)
	return q
}

// window is the period the limits are counted over. Both providers state
// their rate limits per minute.
func (Quota) window() time.Duration { return time.Minute }

// Estimator is implemented by tasks that can estimate the tokens a call will
// consume before making it, for the tokens-per-minute limit and the budget.
type Estimator interface {
	EstimateTokens(item task.Item) int
}

// Checkpoint is where the engine records outcomes: all it asks of a
// store.Job.
type Checkpoint interface {
	// Append writes records; a record appended is the item's outcome. Do
	// gives it Do's context, without its cancellation.
	Append(ctx context.Context, recs ...store.Record) error
	// Flush makes the records appended so far durable.
	Flush(ctx context.Context) error
}

// Source yields the items of a run in idx order; io.EOF ends it. An error
// of type *BadItem is an item that cannot run (an unreadable input line):
// the engine records it as failed with class item and goes on. Any other
// error stops the run.
type Source interface {
	Next() (task.Item, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func() (task.Item, error)

// Next calls f.
func (f SourceFunc) Next() (task.Item, error) { return f() }

// BadItem is an item that failed before any call.
type BadItem struct {
	Item task.Item
	Err  error
}

func (b *BadItem) Error() string { return b.Err.Error() }

// Unwrap returns the reason the item is bad.
func (b *BadItem) Unwrap() error { return b.Err }

// Failure is one item's final failure, kept for reports and Inspect.
type Failure struct {
	Item     task.Item
	Err      error
	Decision ClassDecision
	Attempts int
}

// Carried is what one item spent before an engine runs it (a batch job's
// waves). The engine owns it once given and goes on from it, as if it had
// made those calls itself: the item's record counts them.
type Carried struct {
	// State is the item's state so far: its calls, re-asks (feedback is
	// numbered after them), heal tracker, usage and cost, and when it
	// started. A nil State.Retrier starts the retry streak afresh; a
	// zero Started starts the clock at the engine's first call.
	State State
	// Tries are the routes the item left before (a routed batch job's
	// waves): its record lists them first, and the engine sends the
	// item to a route it has not left while one remains, as if it had
	// left them itself; a try's Fallback still says what the item
	// needs of the next route.
	Tries []store.Try
}
