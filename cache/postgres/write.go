package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/cache"
)

// upsertSQL writes a batch: its keys (sorted) and their values.
const upsertSQL = `INSERT INTO tenax_cache (key, value)
	SELECT k, v FROM unnest($1::text[], $2::bytea[]) AS t (k, v) ORDER BY k
	ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, put_at = now()`

// Flush writes the entries put so far and waits for their commit: when it
// returns nil every process on the database sees them. It returns the
// error of a write that failed since the last Flush (the entries of that
// batch are lost: it is a cache).
func (c *Cache) Flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return cache.ErrClosed
	}
	if err := c.w.Flush(len(c.fill) > 0); err != nil {
		return fmt.Errorf("cache: %w", err)
	}
	return nil
}

// tableBatches is the table's storage step for the Cache's Writer: a
// batch is a map of keys to their latest values.
type tableBatches struct{ c *Cache }

// Take swaps the batch being filled for an empty one. Gets find it in
// c.writing until it is committed.
func (t tableBatches) Take() (map[string][]byte, bool) {
	c := t.c
	if len(c.fill) == 0 {
		return nil, false
	}
	b := c.fill
	c.fill, c.writing, c.fillBytes = map[string][]byte{}, b, 0
	return b, true
}

// Write writes b in one transaction, then starts an eviction when the
// table is over its bound.
func (t tableBatches) Write(b map[string][]byte) error {
	size, err := t.c.write(b)
	if err == nil {
		t.c.maybeEvict(size)
	}
	return err
}

// Written forgets b: its entries are in the table.
func (t tableBatches) Written(map[string][]byte) { t.c.writing = nil }

// write upserts b's entries and returns the entries' bytes after it.
func (c *Cache) write(b map[string][]byte) (int64, error) {
	keys := make([]string, 0, len(b))
	for k := range b {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	values := make([][]byte, len(keys))
	for i, k := range keys {
		values[i] = b[k]
	}
	ctx, cancel := c.op()
	defer cancel()
	var size int64
	err := c.locked(ctx, func(tx pgx.Tx, _ int64) error {
		if _, err := tx.Exec(ctx, upsertSQL, keys, values); err != nil {
			return err
		}
		return tx.QueryRow(ctx, `SELECT bytes FROM tenax_cache_size`).Scan(&size)
	})
	return size, err
}

// maybeEvict starts an eviction in the background when size, the
// entries' bytes, is over the bound, one at a time in this Cache.
func (c *Cache) maybeEvict(size int64) {
	if c.opts.MaxBytes <= 0 || size <= c.opts.MaxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.evicting {
		return
	}
	c.evicting = true
	c.bg.Go(func() {
		defer func() {
			c.mu.Lock()
			c.evicting = false
			c.mu.Unlock()
		}()
		ctx, cancel := c.op()
		defer cancel()
		target := c.opts.MaxBytes / 4 * 3
		err := c.locked(ctx, func(tx pgx.Tx, size int64) error {
			_, err := evict(ctx, tx, size, target)
			return err
		})
		if err != nil {
			c.mu.Lock()
			c.w.Fail(fmt.Errorf("evicting: %w", err))
			c.mu.Unlock()
		}
	})
}

// evictSQL deletes, of the evictChunk oldest entries, the oldest ones
// whose bytes make up $1, and says how many and how many bytes.
const evictSQL = `WITH oldest AS (
		SELECT key, bytes, sum(bytes) OVER (ORDER BY put_at, key) AS upto
		FROM (SELECT key, bytes, put_at FROM tenax_cache ORDER BY put_at, key LIMIT ` + evictChunk + `) o
	), gone AS (
		DELETE FROM tenax_cache WHERE key IN (SELECT key FROM oldest WHERE upto - bytes < $1) RETURNING bytes
	)
	SELECT count(*), coalesce(sum(bytes), 0) FROM gone`

// evictChunk is the most entries one statement of an eviction deletes:
// each reads the oldest entries by the index on put_at, so an eviction
// costs the entries it removes, not the table.
const evictChunk = "1000"

// evict deletes the oldest entries until the entries' bytes, size now,
// are at most target, and returns how many it deleted. tx holds
// tenax_cache_size's row (locked).
func evict(ctx context.Context, tx pgx.Tx, size, target int64) (int, error) {
	deleted := 0
	for size > target {
		var n int
		var bytes int64
		if err := tx.QueryRow(ctx, evictSQL, size-target).Scan(&n, &bytes); err != nil {
			return deleted, err
		}
		if n == 0 {
			break
		}
		deleted += n
		size -= bytes
	}
	return deleted, nil
}
