package engine

import (
	"math"
	"sync/atomic"

	"github.com/tenaxhq/tenax/task"
)

// Tally is a run's totals: the records written, the calls, retries and
// re-asks made, the usage and cost spent and the breaker's trips. Whoever
// owns the items' outcomes keeps one: the engine, and batch waves (whose
// online tail's engine adds its own with Add), so that a run is counted
// one way in every mode. Its methods are safe from any goroutine.
type Tally struct {
	done, succeeded, failed atomic.Int64
	retries, heals, calls   atomic.Int64
	inTokens, outTokens     atomic.Int64
	costMicro               atomic.Int64 // millionths of a dollar
	trips                   atomic.Int64
}

// Recorded counts a record written, failed or not, and returns the
// records counted so far.
func (t *Tally) Recorded(failed bool) int64 {
	if failed {
		t.failed.Add(1)
	} else {
		t.succeeded.Add(1)
	}
	return t.done.Add(1)
}

// Spent adds a call's usage and cost.
func (t *Tally) Spent(res task.Result) {
	if res.Usage.Total() == 0 && res.CostUSD == 0 {
		return
	}
	t.inTokens.Add(res.Usage.InputTokens)
	t.outTokens.Add(res.Usage.OutputTokens)
	if res.CostUSD > 0 {
		t.costMicro.Add(int64(math.Round(res.CostUSD * 1e6)))
	}
}

// Called counts n calls made.
func (t *Tally) Called(n int) { t.calls.Add(int64(n)) }

// Retried counts a retry.
func (t *Tally) Retried() { t.retries.Add(1) }

// Reasked counts a heal re-ask.
func (t *Tally) Reasked() { t.heals.Add(1) }

// Tripped counts a trip of the run's breaker.
func (t *Tally) Tripped() { t.trips.Add(1) }

// Spending is the tokens and dollars spent so far, for a budget.
func (t *Tally) Spending() (tokens int64, usd float64) {
	return t.inTokens.Load() + t.outTokens.Load(), float64(t.costMicro.Load()) / 1e6
}

// Add adds the totals another run counted (its Stats).
func (t *Tally) Add(s Stats) {
	t.done.Add(int64(s.Done))
	t.succeeded.Add(int64(s.Succeeded))
	t.failed.Add(int64(s.Failed))
	t.calls.Add(int64(s.Calls))
	t.retries.Add(int64(s.Retries))
	t.heals.Add(int64(s.HealAttempts))
	t.inTokens.Add(s.Usage.InputTokens)
	t.outTokens.Add(s.Usage.OutputTokens)
	t.costMicro.Add(int64(math.Round(s.CostUSD * 1e6)))
	t.trips.Add(int64(s.Trips))
}

// Fill writes the totals into s.
func (t *Tally) Fill(s *Stats) {
	s.Done = int(t.done.Load())
	s.Succeeded = int(t.succeeded.Load())
	s.Failed = int(t.failed.Load())
	s.Calls = int(t.calls.Load())
	s.Retries = int(t.retries.Load())
	s.HealAttempts = int(t.heals.Load())
	s.Trips = int(t.trips.Load())
	s.Usage = task.Usage{InputTokens: t.inTokens.Load(), OutputTokens: t.outTokens.Load()}
	s.CostUSD = float64(t.costMicro.Load()) / 1e6
}
