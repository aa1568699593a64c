package cache

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"
)

// compactName is the file a compaction writes the new log to before it
// renames it over the log; compactLockName the file whose lock lets one
// process at a time compact.
const (
	compactName     = LogName + ".compact"
	compactLockName = "compact.lock"
)

// Pruned is what a compaction did: the entries and log bytes before and
// after it.
type Pruned struct {
	EntriesBefore, EntriesAfter int
	BytesBefore, BytesAfter     int64
}

// Prune rewrites the log without the entries put before olderThan (when
// not zero) and, when maxBytes is 0 or more, without the oldest entries
// that do not fit in maxBytes of log; maxBytes below 0 is no bound. It
// waits for a compaction another process is doing. Entries put since the
// last write (within FlushDelay) are written first, and kept.
func (c *Cache) Prune(maxBytes int64, olderThan time.Time) (Pruned, error) {
	if err := c.Flush(); err != nil {
		return Pruned{}, err
	}
	return c.compact(maxBytes, olderThan, true)
}

// Clear removes every entry, and the rejected ones kept for analysis.
func (c *Cache) Clear() (Pruned, error) {
	p, err := c.Prune(0, time.Time{})
	if err != nil {
		return p, err
	}
	if err := os.RemoveAll(filepath.Join(c.dir, rejectedDir)); err != nil {
		return p, fmt.Errorf("cache: clear: %w", err)
	}
	return p, nil
}

// maybeCompact starts a compaction in the background when the log has
// outgrown its bound, one at a time. A compaction that could not run
// (another process's was under way) or failed is tried again a quarter of
// the bound later, not at every write.
func (c *Cache) maybeCompact() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.overBound() || c.compacting || c.closed {
		return
	}
	c.compacting = true
	c.bg.Go(c.compactInBackground)
}

// overBound reports whether the log is over its bound and may be
// compacted. c.mu must be held.
func (c *Cache) overBound() bool {
	max := c.opts.MaxBytes
	return max > 0 && c.tail > max && c.tail >= c.compactAt
}

// compactInBackground compacts until the log is under its bound: what
// was written during a compaction can put it over again, with no write
// after it to start the next.
func (c *Cache) compactInBackground() {
	max := c.opts.MaxBytes
	for {
		p, err := c.compact(max/4*3, time.Time{}, false)
		c.mu.Lock()
		if err != nil || p.BytesBefore == 0 {
			// Failed, or skipped for another process's compaction: it
			// only leaves the log larger for a while.
			c.compactAt = c.tail + max/4
		} else {
			c.compactAt = 0
		}
		if !c.overBound() || c.closed {
			c.compacting = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
	}
}

// removeStaleCompaction removes the new log of a compaction killed before
// its rename, unless a compaction is under way.
func (c *Cache) removeStaleCompaction() {
	if _, err := os.Stat(filepath.Join(c.dir, compactName)); err != nil {
		return // none, the usual case: no lock file made for nothing
	}
	unlock, ok, err := c.lockCompaction(false)
	if err != nil || !ok {
		return
	}
	defer unlock()
	_ = os.Remove(filepath.Join(c.dir, compactName))
}

// lockCompaction takes the lock that lets one process compact; with wait
// false it returns ok false instead of waiting for it.
func (c *Cache) lockCompaction(wait bool) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(filepath.Join(c.dir, compactLockName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	how := syscall.LOCK_EX
	if !wait {
		how |= syscall.LOCK_NB
	}
	for {
		err = syscall.Flock(int(f.Fd()), how)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("cache: locking for compaction: %w", err)
	}
	return func() { f.Close() }, true, nil
}

// kept is an entry a compaction keeps.
type kept struct {
	hash uint64
	loc
}

// compact rewrites the log keeping the newest entries (by when they were
// put) that fit in target bytes and were put at or after olderThan;
// target below 0 is no bound. The new log is written beside the old
// without its lock, the old one's bytes being final; only the last step,
// the records appended meanwhile and the rename, holds the lock and the
// index. Killed before the rename, it leaves the old log whole and a new
// one that the next Open removes; after, the new one, synced before.
func (c *Cache) compact(target int64, olderThan time.Time, wait bool) (Pruned, error) {
	unlock, ok, err := c.lockCompaction(wait)
	if err != nil || !ok {
		return Pruned{}, err
	}
	defer unlock()
	c.fileMu.RLock()
	old, base, keep, p, err := c.choose(target, olderThan)
	if err != nil {
		c.fileMu.RUnlock()
		return p, err
	}
	tmpPath := filepath.Join(c.dir, compactName)
	tmp, index, size, err := c.copyKept(tmpPath, old, keep)
	c.fileMu.RUnlock()
	if err != nil {
		return p, err
	}
	defer tmp.Close()
	defer os.Remove(tmpPath) // after the rename there is none
	if err := c.swap(old, base, tmp, index, size); err != nil {
		return p, err
	}
	c.mu.Lock()
	p.EntriesAfter, p.BytesAfter = len(c.index), c.tail
	c.mu.Unlock()
	return p, nil
}

// choose catches up with the log and picks the entries to keep: it
// returns the log, how far it was indexed and the kept entries in log
// order. c.fileMu must be read-locked.
func (c *Cache) choose(target int64, olderThan time.Time) (*os.File, int64, []kept, Pruned, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, 0, nil, Pruned{}, ErrClosed
	}
	if err := c.catchUpShared(); err != nil {
		return nil, 0, nil, Pruned{}, err
	}
	all := make([]kept, 0, len(c.index))
	for h, l := range c.index {
		all = append(all, kept{h, l})
	}
	// Newest first: by time put, then by place in the log.
	slices.SortFunc(all, func(a, b kept) int {
		return cmp.Or(cmp.Compare(b.at, a.at), cmp.Compare(b.off, a.off))
	})
	cut := olderThan.UnixMilli()
	var sum int64
	keep := all[:0]
	for _, k := range all {
		if (!olderThan.IsZero() && k.at < cut) || (target >= 0 && sum+int64(k.size) > target) {
			break
		}
		sum += int64(k.size)
		keep = append(keep, k)
	}
	slices.SortFunc(keep, func(a, b kept) int { return cmp.Compare(a.off, b.off) })
	return c.f, c.tail, keep, Pruned{EntriesBefore: len(c.index), BytesBefore: c.tail}, nil
}

// copyKept writes the kept records of old to a new file at path, and
// returns it with their index in it and its size.
func (c *Cache) copyKept(path string, old *os.File, keep []kept) (*os.File, map[uint64]loc, int64, error) {
	tmp, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("cache: compacting: %w", err)
	}
	index := make(map[uint64]loc, len(keep))
	w := bufio.NewWriterSize(tmp, 1<<20)
	var size int64
	var rec []byte
	for i, k := range keep {
		if i%1024 == 0 && c.stopping() {
			tmp.Close()
			return nil, nil, 0, ErrClosed
		}
		rec = slices.Grow(rec[:0], int(k.size))[:k.size]
		if _, err = old.ReadAt(rec, k.off); err != nil {
			break
		}
		if _, err = w.Write(rec); err != nil {
			break
		}
		index[k.hash] = loc{off: size, size: k.size, at: k.at}
		size += int64(k.size)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Sync() // the bulk synced here, without the lock; the last step syncs only what it adds
	}
	if err != nil {
		tmp.Close()
		return nil, nil, 0, fmt.Errorf("cache: compacting: %w", err)
	}
	return tmp, index, size, nil
}

// stopping reports whether Close has begun.
func (c *Cache) stopping() bool {
	select {
	case <-c.w.Stopping():
		return true
	default:
		return false
	}
}

// swap finishes a compaction under the log's lock: it appends to tmp the
// records written to old since base, renames tmp over the log and makes
// it this Cache's log. A log that another process replaced meanwhile
// wins: the compaction is dropped.
func (c *Cache) swap(old *os.File, base int64, tmp *os.File, index map[uint64]loc, size int64) error {
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.f != old {
		return nil
	}
	if err := c.lock(true); err != nil {
		return err
	}
	defer c.unlock()
	if replaced, err := c.replaced(); err != nil || replaced {
		return err
	}
	if err := c.catchUp(); err != nil {
		return fmt.Errorf("cache: compacting: %w", err)
	}
	size, err := c.copyTail(old, base, tmp, index, size)
	if err == nil {
		err = tmp.Sync()
	}
	path := filepath.Join(c.dir, LogName)
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err == nil {
		err = syncDir(c.dir)
	}
	if err != nil {
		return fmt.Errorf("cache: compacting: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cache: compacting: %w", err)
	}
	// Closing old releases its lock, before the deferred unlock (of the
	// new log's descriptor by then, which holds none) runs.
	defer old.Close()
	c.f, c.fd = f, int(f.Fd())
	c.index, c.tail, c.end = index, size, size
	return nil
}

// copyTail appends old's bytes from base to c.tail, the records written
// since the compaction chose, to tmp at size, indexing them into index in
// log order, and returns tmp's new size.
func (c *Cache) copyTail(old *os.File, base int64, tmp *os.File, index map[uint64]loc, size int64) (int64, error) {
	if c.tail <= base {
		return size, nil
	}
	data := make([]byte, c.tail-base)
	if _, err := old.ReadAt(data, base); err != nil {
		return 0, err
	}
	if _, err := tmp.WriteAt(data, size); err != nil {
		return 0, err
	}
	scan(data, size, size+int64(len(data)), func(r record, off int64, n int) {
		indexRecord(index, c.seed, r, off, n)
	})
	return size + int64(len(data)), nil
}

// syncDir syncs a directory, so a rename in it survives a power loss.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Stats is what a cache holds.
type Stats struct {
	// Entries and Bytes are the entries and the log bytes they take.
	Entries int
	Bytes   int64
	// LogBytes is the log's size: Bytes and the replaced and removed
	// records a compaction has not yet dropped.
	LogBytes int64
	// Oldest and Newest are when the oldest and newest entries were put,
	// of those whose time is known (entries written before the log kept
	// times are not); zero when none is.
	Oldest, Newest time.Time
	// Rejected counts the entries kept under rejected/.
	Rejected int
}

// Stats returns what the cache holds, as written to its log.
func (c *Cache) Stats() (Stats, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Stats{}, ErrClosed
	}
	if err := c.catchUpShared(); err != nil {
		c.mu.Unlock()
		return Stats{}, err
	}
	s := Stats{Entries: len(c.index), LogBytes: c.tail}
	var oldest, newest int64
	for _, l := range c.index {
		s.Bytes += int64(l.size)
		if l.at > 0 && (oldest == 0 || l.at < oldest) {
			oldest = l.at
		}
		newest = max(newest, l.at)
	}
	c.mu.Unlock()
	if oldest > 0 {
		s.Oldest = time.UnixMilli(oldest)
	}
	if newest > 0 {
		s.Newest = time.UnixMilli(newest)
	}
	rejected, err := os.ReadDir(filepath.Join(c.dir, rejectedDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return s, fmt.Errorf("cache: %w", err)
	}
	for _, e := range rejected {
		if filepath.Ext(e.Name()) == ".json" {
			s.Rejected++
		}
	}
	return s, nil
}

// WriteText writes the stats as tenax cache stats prints them, one
// "name: value" line each, times in UTC.
func (s Stats) WriteText(w io.Writer) error {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	_, err := fmt.Fprintf(w, "entries:  %d\nbytes:    %d (of a %d-byte log)\nrejected: %d\noldest:   %s\nnewest:   %s\n",
		s.Entries, s.Bytes, s.LogBytes, s.Rejected, when(s.Oldest), when(s.Newest))
	return err
}

// WriteText writes what a prune did, as tenax cache prune and clear print it.
func (p Pruned) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%d entries, %d bytes before; %d entries, %d bytes after\n",
		p.EntriesBefore, p.BytesBefore, p.EntriesAfter, p.BytesAfter)
	return err
}
