package worker

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func TestGoPoolRunsTheNextItemOnTheGoroutineKeptFromTheLast(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		defer close(quit)
		p := newGoPool(quit)
		ran := 0
		for range 10 {
			var wg sync.WaitGroup
			wg.Add(1)
			p.Go(func() { defer wg.Done(); ran++ })
			wg.Wait()
			synctest.Wait() // the goroutine is back waiting for work
		}
		if ran != 10 || p.kept.Load() != 1 {
			t.Errorf("%d of 10 functions ran, on %d kept goroutines; want all 10 on one, each run after the last", ran, p.kept.Load())
		}
	})
}

func TestGoPoolStartsAGoroutineWhenNoneIsFree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		defer close(quit)
		p := newGoPool(quit)
		release := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Add(1)
			p.Go(func() { defer wg.Done(); <-release })
		}
		synctest.Wait()
		if n := p.kept.Load(); n != 3 {
			t.Errorf("%d goroutines for 3 functions that block together; want 3: a busy goroutine takes nothing more", n)
		}
		close(release)
		wg.Wait()
	})
}

func TestGoPoolEndsAnIdleGoroutineAndAllAtQuit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		quit := make(chan struct{})
		p := newGoPool(quit)
		p.Go(func() {})
		synctest.Wait()
		time.Sleep(p.idle + time.Millisecond)
		synctest.Wait()
		if n := p.kept.Load(); n != 0 {
			t.Errorf("%d goroutines kept after %v with nothing to run; want 0", n, p.idle)
		}
		release := make(chan struct{})
		for range 2 {
			p.Go(func() { <-release })
		}
		close(release)
		synctest.Wait()
		close(quit)
		synctest.Wait()
		if n := p.kept.Load(); n != 0 {
			t.Errorf("%d goroutines kept after quit; want 0", n)
		}
	})
}
