package cache

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// errReplaced says the log's path names another file than the one this
// Cache writes: another process compacted the log.
var errReplaced = errors.New("cache: the log was replaced")

// Flush writes the entries put so far and waits for their fsync: when it
// returns nil they survive a crash of the process and of the machine. It
// returns the error of a write or sync that failed since the last Flush
// (the entries of that batch are lost: it is a cache).
func (c *Cache) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if err := c.w.Flush(len(c.fill.buf) > 0); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// logBatches is the log's storage step for the Cache's Writer.
type logBatches struct{ c *Cache }

// Take swaps the batch being filled for the spare one. Gets find it in
// c.writing until it is indexed.
func (l logBatches) Take() (*batch, bool) {
	c := l.c
	if len(c.fill.buf) == 0 {
		return nil, false
	}
	b := c.fill
	c.fill, c.writing, c.spare = c.spare, b, nil
	return b, true
}

// Write writes b in one write under the log's lock, and starts a
// compaction when the log has outgrown its bound. Sync makes it durable.
func (l logBatches) Write(b *batch) error {
	c := l.c
	defer c.maybeCompact()
	err := c.write(b)
	// Another process compacting again and again can replace the log
	// between the reopen and the write; each reopen is a new file, so
	// this ends unless that goes on without a pause.
	for try := 0; errors.Is(err, errReplaced) && try < 100; try++ {
		if err = c.reopen(); err == nil {
			err = c.write(b)
		}
	}
	return err
}

// Sync fsyncs the log: every batch written to it so far is on the disk.
// Batches written to a log since replaced by a compaction are in the
// compacted log, which the compaction synced before the rename.
func (l logBatches) Sync() error {
	c := l.c
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	return c.syncLog(c.f)
}

// Written keeps b's buffers for the next batch.
func (l logBatches) Written(b *batch) {
	l.c.writing = nil
	b.reset()
	l.c.spare = b
}

// write writes b to the log; fileMu keeps f open.
func (c *Cache) write(b *batch) error {
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeBatch(b)
}

// writeBatch appends b to the log in one write and indexes it. c.fileMu
// must be read-locked and c.mu held. Under the log's exclusive lock,
// caught up, the log ends at tail, where the write lands: the records are
// indexed without reading them back. The part of a failed write that was
// written is torn bytes, which scans skip.
func (c *Cache) writeBatch(b *batch) error {
	if err := c.lock(true); err != nil {
		return err
	}
	defer c.unlock()
	if replaced, err := c.replaced(); err != nil || replaced {
		if err == nil {
			err = errReplaced
		}
		return err
	}
	if c.grown() {
		if err := c.catchUp(); err != nil {
			return err
		}
	}
	if _, err := c.f.Write(b.buf); err != nil {
		return err
	}
	for _, op := range b.ops {
		c.apply(record{op: op.op, key: op.key, at: op.at}, c.tail+int64(op.off), op.size)
	}
	c.tail += int64(len(b.buf))
	return nil
}

// replaced reports whether the log's path no longer names c.f: another
// process compacted the log into a new file. A log removed from under the
// cache is not replaced; the writes go on to the file this Cache holds.
func (c *Cache) replaced() (bool, error) {
	ours, err := c.f.Stat()
	if err != nil {
		return false, err
	}
	now, err := os.Stat(filepath.Join(c.dir, LogName))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return !os.SameFile(ours, now), nil
}

// reopen opens the log again by its path, after another process replaced
// it, and indexes it from the start.
func (c *Cache) reopen() error {
	f, err := os.OpenFile(filepath.Join(c.dir, LogName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("cache: reopening the log: %w", err)
	}
	c.fileMu.Lock()
	defer c.fileMu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.f
	c.f, c.fd = f, int(f.Fd())
	old.Close()
	c.reindex()
	if err := c.lock(false); err != nil {
		return err
	}
	defer c.unlock()
	if err := c.catchUp(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}
