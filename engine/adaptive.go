package engine

import "sync"

// adaptive is additive-increase, multiplicative-decrease concurrency: one
// more slot after each window of successes as large as the current limit,
// half the slots on a rate limit or overload. A decrease applies once per
// generation: the burst of 429s answered to calls that started before the
// last decrease does not halve the limit again and again.
type adaptive struct {
	mu        sync.Mutex
	max       int
	successes int
	gen       uint64
}

func (a *adaptive) generation() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.gen
}

func (e *Engine) adaptSuccess() {
	if !e.cfg.Adaptive {
		return
	}
	a := &e.adapt
	a.mu.Lock()
	a.successes++
	limit := e.slots.Limit()
	grow := a.successes >= limit && limit < a.max
	if grow {
		a.successes = 0
		limit++
		e.slots.setLimit(limit)
	}
	a.mu.Unlock()
	if grow {
		e.emit(Event{Kind: ConcurrencyChanged, Limit: limit})
	}
}

func (e *Engine) adaptOverload(startedAt uint64) {
	if !e.cfg.Adaptive {
		return
	}
	a := &e.adapt
	a.mu.Lock()
	if startedAt != a.gen {
		a.mu.Unlock()
		return
	}
	a.gen++
	a.successes = 0
	limit := max(1, e.slots.Limit()/2)
	e.slots.setLimit(limit)
	a.mu.Unlock()
	e.emit(Event{Kind: ConcurrencyChanged, Limit: limit})
}
