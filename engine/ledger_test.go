package engine_test

import (
	"context"
	"errors"

	"math"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// memLedger is a budget's account shared by engines in one process, as
// the workers of a job share theirs in PostgreSQL.
type memLedger struct {
	mu            sync.Mutex
	used, held    int64
	cost          float64
	fail          error
	settledCalls  int
	reachedDetail string
}

func (l *memLedger) Reserve(_ context.Context, b engine.Budget, tokens int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail != nil {
		return l.fail
	}
	if b.MaxTokens > 0 && l.used+l.held+tokens > b.MaxTokens {
		l.reachedDetail = engine.BudgetTokensDetail(b.MaxTokens, l.used, l.held+tokens)
		return &engine.BudgetError{Detail: l.reachedDetail}
	}
	if b.MaxCostUSD > 0 && l.cost >= b.MaxCostUSD {
		return &engine.BudgetError{Detail: engine.BudgetCostDetail(b.MaxCostUSD, l.cost)}
	}
	l.held += tokens
	return nil
}

func (l *memLedger) Settle(held, used int64, cost float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.held -= held
	l.used += used
	l.cost += cost
	l.settledCalls++
}

// TestEnginesSharingALedgerSpendOneBudget: two engines whose calls each
// alone would stay under the budget, together over it, stop at the budget
// when they share a ledger: both stop with StopBudget and their usage
// together stays within it.
func TestEnginesSharingALedgerSpendOneBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLedger{}
		// Each engine alone would use 100 tokens × 6 items = 600 < 1,000;
		// together 1,200.
		cfg := engine.Config{Concurrency: 2, Budget: engine.Budget{MaxTokens: 1000}, Total: 6, Ledger: l}
		var wg sync.WaitGroup
		sums := make([]engine.Summary, 2)
		for i := range sums {
			wg.Go(func() {
				s, err := engine.New(cfg, &estimatingTask{}, newMemJob()).Run(context.Background(), items(6))
				if err != nil {
					t.Errorf("engine %d: %v", i, err)
				}
				sums[i] = s
			})
		}
		wg.Wait()
		var used int64
		done, stopped := 0, 0
		for i, s := range sums {
			used += s.Usage.Total()
			done += s.Done
			if s.Pending > 0 {
				stopped++
				if s.Stop != engine.StopBudget || s.Failed != 0 {
					t.Errorf("engine %d: stop %s with %d pending, %d failed (%s); want it stopped by the shared budget", i, s.Stop, s.Pending, s.Failed, s.StopDetail)
				}
			}
		}
		// Estimates are exact here: the budget holds exactly ten calls.
		if used != 1000 || done != 10 || stopped == 0 || l.used != used {
			t.Errorf("the engines used %d tokens together (ledger: %d) over %d items, %d stopped; want exactly the 1,000 budget, ten items, and a budget stop", used, l.used, done, stopped)
		}
		if l.held != 0 {
			t.Errorf("the ledger holds %d tokens after both runs ended, want every hold given back", l.held)
		}
	})
}

// TestLedgerKeepsTheAccountInsteadOfTheEngine: with a ledger, what the
// engine spent itself does not stop it; the ledger's answer does, and it
// is told every call's spend, cost included.
func TestLedgerKeepsTheAccountInsteadOfTheEngine(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &memLedger{used: 950}
		e := engine.New(engine.Config{Concurrency: 1, Budget: engine.Budget{MaxTokens: 1000}, Total: 5, Ledger: l}, &estimatingTask{}, newMemJob())
		s, err := e.Run(context.Background(), items(5))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBudget || s.Done != 0 || s.StopDetail != l.reachedDetail {
			t.Errorf("stop %s after %d items (%q), want budget at once with the ledger's detail %q: 950 tokens spent elsewhere", s.Stop, s.Done, s.StopDetail, l.reachedDetail)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		l := &memLedger{}
		tk := costTask{usd: 0.25}
		e := engine.New(engine.Config{Concurrency: 1, Budget: engine.Budget{MaxCostUSD: 1}, Total: 10, Ledger: l}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(10))
		if err != nil {
			t.Fatal(err)
		}
		if s.Stop != engine.StopBudget || s.Done != 4 || math.Abs(l.cost-1) > 1e-9 || l.settledCalls != 4 {
			t.Errorf("stop %s after %d items, ledger cost $%.2f over %d settled calls; want budget after 4 calls of $0.25", s.Stop, s.Done, l.cost, l.settledCalls)
		}
	})
}

type costTask struct{ usd float64 }

func (c costTask) Run(context.Context, task.Item) (task.Result, error) {
	r, _ := ok("x")
	r.CostUSD = c.usd
	return r, nil
}

// TestLedgerFailureStopsTheRunAsStorage: a ledger that cannot answer
// stops the run as a storage failure, with its error, rather than let
// calls spend unchecked; the items stay pending.
func TestLedgerFailureStopsTheRunAsStorage(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		down := errors.New("connection refused")
		l := &memLedger{fail: down}
		tk := &estimatingTask{}
		e := engine.New(engine.Config{Concurrency: 2, Budget: engine.Budget{MaxTokens: 1000}, Total: 4, Ledger: l}, tk, newMemJob())
		s, err := e.Run(context.Background(), items(4))
		if !errors.Is(err, down) || s.Stop != engine.StopStorage || tk.calls.Load() != 0 || s.Pending != 4 {
			t.Errorf("err %v, stop %s, %d calls, %d pending; want the ledger's error as a storage stop before any call", err, s.Stop, tk.calls.Load(), s.Pending)
		}
	})
}

// waitingLedger answers no reserve until the context ends, as a ledger
// whose database is slow does when the run is stopped meanwhile.
type waitingLedger struct{ asked chan struct{} }

func (l waitingLedger) Reserve(ctx context.Context, _ engine.Budget, _ int64) error {
	select {
	case l.asked <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return ctx.Err()
}

func (waitingLedger) Settle(int64, int64, float64) {}

// TestStopWhileTheLedgerIsAskedIsNotAStorageFailure: a reserve that ends
// because the run stopped is the stop, not the ledger failing.
func TestStopWhileTheLedgerIsAskedIsNotAStorageFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := waitingLedger{asked: make(chan struct{}, 1)}
		e := engine.New(engine.Config{Concurrency: 1, Budget: engine.Budget{MaxTokens: 1000}, Total: 3, Ledger: l}, &estimatingTask{}, newMemJob())
		go func() {
			<-l.asked
			e.Stop(engine.StopOperator, "the operator")
		}()
		s, err := e.Run(context.Background(), items(3))
		if err != nil || s.Stop != engine.StopOperator || s.Pending != 3 {
			t.Errorf("err %v, stop %s, %d pending; want the operator's stop with every item pending", err, s.Stop, s.Pending)
		}
	})
}
