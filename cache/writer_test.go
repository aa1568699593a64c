package cache

import (
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// countedBatches is a storage step that counts its writes: a batch is the
// number of Puts in it, and a write fails while fail is set.
type countedBatches struct {
	fill   int
	writes []int
	fail   error
}

func (b *countedBatches) Take() (int, bool) {
	n := b.fill
	b.fill = 0
	return n, n > 0
}

func (b *countedBatches) Write(n int) error {
	b.writes = append(b.writes, n)
	return b.fail
}

func (b *countedBatches) Written(int) {}

// TestWriterWritesThePutsOfOneFlushDelayInOneWrite: Puts within
// FlushDelay share one write; Flush waits for it and returns a failed
// write's error once; Stop writes what is left.
func TestWriterWritesThePutsOfOneFlushDelayInOneWrite(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		b := &countedBatches{}
		w := NewWriter(&mu, Batches[int](b))
		put := func() {
			mu.Lock()
			b.fill++
			w.Added(b.fill == 1, false)
			mu.Unlock()
		}
		for range 3 {
			put()
		}
		time.Sleep(FlushDelay / 2)
		put()
		time.Sleep(FlushDelay)
		synctest.Wait()
		mu.Lock()
		if len(b.writes) != 1 || b.writes[0] != 4 {
			t.Errorf("writes after FlushDelay: %v, want one write of the 4 Puts", b.writes)
		}
		mu.Unlock()

		boom := errors.New("disk full")
		mu.Lock()
		b.fail = boom
		mu.Unlock()
		put()
		mu.Lock()
		if err := w.Flush(b.fill > 0); !errors.Is(err, boom) {
			t.Errorf("Flush after a failed write: %v, want %v", err, boom)
		}
		if err := w.Flush(b.fill > 0); err != nil {
			t.Errorf("second Flush: %v, want nil: an error is returned once", err)
		}
		b.fail = nil
		mu.Unlock()
		put()
		w.Stop()
		if len(b.writes) != 3 || b.writes[2] != 1 {
			t.Errorf("writes after Stop: %v, want the last Put written by Stop", b.writes)
		}
	})
}
