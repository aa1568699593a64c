package cache

import (
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

// SyncDelay is how long after a write the log is synced to the disk, at
// most: writes within it share one fsync. See the package doc for what an
// entry survives before and after.
const SyncDelay = 100 * time.Millisecond

// scanBufSize is the log read at a time when catching up.
const scanBufSize = 256 << 10

// ErrBadKey is returned, wrapped, for a key that is not 16 or more
// lowercase hex digits.
var ErrBadKey = errors.New("cache: key must be 16 or more lowercase hex digits")

// ErrClosed is returned, wrapped, by a Cache used after Close.
var ErrClosed = errors.New("cache: closed")

// Cache is a response cache in a directory: one append-only log of
// entries, indexed in memory. It is safe for concurrent use, also by
// several processes sharing the directory: each sees the others' entries
// at its next Get, and the last Put of a key wins.
type Cache struct {
	dir  string
	f    *os.File // the log, opened O_APPEND: writes from every process land at its end
	fd   int      // f's descriptor, for its lock
	seed maphash.Seed

	mu sync.Mutex
	// index maps a key's hash to its latest record; a hash shared by two
	// keys (about 1 in 10^7 for 10^6 keys) costs a miss, never a wrong
	// value, since Get checks the key the record holds.
	index map[uint64]loc
	// tail is how far the log is indexed.
	tail        int64
	buf         []byte
	syncPending bool
	closed      bool
}

// loc is where a record is in the log.
type loc struct {
	off  int64
	size uint32
}

// Open returns the cache in dir, creating the directory and its log if
// needed. A directory of the older file-per-entry layout
// (dir/<key[:2]>/<key>.json) is migrated into the log first.
func Open(dir string) (*Cache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, LogName), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cache: %w", err)
	}
	c := &Cache{dir: dir, f: f, fd: int(f.Fd()), seed: maphash.MakeSeed(), index: make(map[uint64]loc)}
	if err := c.lock(true); err != nil {
		f.Close()
		return nil, err
	}
	_, err = c.migrate()
	c.unlock()
	if err != nil {
		f.Close()
		return nil, err
	}
	return c, nil
}

// Dir returns the cache's directory.
func (c *Cache) Dir() string { return c.dir }

// Close syncs the log and releases it. Entries written before it are on
// the disk when it returns.
func (c *Cache) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	err := c.f.Sync()
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
	l, ok, err := c.locate(key)
	if err != nil || !ok {
		return nil, false, err
	}
	v, ok, err := c.read(key, l)
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	return v, ok, nil
}

// locate catches up with the log and returns where key's entry is.
func (c *Cache) locate(key string) (loc, bool, error) {
	h := maphash.String(c.seed, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return loc{}, false, ErrClosed
	}
	if err := c.catchUpShared(); err != nil {
		return loc{}, false, err
	}
	l, ok := c.index[h]
	return l, ok, nil
}

// read returns the value of key's record at l; false when the record is
// not a put of key (a shared hash, or a log changed under the index).
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
// entry is in the log, whole, and seen by every process's next Get; it
// reaches the disk within SyncDelay.
func (c *Cache) Put(key string, value []byte) error {
	if !validKey(key) {
		return fmt.Errorf("%w: %q", ErrBadKey, key)
	}
	if len(value) > maxValue {
		return fmt.Errorf("cache: a value of %d bytes is over the %d a log record holds", len(value), maxValue)
	}
	return c.append(opPut, key, value)
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
	l, ok, err := c.locate(key)
	if err != nil || !ok {
		return err
	}
	value, ok, err := c.read(key, l)
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
	if err := c.append(opDelete, key, nil); err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	return nil
}

// Range calls yield with each entry's key and value, in no particular
// order, until yield returns false: for inspecting a cache (which entry
// holds what) without knowing its keys.
func (c *Cache) Range(yield func(key string, value []byte) bool) error {
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
		if r, ok := parseRecord(rec); ok && r.op == opPut {
			if !yield(r.key, r.value) {
				return nil
			}
		}
	}
	return nil
}

// append writes the record of op on key at the end of the log in one
// write, indexes it (and whatever other processes wrote before it), and
// schedules the sync.
func (c *Cache) append(op byte, key string, value []byte) error {
	rec := appendRecord(nil, op, key, value)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if err := c.lock(true); err != nil {
		return err
	}
	defer c.unlock()
	// Caught up under the exclusive lock, the log ends at tail, where
	// this write lands: the record is indexed without reading it back.
	if c.grown() {
		if err := c.catchUp(); err != nil {
			return fmt.Errorf("cache: %w", err)
		}
	}
	if _, err := c.f.Write(rec); err != nil {
		// A part written is torn bytes, which every scan skips.
		return fmt.Errorf("cache: %w", err)
	}
	c.apply(record{op: op, key: key}, c.tail, len(rec))
	c.tail += int64(len(rec))
	if !c.syncPending {
		c.syncPending = true
		time.AfterFunc(SyncDelay, c.sync)
	}
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

// sync is the grouped fsync that append schedules.
func (c *Cache) sync() {
	c.mu.Lock()
	c.syncPending = false
	closed := c.closed
	c.mu.Unlock()
	if !closed {
		_ = c.f.Sync() // a failed sync only widens what a crash can lose
	}
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
	h := maphash.String(c.seed, r.key)
	switch r.op {
	case opPut:
		c.index[h] = loc{off: off, size: uint32(size)}
	case opDelete:
		delete(c.index, h)
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
