package worker

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/engine"
)

// budget is a job's budget (budget.max_tokens, budget.max_cost_usd) shared
// by all its workers, as one worker's engine sees it: the engine's Ledger.
//
// The job's account is one row of tenax_budgets: the tokens and cost its
// calls spent, the estimated tokens held by its calls under way on every
// worker, and, once the budget is reached, why. Before each call the
// engine reserves the call's estimate in one UPDATE of that row, granted
// only when spent + held + the estimate stays within max_tokens and the
// cost spent is under max_cost_usd: the check and the hold are atomic, so
// N workers together keep the bound one process keeps. The same UPDATE
// carries what this worker's ended calls spent since its last write, and
// a flusher writes them when no reserve came within flushDelay: one
// statement per call.
//
// What each worker holds is kept beside, in tenax_budget_holds, so that a
// killed worker's holds do not shrink the budget forever: once it is no
// longer alive (workerAlive: its heartbeat older than its own
// rescue-after, when River rescues its items), any live worker of the job
// gives them back.
type budget struct {
	r *runner

	mu      sync.Mutex
	pending settlement // ended calls not yet written
	kick    chan struct{}
	closing chan struct{}
	flushed chan struct{} // closed when the flusher has written the last
	once    sync.Once
}

// settlement is what ended calls give back and spent.
type settlement struct {
	held, tokens, micro int64
}

func (s settlement) zero() bool { return s == settlement{} }

// account is the job's row after an UPDATE.
type account struct {
	granted            bool
	tokens, held, cost int64 // cost in millionths of a dollar
	reached            string
}

// budgetWriteTimeout bounds one write of the job's account. A write is
// not canceled with the run: a hold half-written when the run stopped
// would be held for good.
const budgetWriteTimeout = time.Minute

// reapEvery is how often a runner looks for dead workers' holds.
const reapEvery = 5 * time.Second

// newBudget opens the job's account, creating it on first use. It returns
// errJobStopped when the job's budget was reached (until a resume).
func newBudget(ctx context.Context, r *runner) (*budget, error) {
	pool := r.w.c.pool
	if _, err := pool.Exec(ctx, `INSERT INTO tenax_budgets (job_id) VALUES ($1) ON CONFLICT DO NOTHING`, r.jobID); err != nil {
		return nil, fmt.Errorf("worker: job %s: the budget: %w", r.jobID, err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO tenax_budget_holds (job_id, worker_id) VALUES ($1, $2) ON CONFLICT DO NOTHING`, r.jobID, r.w.id); err != nil {
		return nil, fmt.Errorf("worker: job %s: the budget: %w", r.jobID, err)
	}
	var reached string
	if err := pool.QueryRow(ctx, `SELECT reached FROM tenax_budgets WHERE job_id = $1`, r.jobID).Scan(&reached); err != nil {
		return nil, fmt.Errorf("worker: job %s: the budget: %w", r.jobID, err)
	}
	if reached != "" {
		return nil, errJobStopped
	}
	b := &budget{r: r, kick: make(chan struct{}, 1), closing: make(chan struct{}), flushed: make(chan struct{})}
	go b.flusher()
	return b, nil
}

// fits is the condition for a call to go, on the job's row as it was
// before the UPDATE: $3 held and $4 tokens and $5 cost settled by it, $6
// the call's estimate, $7 max_tokens and $8 max_cost_usd (in millionths),
// each 0 when unset.
const fits = `(reached = '' AND ($7::bigint <= 0 OR tokens + $4::bigint + held - $3::bigint + $6::bigint <= $7::bigint)
	AND ($8::bigint <= 0 OR cost_micro + $5::bigint < $8::bigint))`

// applySQL settles and reserves in one statement: the job's row first,
// then this worker's holds (the same order as reapHolds', so neither waits
// for the other in a cycle). granted is set from the row's old values,
// which every SET expression sees, for RETURNING to tell.
//
// Its commit does not wait for the WAL to reach the disk
// (synchronous_commit off, for this statement's transaction only): every
// call of every worker updates the job's one row, and a commit that waits
// holds its lock that long (docs/decisions.md, "Shared rows commit
// without waiting for the WAL"; a crash can lose the last ~0.6 s of spend).
const applySQL = `
WITH j AS (
	UPDATE tenax_budgets SET
		granted = ` + fits + `,
		held = held - $3::bigint + CASE WHEN ` + fits + ` THEN $6::bigint ELSE 0 END,
		tokens = tokens + $4::bigint,
		cost_micro = cost_micro + $5::bigint
	WHERE job_id = $1
	RETURNING granted, tokens, held, cost_micro, reached
), h AS (
	UPDATE tenax_budget_holds h SET held = h.held + CASE WHEN j.granted THEN $6::bigint ELSE 0 END - $3::bigint
	FROM j WHERE h.job_id = $1 AND h.worker_id = $2
)
SELECT granted, tokens, held, cost_micro, reached, set_config('synchronous_commit', 'off', true) FROM j`

// apply writes s and asks for estimate tokens under b (estimate 0 and a
// zero b only settle).
func (l *budget) apply(ctx context.Context, s settlement, estimate int64, b engine.Budget) (account, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budgetWriteTimeout)
	defer cancel()
	var a account
	var setting string
	err := l.r.w.c.pool.QueryRow(ctx, applySQL, l.r.jobID, l.r.w.id, s.held, s.tokens, s.micro, estimate, b.MaxTokens, micros(b.MaxCostUSD)).
		Scan(&a.granted, &a.tokens, &a.held, &a.cost, &a.reached, &setting)
	if errors.Is(err, pgx.ErrNoRows) {
		err = errors.New("the job's budget row is missing")
	}
	if err != nil {
		return a, fmt.Errorf("worker: job %s: the budget: %w", l.r.jobID, err)
	}
	return a, nil
}

// Reserve implements engine.Ledger: it holds tokens for a call when the
// job's budget has room for them beside what every worker spent and
// holds. The first worker refused records why in the job's row and pauses
// the job's queue; every worker then stops the job with that reason.
func (l *budget) Reserve(ctx context.Context, b engine.Budget, tokens int64) error {
	s := l.take()
	a, err := l.apply(ctx, s, tokens, b)
	if err != nil {
		l.add(s)
		return err
	}
	if a.granted {
		return nil
	}
	reason := a.reached
	if reason == "" {
		// A run built before a resume holds the limit the spec had
		// then: it stops, and a run built from the spec as resumed
		// decides. (A failed read decides here: the limit was reached
		// by this run's spec, and reach records it.)
		if resumed, err := l.r.resumed(ctx); err == nil && resumed {
			l.r.stop(stopResumed)
			return &engine.BudgetError{Detail: stopResumed}
		}
		if b.MaxTokens > 0 && a.tokens+a.held+tokens > b.MaxTokens {
			reason = engine.BudgetTokensDetail(b.MaxTokens, a.tokens, a.held+tokens)
		} else {
			reason = engine.BudgetCostDetail(b.MaxCostUSD, float64(a.cost)/1e6)
		}
		reason = l.reach(ctx, reason+" by the job's workers together")
	}
	return &engine.BudgetError{Detail: reason}
}

// reach records that the job's budget is reached, unless another worker
// did first, and pauses the job's queue so that no worker takes its items
// (`tenax resume` resumes it). It returns the reason recorded first.
func (l *budget) reach(ctx context.Context, reason string) string {
	r := l.r
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budgetWriteTimeout)
	defer cancel()
	var first string
	err := r.w.c.pool.QueryRow(ctx, `UPDATE tenax_budgets SET reached = CASE WHEN reached = '' THEN $2 ELSE reached END
		WHERE job_id = $1 RETURNING reached`, r.jobID, reason).Scan(&first)
	if err != nil {
		r.w.log.Warn("recording the job's budget as reached failed", "job", r.jobID, "error", err)
		first = reason
	}
	if err := r.w.river.QueuePause(ctx, r.queue, nil); err != nil {
		r.w.log.Warn("pausing the job's queue failed", "job", r.jobID, "error", err)
	}
	return first
}

// Settle implements engine.Ledger: the ended call's spend waits for the
// next reserve, or the flusher after flushDelay, whichever writes first.
func (l *budget) Settle(held, usedTokens int64, costUSD float64) {
	l.add(settlement{held: held, tokens: usedTokens, micro: micros(costUSD)})
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

func (l *budget) add(s settlement) {
	l.mu.Lock()
	l.pending.held += s.held
	l.pending.tokens += s.tokens
	l.pending.micro += s.micro
	l.mu.Unlock()
}

func (l *budget) take() settlement {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.pending
	l.pending = settlement{}
	return s
}

// flushDelay is how long an ended call's spend waits for this worker's
// next reserve to carry it before the flusher writes it. Under load the
// next reserve comes at once (the engine's worker goroutine takes its
// next item), which saves a statement per call.
const flushDelay = 20 * time.Millisecond

// flusher writes ended calls' spend that no reserve carried within
// flushDelay; while a write is under way, more gather for the next.
func (l *budget) flusher() {
	defer close(l.flushed)
	t := time.NewTimer(flushDelay)
	t.Stop()
	for {
		select {
		case <-l.kick:
			t.Reset(flushDelay)
			select {
			case <-t.C:
				l.flush()
			case <-l.closing:
				l.flush()
				return
			}
		case <-l.closing:
			l.flush()
			return
		}
	}
}

// flush writes what ended calls spent; a failed write is kept for the
// next.
func (l *budget) flush() {
	s := l.take()
	if s.zero() {
		return
	}
	if _, err := l.apply(l.r.w.hard, s, 0, engine.Budget{}); err != nil {
		l.add(s)
		l.r.w.log.Warn("writing the job's spend failed; trying again", "job", l.r.jobID, "error", err)
	}
}

// close writes what is left once the engine's calls have all ended.
func (l *budget) close() {
	l.once.Do(func() { close(l.closing) })
	<-l.flushed
}

// follow stops this worker's engine once any worker reached the job's
// budget.
func (l *budget) follow(ctx context.Context) {
	r := l.r
	var reached string
	if err := r.w.c.pool.QueryRow(ctx, `SELECT reached FROM tenax_budgets WHERE job_id = $1`, r.jobID).Scan(&reached); err == nil && reached != "" {
		r.eng.Stop(engine.StopBudget, reached)
	}
}

// retry wakes the flusher, which writes again a spend whose write failed
// (nothing when none is pending).
func (l *budget) retry() {
	select {
	case l.kick <- struct{}{}:
	default:
	}
}

// reap gives back the holds of the job's dead workers.
func (l *budget) reap(ctx context.Context) {
	r := l.r
	if err := r.w.c.reapHolds(ctx, r.jobID, r.w.id); err != nil && ctx.Err() == nil {
		r.w.log.Warn("giving back dead workers' budget holds failed", "job", r.jobID, "error", err)
	}
}

// holdOfTheDead is true of a hold h whose worker is not alive by
// workerAlive — the rule, with each worker's own rescue-after, that lets
// River rescue its items — or has no row at all. Judged by the reader's
// own rescue-after, a worker started with a short one gave back the holds
// of a live worker with a longer one, whose calls under way then went
// uncounted (the budget could be overspent), and one started with a long
// one kept a dead worker's holds too long.
const holdOfTheDead = `NOT EXISTS (SELECT 1 FROM tenax_workers w WHERE w.id = h.worker_id AND ` + workerAlive + `)`

// reapHolds gives back the holds of the job's workers that are gone
// (holdOfTheDead) other than self. The job's row is locked first, as
// applySQL locks it.
func (c *Client) reapHolds(ctx context.Context, jobID, self string) error {
	var dead bool
	err := c.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tenax_budget_holds h WHERE h.job_id = $1 AND h.held <> 0 AND h.worker_id <> $2
		AND `+holdOfTheDead+`)`, jobID, self).Scan(&dead)
	if err != nil || !dead {
		return err
	}
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM tenax_budgets WHERE job_id = $1 FOR UPDATE`, jobID); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `
			WITH gone AS (
				DELETE FROM tenax_budget_holds h WHERE h.job_id = $1 AND h.held <> 0 AND h.worker_id <> $2
				AND `+holdOfTheDead+`
				RETURNING h.held)
			UPDATE tenax_budgets SET held = held - (SELECT COALESCE(sum(held), 0) FROM gone) WHERE job_id = $1`,
			jobID, self)
		return err
	})
}

// releaseHolds gives back every hold of worker id, which has no call
// under way: it is starting (a worker restarted under the same id).
func (c *Client) releaseHolds(ctx context.Context, id string) error {
	rows, err := c.pool.Query(ctx, `SELECT job_id FROM tenax_budget_holds WHERE worker_id = $1 AND held <> 0`, id)
	if err != nil {
		return err
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, jobID := range jobs {
		err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT 1 FROM tenax_budgets WHERE job_id = $1 FOR UPDATE`, jobID); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, `
				WITH gone AS (DELETE FROM tenax_budget_holds WHERE job_id = $1 AND worker_id = $2 RETURNING held)
				UPDATE tenax_budgets SET held = held - (SELECT COALESCE(sum(held), 0) FROM gone) WHERE job_id = $1`, jobID, id)
			return err
		})
		if err != nil {
			return fmt.Errorf("worker: giving back the budget holds of job %s: %w", jobID, err)
		}
	}
	return nil
}

// resetBudget starts a new account for the job: a resume spends its
// budget afresh, as a resumed single-process run does. What calls still
// under way hold stays held.
func (c *Client) resetBudget(ctx context.Context, jobID string) error {
	if _, err := c.pool.Exec(ctx, `UPDATE tenax_budgets SET tokens = 0, cost_micro = 0, reached = '' WHERE job_id = $1`, jobID); err != nil {
		return fmt.Errorf("worker: resetting the budget of job %s: %w", jobID, err)
	}
	return nil
}

// micros is usd in millionths of a dollar, as the engine counts cost.
func micros(usd float64) int64 { return int64(math.Round(usd * 1e6)) }
