package engine

import (
	"context"
	"errors"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// stepCtx is ctx for one attempt of a task: with a budget, it carries the
// check a task of many model calls (an agent item) asks between them
// (task.StepCheck), so that a long loop stops at the budget rather than
// at the end of its attempt.
func (e *Engine) stepCtx(ctx context.Context) context.Context {
	if !e.cfg.Budget.set() {
		return ctx
	}
	return task.WithStepCheck(ctx, e.stepCheck)
}

// stepCheck checks the budget between two model calls of one attempt:
// what the run has spent with what the attempt's steps spent so far
// (tokens, costUSD), not counted yet. As before a call, max_cost_usd is
// reached once spent, and max_tokens when the next call would pass it:
// the next step is estimated at the mean of the attempt's steps. A reached budget stops the run as one met
// before a call does (StopBudget), and the error, classed canceled, leaves
// the item pending: its recorded steps are replayed by a resume. With a
// shared ledger the job's account is asked, holding the attempt's tokens
// for the moment of the check.
func (e *Engine) stepCheck(ctx context.Context, steps int, tokens int64, costUSD float64) error {
	b := e.cfg.Budget
	var reached *BudgetError
	next := tokens / int64(max(steps, 1))
	if e.cfg.Ledger != nil {
		held := int64(0)
		if b.MaxTokens > 0 {
			held = tokens + next
		}
		err := e.cfg.Ledger.Reserve(ctx, b, held)
		if err == nil {
			e.cfg.Ledger.Settle(held, 0, 0)
			return nil
		}
		var ok bool
		if reached, ok = errors.AsType[*BudgetError](err); !ok {
			le := &ledgerError{"the budget's ledger", err}
			e.failRun(le)
			return classify.WithClass(le, classify.Canceled, "the budget's ledger failed between steps")
		}
	} else {
		used, spent := e.spentNow()
		switch {
		case b.MaxCostUSD > 0 && spent+costUSD >= b.MaxCostUSD:
			reached = &BudgetError{BudgetCostDetail(b.MaxCostUSD, spent+costUSD)}
		case b.MaxTokens > 0 && used+tokens+next > b.MaxTokens:
			reached = &BudgetError{BudgetTokensDetail(b.MaxTokens, used+tokens, next)}
		default:
			return nil
		}
	}
	e.Stop(StopBudget, reached.Detail+", between an item's steps")
	return classify.WithClass(reached, classify.Canceled, "budget reached between steps")
}
