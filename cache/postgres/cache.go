package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/cache"
)

// FlushDelay is how long a Put waits in memory, at most, before its batch
// is written: every Put of that time shares one round trip and one
// commit. It is package cache's.
const FlushDelay = cache.FlushDelay

// batchBytes is the batch size at which it is written without waiting out
// FlushDelay.
const batchBytes = 1 << 20

// opTimeout bounds each statement the cache runs: a database that stops
// answering costs an item a miss, not a call that never ends.
const opTimeout = 30 * time.Second

// Options are what Open is told beyond the pool.
type Options struct {
	// MaxBytes bounds the entries' bytes (each entry's key and value):
	// once a write leaves the table over it, the oldest entries are
	// evicted down to three quarters of it. 0 is no bound.
	MaxBytes int64
}

// Cache is the response cache in a PostgreSQL database. It is safe for
// concurrent use, also by many processes on the database: each sees the
// others' entries once their batch commits (within FlushDelay of their
// Put), and the last write of a key wins.
type Cache struct {
	pool *pgxpool.Pool
	opts Options
	// base is the context of the cache's statements: Open's, without its
	// cancellation (the cache outlives the call that opened it),
	// cancelled by Close once the last batch is written.
	base   context.Context
	cancel context.CancelFunc

	mu sync.Mutex
	// fill is the batch Puts add to; writing, when not nil, the one being
	// written. Each maps a key to its latest value. w writes them.
	fill, writing map[string][]byte
	fillBytes     int
	w             *cache.Writer[map[string][]byte]
	closed        bool
	evicting      bool

	bg sync.WaitGroup
}

// Open returns the cache in the database pool connects to, in the schema
// its search_path names, where the store's migrations made its tables
// (store/postgres.Open and New migrate). The pool stays the caller's:
// Close does not close it. A table over opts.MaxBytes is evicted down in
// the background.
func Open(ctx context.Context, pool *pgxpool.Pool, opts Options) (*Cache, error) {
	var size int64
	if err := pool.QueryRow(ctx, `SELECT bytes FROM tenax_cache_size`).Scan(&size); err != nil {
		return nil, fmt.Errorf("cache: the response cache's table in PostgreSQL (made by the store's migration 2): %w", err)
	}
	base, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c := &Cache{
		pool: pool, opts: opts, base: base, cancel: cancel,
		fill: map[string][]byte{},
	}
	c.w = cache.NewWriter(&c.mu, tableBatches{c})
	c.maybeEvict(size)
	return c, nil
}

// op returns the context of one statement.
func (c *Cache) op() (context.Context, context.CancelFunc) {
	return context.WithTimeout(c.base, opTimeout)
}

// Get returns the value stored under key: from this Cache's batch not yet
// written, else from the table. A missing entry is a miss (false, nil);
// the error is for a bad key, a closed cache or a query that failed.
func (c *Cache) Get(key string) ([]byte, bool, error) {
	if err := cache.CheckKey(key); err != nil {
		return nil, false, err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, false, cache.ErrClosed
	}
	for _, b := range [2]map[string][]byte{c.fill, c.writing} {
		if v, ok := b[key]; ok {
			c.mu.Unlock()
			return slices.Clone(v), true, nil
		}
	}
	c.mu.Unlock()
	ctx, cancel := c.op()
	defer cancel()
	var v []byte
	err := c.pool.QueryRow(ctx, `SELECT value FROM tenax_cache WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("cache: %w", err)
	}
	return v, true, nil
}

// Put stores value under key, replacing any entry. When it returns, the
// entry is seen by this Cache's Gets; it is written, and seen by every
// other process, within FlushDelay (Flush waits for that).
func (c *Cache) Put(key string, value []byte) error {
	if err := cache.CheckKey(key); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return cache.ErrClosed
	}
	first := len(c.fill) == 0
	if old, ok := c.fill[key]; ok {
		c.fillBytes -= len(key) + len(old)
	}
	// bytea NOT NULL: an empty answer is an empty value, not a NULL.
	c.fill[key] = append([]byte{}, value...)
	c.fillBytes += len(key) + len(value)
	c.w.Added(first, c.fillBytes >= batchBytes)
	return nil
}

// Reject removes the entry under key, whose value proved invalid, so the
// next Get misses, on every process, and the value is generated again.
// The entry is kept in tenax_cache_rejected with the reason, for
// analysis (Rejected reads it); a later rejection of the same key
// replaces it. Rejecting a key with no entry does nothing. The Puts of
// this Cache are written first, so one of key not yet written is
// rejected too.
func (c *Cache) Reject(key string, reason string) error {
	if err := cache.CheckKey(key); err != nil {
		return err
	}
	if err := c.Flush(); err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	ctx, cancel := c.op()
	defer cancel()
	err := c.locked(ctx, func(tx pgx.Tx, _ int64) error {
		_, err := tx.Exec(ctx, `WITH gone AS (DELETE FROM tenax_cache WHERE key = $1 RETURNING value)
			INSERT INTO tenax_cache_rejected (key, value, reason) SELECT $1, value, $2 FROM gone
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, reason = EXCLUDED.reason, rejected_at = now()`, key, reason)
		return err
	})
	if err != nil {
		return fmt.Errorf("cache: reject: %w", err)
	}
	return nil
}

// RejectedEntry is an entry Reject moved out of the cache: package
// cache's, so a rejected entry copied from a directory is the same value.
type RejectedEntry = cache.RejectedEntry

// Rejected returns the rejected entry of key; false when key was never
// rejected (or the cache was cleared since).
func (c *Cache) Rejected(ctx context.Context, key string) (RejectedEntry, bool, error) {
	e := RejectedEntry{Key: key}
	err := c.pool.QueryRow(ctx, `SELECT value, reason, rejected_at FROM tenax_cache_rejected WHERE key = $1`, key).
		Scan(&e.Value, &e.Reason, &e.RejectedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return RejectedEntry{}, false, nil
	}
	if err != nil {
		return RejectedEntry{}, false, fmt.Errorf("cache: %w", err)
	}
	return e, true, nil
}

// locked runs f in a transaction that holds tenax_cache_size's row, with
// the entries' bytes as it found them: every writer takes that lock
// first, so writers take turns and none waits on another's entry rows
// while holding its own.
func (c *Cache) locked(ctx context.Context, f func(tx pgx.Tx, size int64) error) error {
	return pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error {
		var size int64
		if err := tx.QueryRow(ctx, `SELECT bytes FROM tenax_cache_size FOR UPDATE`).Scan(&size); err != nil {
			return err
		}
		return f(tx, size)
	})
}

// Close writes what is still in memory and waits for it, and for an
// eviction under way; the error is that of a write that failed and was
// not yet returned by Flush. The pool stays open.
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
	c.cancel()
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.w.Err(); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}
