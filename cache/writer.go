package cache

import (
	"sync"
	"time"
)

// Batches is the storage step a Writer drives: where a cache keeps the
// batch its Puts fill, and how it writes one. B is the cache's batch.
type Batches[B any] interface {
	// Take returns the batch being filled and starts a new one, or false
	// when the batch holds nothing. It is called with the Writer's lock
	// held; the batch taken stays visible to the cache's Gets until
	// Written.
	Take() (B, bool)
	// Write writes b to the storage and makes it durable (a commit), or,
	// for Batches that are also a Syncer, hands it to the OS, where it
	// survives the process but not the machine. It is called without the
	// lock: Puts fill the next batch meanwhile. Its error is the batch's
	// loss, returned by the next Flush: it is a cache.
	Write(b B) error
	// Written is called with the lock held once b's Write returned: b is
	// no longer the batch being written.
	Written(b B)
}

// Syncer is implemented by Batches whose Write reaches the OS and not yet
// the disk (the log, a file): Sync makes every batch written so far
// durable (an fsync). The Writer calls it SyncInterval after the first
// write it has not synced, and before a Flush or Stop returns, so that the
// batches of that interval share one fsync. It is called without the
// lock, never while a Write runs.
type Syncer interface {
	Sync() error
}

// Writer is the group commit both caches share (this package's log and
// package cache/postgres's table): Puts add to a batch in memory under
// the cache's lock; one goroutine, woken by the first Put of a batch,
// waits out FlushDelay (less for a Flush or a full batch) and writes the
// whole batch in one step, so that many Puts share one write, one lock
// and one commit; Batches that are a Syncer are synced once a
// SyncInterval, so that many writes share one fsync. Flush waits for the
// batch that holds the Puts before it to be durable. Batches are
// numbered: seq is the one being filled, done the last one written,
// synced the last one durable (done, for Batches that are no Syncer).
type Writer[B any] struct {
	mu       *sync.Mutex
	flushed  *sync.Cond
	batches  Batches[B]
	syncer   Syncer // batches as a Syncer; nil when Write is durable itself
	seq      uint64
	done     uint64
	synced   uint64
	syncWant uint64 // the last batch a Flush waits to see synced
	err      error  // a failed write or sync (or a failure Fail recorded) not yet returned

	kick, now, stop, stopped chan struct{}
	delay                    *time.Timer // FlushDelay from a batch's first Put; stopped between batches
	syncDue                  *time.Timer // SyncInterval from the first write not synced; stopped when none is
	syncArmed                bool        // syncDue runs; the writer goroutine's alone
}

// NewWriter starts the writer goroutine of a cache whose lock is mu and
// whose batches are b. Stop ends it.
func NewWriter[B any](mu *sync.Mutex, b Batches[B]) *Writer[B] {
	w := &Writer[B]{
		mu: mu, flushed: sync.NewCond(mu), batches: b, seq: 1,
		kick: make(chan struct{}, 1), now: make(chan struct{}, 1),
		stop: make(chan struct{}), stopped: make(chan struct{}),
		delay: time.NewTimer(FlushDelay), syncDue: time.NewTimer(SyncInterval),
	}
	w.delay.Stop()
	w.syncDue.Stop()
	w.syncer, _ = b.(Syncer)
	go w.run()
	return w
}

// Added tells the writer a Put added to the batch: first when the batch
// was empty before (the writer wakes and starts its FlushDelay), full when
// the batch is now large enough to write without waiting. mu must be held.
func (w *Writer[B]) Added(first, full bool) {
	if first {
		signal(w.kick)
	}
	if full {
		signal(w.now)
	}
}

// Flush waits until the batch being written, and the one being filled
// when pending is true, are written and durable (synced, for a Syncer),
// and returns the error of a write or sync that failed since the last
// Flush (or one Fail recorded), clearing it. mu must be held; Flush waits
// on it.
func (w *Writer[B]) Flush(pending bool) error {
	target := w.seq - 1
	if pending {
		target = w.seq
	}
	if w.syncer != nil {
		w.syncWant = max(w.syncWant, target)
	}
	if w.durable() < target {
		signal(w.now)
	}
	for w.durable() < target {
		w.flushed.Wait()
	}
	err := w.err
	w.err = nil
	return err
}

// Fail records err, when no other error is pending, for the next Flush:
// the failure of a step that is not a batch's write (an eviction). mu
// must be held.
func (w *Writer[B]) Fail(err error) {
	if w.err == nil {
		w.err = err
	}
}

// durable is the last batch that is durable. mu must be held.
func (w *Writer[B]) durable() uint64 {
	if w.syncer == nil {
		return w.done
	}
	return w.synced
}

// Err returns the error the next Flush would return. mu must be held.
func (w *Writer[B]) Err() error { return w.err }

// Stopping is closed once Stop is called: for background work of the
// cache (a compaction) to give up early.
func (w *Writer[B]) Stopping() <-chan struct{} { return w.stop }

// Stop writes the batch being filled, syncs what is not synced and ends
// the writer goroutine; it returns once all are done. It is called once,
// without mu held, after the cache refuses new Puts.
func (w *Writer[B]) Stop() {
	close(w.stop)
	<-w.stopped
}

// run is the writer goroutine: woken by the first Put of a batch, it
// waits out FlushDelay (or less, for a Flush or a full batch) and writes
// the batch; it syncs SyncInterval after the first write it has not
// synced, or at once for a Flush.
func (w *Writer[B]) run() {
	defer close(w.stopped)
	for {
		due := false
		select {
		case <-w.kick:
			w.wait()
		case <-w.now:
		case <-w.syncDue.C:
			w.syncArmed, due = false, true
		case <-w.stop:
			w.flush()
			w.sync(true)
			return
		}
		w.flush()
		w.sync(due)
	}
}

// wait waits out FlushDelay from a batch's first Put, or less when a
// Flush, a full batch or Stop says to write now.
func (w *Writer[B]) wait() {
	w.delay.Reset(FlushDelay)
	select {
	case <-w.delay.C:
	case <-w.now:
	case <-w.stop:
	}
	w.delay.Stop()
}

// flush writes the batch being filled, if any, and marks it done for
// Flush.
func (w *Writer[B]) flush() {
	w.mu.Lock()
	b, ok := w.batches.Take()
	if !ok {
		w.mu.Unlock()
		return
	}
	seq := w.seq
	w.seq++
	w.mu.Unlock()
	err := w.batches.Write(b)
	w.mu.Lock()
	if err != nil {
		w.Fail(err) // the batch is lost: it is a cache
	}
	w.batches.Written(b)
	w.done = seq
	w.flushed.Broadcast()
	w.mu.Unlock()
}

// sync makes the batches written so far durable, when now is true or a
// Flush waits for them; otherwise it starts SyncInterval, if not started,
// for the next run to sync then.
func (w *Writer[B]) sync(now bool) {
	if w.syncer == nil {
		return
	}
	w.mu.Lock()
	target := w.done
	if target == w.synced {
		w.mu.Unlock()
		return
	}
	if !now && w.syncWant <= w.synced {
		w.mu.Unlock()
		if !w.syncArmed {
			w.syncDue.Reset(SyncInterval)
			w.syncArmed = true
		}
		return
	}
	w.mu.Unlock()
	if w.syncArmed {
		w.syncDue.Stop()
		w.syncArmed = false
	}
	err := w.syncer.Sync()
	w.mu.Lock()
	if err != nil {
		w.Fail(err) // the batches may be lost to a crash of the machine: it is a cache
	}
	w.synced = target
	w.flushed.Broadcast()
	w.mu.Unlock()
}

// signal wakes the writer goroutine through ch without waiting.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
