package cache

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// LogName is the name of the cache's log in its directory.
const LogName = "entries.log"

// rejectedDir is the subdirectory that keeps rejected entries.
const rejectedDir = "rejected"

// minKeyLen is the shortest key accepted: 64 bits of hash.
const minKeyLen = 16

// FlushDelay is how long a Put waits in memory, at most, before its batch
// is written to the log: every Put in that time shares one write and one
// lock of the log (SyncInterval says when it is synced). See the package doc
// for what it costs a crash.
const FlushDelay = 5 * time.Millisecond

// SyncInterval is how long a batch written to the log waits, at most, for
// its fsync: every batch written in that time shares one. A written batch
// survives the process (kill -9) at once; SyncInterval is what a crash of
// the machine may lose besides, as the package doc says. Flush and Close
// sync at once.
const SyncInterval = 100 * time.Millisecond

// batchBytes is the batch size at which it is written without waiting out
// FlushDelay.
const batchBytes = 1 << 20

// scanBufSize is the log read at a time when catching up.
const scanBufSize = 256 << 10

// ErrBadKey is returned, wrapped, for a key that is not 16 or more
// lowercase hex digits.
var ErrBadKey = errors.New("cache: key must be 16 or more lowercase hex digits")

// ErrClosed is returned, wrapped, by a Cache used after Close.
var ErrClosed = errors.New("cache: closed")

// Options are what Open is told beyond the directory.
type Options struct {
	// MaxBytes bounds the log's size: once the log grows past it, a
	// compaction in the background rewrites it with the newest entries
	// that fit in three quarters of it (so that the next one is a quarter
	// of the bound of new entries away). 0 is no bound.
	MaxBytes int64
}

// Cache is a response cache in a directory: one append-only log of
// entries, indexed in memory. It is safe for concurrent use, also by
// several processes sharing the directory: each sees the others' entries
// once they are written (within FlushDelay of their Put), and the last
// write of a key wins.
type Cache struct {
	dir  string
	opts Options
	seed maphash.Seed

	// fileMu guards f against a swap for a compacted log: a Get reads f
	// under its read lock, outside mu; the swap takes it whole. It is
	// taken before mu, never while holding it.
	fileMu  sync.RWMutex
	f       *os.File // the log, opened O_APPEND: writes from every process land at its end
	fd      int      // f's descriptor, for its lock
	syncLog func(*os.File) error

	mu sync.Mutex
	// index maps a key's hash to its latest record; a hash shared by two
	// keys (about 1 in 10^7 for 10^6 keys) costs a miss, never a wrong
	// value, since Get checks the key the record holds.
	index map[uint64]loc
	// tail is how far the log is indexed; end is where its last whole
	// record ends, so the bytes between them are a torn tail.
	tail, end int64
	buf       []byte

	// fill is the batch Puts add to; writing, when not nil, the one being
	// written; spare the buffers the next fill reuses. w writes them.
	fill, writing, spare *batch
	w                    *Writer[*batch]
	closed               bool

	compacting bool
	compactAt  int64 // the log size from which the next background compaction may start

	bg sync.WaitGroup
}

// loc is where a record is in the log, and when it was put (Unix ms).
type loc struct {
	off  int64
	size uint32
	at   int64
}

// batch is records put and not yet written: buf holds them, ops says
// where each is, pending maps a key to its latest op.
type batch struct {
	buf     []byte
	ops     []pendingOp
	pending map[string]int
}

func newBatch() *batch { return &batch{pending: make(map[string]int)} }

// reset empties b for reuse.
func (b *batch) reset() {
	b.buf, b.ops = b.buf[:0], b.ops[:0]
	clear(b.pending)
}

// pendingOp is a record of a batch not yet written.
type pendingOp struct {
	key       string
	op        byte
	off, size int
	at        int64
}

// Open returns the cache in dir, creating the directory and its log if
// needed. A directory of the older file-per-entry layout
// (dir/<key[:2]>/<key>.json) is migrated into the log first, and a torn
// tail (a writer killed in its write) is cut off.
func Open(dir string, opts Options) (*Cache, error) {
	return open(dir, opts, (*os.File).Sync)
}

// open is Open with the log's fsync, which a test counts.
func open(dir string, opts Options, syncLog func(*os.File) error) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LogName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{
		dir: dir, opts: opts, f: f, fd: int(f.Fd()), seed: maphash.MakeSeed(), syncLog: syncLog,
		index: make(map[uint64]loc), fill: newBatch(), spare: newBatch(),
	}
	if err := c.openLog(); err != nil {
		f.Close()
		return nil, err
	}
	c.removeStaleCompaction()
	c.w = NewWriter(&c.mu, logBatches{c})
	c.maybeCompact() // a log over its bound is compacted at open, in the background
	return c, nil
}

// openLog migrates an old layout, indexes the log and cuts a torn tail,
// under the log's exclusive lock.
func (c *Cache) openLog() error {
	if err := c.lock(true); err != nil {
		return err
	}
	defer c.unlock()
	if _, err := c.migrate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.catchUp(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	if c.end < c.tail {
		// No writer is in progress (the lock is ours), so the bytes past
		// the last whole record are torn for good: cut, the next write
		// lands where they began.
		if err := c.f.Truncate(c.end); err != nil {
			return fmt.Errorf("cache: cutting the log's torn tail: %w", err)
		}
		c.tail = c.end
	}
	return nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Close writes what is still in memory, syncs the log and releases it.
// Every entry put before it is on the disk when it returns; the error is
// that of any write or sync that failed and was not yet returned by Flush.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	c.w.Stop()
	c.bg.Wait()
	c.fileMu.Lock() // no Get reads the log any more
	defer c.fileMu.Unlock()
	c.mu.Lock()
	err := c.w.Err()
	c.mu.Unlock()
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// Key returns the cache key of v: the hex SHA-256 of its encoding/json
// encoding. Map keys are encoded sorted and struct fields in declaration
// order, so equal structs and maps give equal keys; pass those, not
// pre-encoded JSON whose key order may vary. Secrets must not be part of v.
func Key(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("cache: key: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// Get returns the value stored under key. A missing entry is a miss
// (false, nil); so is a corrupt one. The error is for a bad key or a read
// that failed.
func (c *Cache) Get(key string) ([]byte, bool, error) {
	if !validKey(key) {
		return nil, false, fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	v, ok, err := c.lookup(key)
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	return v, ok, nil
}

// lookup returns key's value: from the batch not yet written, else from
// the log. c.fileMu must be read-locked.
func (c *Cache) lookup(key string) ([]byte, bool, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, ErrClosed
	}
	if v, deleted, found := c.pendingValue(key); found {
		c.mu.Unlock()
		return v, !deleted, nil
	}
	if err := c.catchUpShared(); err != nil {
		c.mu.Unlock()
		return nil, false, err
	}
	l, ok := c.index[maphash.String(c.seed, key)]
	c.mu.Unlock()
	if !ok {
		return nil, false, nil
	}
	return c.read(key, l)
}

// pendingValue returns a copy of key's value in a batch not yet written
// (the batch's buffer is reused), or that its latest op there is a
// delete; found is false when no such batch holds an op of key. c.mu must
// be held.
func (c *Cache) pendingValue(key string) (value []byte, deleted, found bool) {
	for _, b := range [2]*batch{c.fill, c.writing} {
		if b == nil {
			continue
		}
		if i, ok := b.pending[key]; ok {
			op := b.ops[i]
			if op.op == opDelete {
				return nil, true, true
			}
			r, _ := parseRecord(b.buf[op.off : op.off+op.size])
			return bytes.Clone(r.value), false, true
		}
	}
	return nil, false, false
}

// read returns the value of key's record at l; false when the record is
// not a put of key (a shared hash, or a log changed under the index).
// c.fileMu must be read-locked.
func (c *Cache) read(key string, l loc) ([]byte, bool, error) {
	rec := make([]byte, l.size)
	if _, err := c.f.ReadAt(rec, l.off); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, false, nil
		}
		return nil, false, err
	}
	r, ok := parseRecord(rec)
	if !ok || r.op != opPut || r.key != key {
		return nil, false, nil
	}
	return r.value, true, nil
}

// Put stores value under key, replacing any entry. When it returns, the
// entry is seen by this Cache's Gets; it is written to the log, and seen
// by other processes, within FlushDelay, and is on the disk when the
// batch's fsync returns (Flush waits for that).
func (c *Cache) Put(key string, value []byte) error {
	if !validKey(key) {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	if len(value) > maxValue {
		return fmt.Errorf("cache: a value of %d bytes is over the %d a log record holds", len(value), maxValue)
	}
	return c.enqueue(opPut, key, value)
}

// Reject removes the entry under key, whose value proved invalid, so the
// next Get misses and the value is generated again. The entry is kept as
// dir/rejected/<key>.json, {"key", "value", "reason", "rejected_at"}, for
// analysis; a later rejection of the same key replaces it. Rejecting a
// key with no entry (another process rejected it first) does nothing.
func (c *Cache) Reject(key string, reason string) error {
	if !validKey(key) {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	c.fileMu.RLock()
	value, ok, err := c.lookup(key)
	c.fileMu.RUnlock()
	if err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	if !ok {
		return nil
	}
	kept, err := encode(key, value, reason, time.Now())
	if err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	// Kept first, removed second: a crash in between leaves the entry
	// in both places, never in neither.
	if err := writeAtomic(filepath.Join(c.dir, rejectedDir, key+".json"), kept); err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	if err := c.enqueue(opDelete, key, nil); err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	return nil
}

// Entry is one entry of a cache, with when it was put.
type Entry struct {
	Key   string
	Value []byte
	// PutAt is when the entry was last put; zero when the log does not
	// say (a record from before the log kept times).
	PutAt time.Time
}

// Entries calls yield with each entry, in no particular order, until
// yield returns false: Range with the entries' times, for copying a cache
// elsewhere (tenax cache copy) with its order of age. It sees what was
// written to the log; Flush first to include this Cache's latest Puts.
func (c *Cache) Entries(yield func(Entry) bool) error {
	c.fileMu.RLock()
	defer c.fileMu.RUnlock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	if err := c.catchUpShared(); err != nil {
		c.mu.Unlock()
		return err
	}
	locs := make([]loc, 0, len(c.index))
	for _, l := range c.index {
		locs = append(locs, l)
	}
	c.mu.Unlock()
	for _, l := range locs {
		rec := make([]byte, l.size)
		if _, err := c.f.ReadAt(rec, l.off); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		r, ok := parseRecord(rec)
		if !ok || r.op != opPut {
			continue
		}
		e := Entry{Key: r.key, Value: r.value}
		if r.at > 0 {
			e.PutAt = time.UnixMilli(r.at)
		}
		if !yield(e) {
			return nil
		}
	}
	return nil
}

// Range calls yield with each entry's key and value, in no particular
// order, until yield returns false: for inspecting a cache (which entry
// holds what) without knowing its keys. It sees what was written to the
// log; Flush first to include this Cache's latest Puts.
func (c *Cache) Range(yield func(key string, value []byte) bool) error {
	return c.Entries(func(e Entry) bool { return yield(e.Key, e.Value) })
}

// enqueue adds the record of op on key (and value) to the batch, and
// wakes the writer when the batch was empty or is full.
func (c *Cache) enqueue(op byte, key string, value []byte) error {
	at := time.Now().UnixMilli()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	b := c.fill
	start := len(b.buf)
	b.buf = appendRecord(b.buf, op, key, value, at)
	b.pending[key] = len(b.ops)
	b.ops = append(b.ops, pendingOp{key: key, op: op, off: start, size: len(b.buf) - start, at: at})
	c.w.Added(start == 0, len(b.buf) >= batchBytes)
	return nil
}

// catchUpShared is catchUp under the log's shared lock, which it takes
// only when the log has grown: a Get of a log that nobody wrote to since
// costs one read of nothing.
func (c *Cache) catchUpShared() error {
	if !c.grown() {
		return nil
	}
	if err := c.lock(false); err != nil {
		return err
	}
	defer c.unlock()
	if err := c.catchUp(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// grown reports whether the log may hold bytes past tail: a read of one
// byte, cheaper than the fstat catchUp starts with. A read that fails
// says yes, for catchUp to report the error.
func (c *Cache) grown() bool {
	var probe [1]byte
	n, err := c.f.ReadAt(probe[:], c.tail)
	return n > 0 || !errors.Is(err, io.EOF)
}

// catchUp indexes the records written since tail, by this process or any
// other. c.mu and the log's lock must be held: no write is in progress, so
// every byte up to the log's size is final.
func (c *Cache) catchUp() error {
	info, err := c.f.Stat()
	if err != nil {
		return err
	}
	size := info.Size()
	if size < c.tail {
		// Cut under us (another process's Open cut a torn tail this one
		// had read past): index it again from the start.
		c.reindex()
	}
	if c.buf == nil && c.tail < size {
		c.buf = make([]byte, scanBufSize)
	}
	for c.tail < size {
		n, err := c.f.ReadAt(c.buf[:min(int64(len(c.buf)), size-c.tail)], c.tail)
		if err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		if n == 0 {
			return nil // truncated under us: nothing more to index
		}
		consumed, need := scan(c.buf[:n], c.tail, size, c.apply)
		c.tail += int64(consumed)
		if consumed == 0 {
			if need <= len(c.buf) {
				return nil // cannot happen: a whole record that fits is read
			}
			c.buf = make([]byte, need) // a record longer than the buffer
		}
	}
	return nil
}

// apply indexes the record r found at off.
func (c *Cache) apply(r record, off int64, size int) {
	indexRecord(c.index, c.seed, r, off, size)
	c.end = off + int64(size)
}

// reindex forgets the index, for catchUp to build it from the log's start.
func (c *Cache) reindex() {
	clear(c.index)
	c.tail, c.end = 0, 0
}

// indexRecord applies the record r found at off to index.
func indexRecord(index map[uint64]loc, seed maphash.Seed, r record, off int64, size int) {
	h := maphash.String(seed, r.key)
	switch r.op {
	case opPut:
		index[h] = loc{off: off, size: uint32(size), at: r.at}
	case opDelete:
		delete(index, h)
	}
}

func validKey(key string) bool {
	return len(key) >= minKeyLen && len(key) <= maxKey && validHex(key)
}

// validHex reports whether s is lowercase hex digits only.
func validHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; (b < '0' || b > '9') && (b < 'a' || b > 'f') {
			return false
		}
	}
	return true
}
