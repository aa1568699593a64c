package worker

import (
	"sync/atomic"
	"time"
)

// goPool runs a group's items on goroutines kept from one River job to the
// next, as the engine's dispatcher keeps its workers. A goroutine started
// for each item began with a small stack and grew it, copying, through the
// SDK's and net/http's frames on every call: 7.7% of a worker's CPU in
// runtime.newstack, against 0.2% in the single process
// (docs/benchmarks.md, "The heap's floor and goroutines kept for items").
type goPool struct {
	work chan func()
	// quit ends the kept goroutines (the worker's end); idle ends one
	// that had nothing to run that long, so a worker between jobs holds
	// none.
	quit <-chan struct{}
	idle time.Duration
	// kept counts the goroutines alive, for tests.
	kept atomic.Int32
}

func newGoPool(quit <-chan struct{}) *goPool {
	return &goPool{work: make(chan func()), quit: quit, idle: 2 * time.Second}
}

// Go runs f on a kept goroutine that is free, or on a new one, kept in
// turn.
func (p *goPool) Go(f func()) {
	select {
	case p.work <- f:
	default:
		go p.keep(f)
	}
}

// keep runs f, then whatever Go hands it, until quit or idle.
func (p *goPool) keep(f func()) {
	p.kept.Add(1)
	defer p.kept.Add(-1)
	t := time.NewTimer(p.idle)
	defer t.Stop()
	for {
		f()
		t.Reset(p.idle)
		select {
		case f = <-p.work:
		case <-t.C:
			return
		case <-p.quit:
			return
		}
	}
}
