package cache

import (
	"errors"
	"fmt"
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

// syncedBatches is countedBatches whose writes need a Sync to be durable:
// syncs holds, at each Sync, how many writes it made durable.
type syncedBatches struct {
	countedBatches
	syncs    []int
	synced   int
	syncFail error
}

func (b *syncedBatches) Sync() error {
	b.syncs = append(b.syncs, len(b.writes)-b.synced)
	b.synced = len(b.writes)
	return b.syncFail
}

// TestWriterSyncsTheWritesOfOneSyncIntervalOnce: the batches written in
// one SyncInterval share one Sync, made SyncInterval after the first of
// them was written; a Flush returns once its Puts are synced, a failed
// Sync's error is returned by the next Flush, and Stop syncs what is left.
func TestWriterSyncsTheWritesOfOneSyncIntervalOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		b := &syncedBatches{}
		w := NewWriter(&mu, Batches[int](b))
		put := func() {
			mu.Lock()
			b.fill++
			w.Added(b.fill == 1, false)
			mu.Unlock()
		}
		check := func(when string, writes, syncs []int) {
			t.Helper()
			synctest.Wait()
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(b.writes) != fmt.Sprint(writes) || fmt.Sprint(b.syncs) != fmt.Sprint(syncs) {
				t.Errorf("%s: writes %v and syncs %v, want writes %v and syncs %v", when, b.writes, b.syncs, writes, syncs)
			}
		}
		start := time.Now()
		put()
		time.Sleep(FlushDelay)
		check("a FlushDelay after a Put", []int{1}, nil)
		for range 3 {
			time.Sleep(FlushDelay)
			put()
			time.Sleep(FlushDelay)
		}
		check("four writes in", []int{1, 1, 1, 1}, nil)
		time.Sleep(time.Until(start.Add(FlushDelay + SyncInterval + time.Millisecond)))
		check("SyncInterval after the first write", []int{1, 1, 1, 1}, []int{4})

		put()
		put()
		mu.Lock()
		err := w.Flush(b.fill > 0)
		writes, syncs := fmt.Sprint(b.writes), fmt.Sprint(b.syncs)
		mu.Unlock()
		if err != nil || writes != "[1 1 1 1 2]" || syncs != "[4 1]" {
			t.Errorf("Flush returned %v with writes %s and syncs %s, want nil once the two Puts were written and synced", err, writes, syncs)
		}

		boom := errors.New("fsync: input/output error")
		mu.Lock()
		b.syncFail = boom
		mu.Unlock()
		put()
		time.Sleep(FlushDelay + SyncInterval)
		mu.Lock()
		if err := w.Flush(b.fill > 0); !errors.Is(err, boom) {
			t.Errorf("Flush after a failed sync: %v, want %v", err, boom)
		}
		b.syncFail = nil
		mu.Unlock()

		put()
		w.Stop()
		check("after Stop", []int{1, 1, 1, 1, 2, 1, 1}, []int{4, 1, 1, 1})
	})
}
