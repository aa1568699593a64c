package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/cache"
)

// copyInsertSQL copies a batch of entries (keys, values, times): a key
// the table holds as new or newer is left alone, and so is one rejected
// here since the entry was put (the same bad answer, most likely), so a
// copy never undoes what this database learnt after it.
const copyInsertSQL = `INSERT INTO tenax_cache AS c (key, value, put_at)
	SELECT k, v, t FROM unnest($1::text[], $2::bytea[], $3::timestamptz[]) AS x (k, v, t)
	WHERE NOT EXISTS (SELECT 1 FROM tenax_cache_rejected r WHERE r.key = x.k AND r.rejected_at >= x.t)
	ORDER BY k
	ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, put_at = EXCLUDED.put_at
	WHERE c.put_at < EXCLUDED.put_at`

// copyRejectedSQL copies a batch of rejected entries (keys, values,
// reasons, times), a rejection kept here as new or newer winning, and
// drops the entry of the same key and the same value put before the
// rejection: the answer proved invalid wherever it is cached.
const copyRejectedSQL = `WITH x AS (
		SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::timestamptz[]) AS x (k, v, r, t)
	), gone AS (
		DELETE FROM tenax_cache c USING x WHERE c.key = x.k AND c.value = x.v AND c.put_at <= x.t
	)
	INSERT INTO tenax_cache_rejected AS j (key, value, reason, rejected_at)
	SELECT k, v, r, t FROM x ORDER BY k
	ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, reason = EXCLUDED.reason, rejected_at = EXCLUDED.rejected_at
	WHERE j.rejected_at < EXCLUDED.rejected_at`

// copyBatch is the most entries, and copyBatchBytes about the most bytes,
// that one transaction of a copy writes.
const (
	copyBatch      = 1000
	copyBatchBytes = 8 << 20
)

// unknownTime is the time a copied entry of unknown time is put at: older
// than any other, as the file cache reads it, and the same at every copy,
// so a second copy finds it there already.
var unknownTime = time.Unix(0, 0).UTC()

// Copied is what CopyFrom did: of the entries and the rejected entries it
// read, how many it wrote and how many it left alone (the database held
// them as new or newer).
type Copied struct {
	Entries, EntriesCopied   int
	Rejected, RejectedCopied int
}

// Copied returns how many entries and rejected entries were written.
func (p Copied) Copied() int { return p.EntriesCopied + p.RejectedCopied }

// Skipped returns how many were left alone.
func (p Copied) Skipped() int { return p.Entries + p.Rejected - p.Copied() }

// CopyFrom copies every entry of src, a cache in a directory, into this
// one, keys and times kept, then src's rejected entries with their
// reasons: an answer paid for on one machine becomes a hit for every
// worker on the database. An entry the database holds as new or newer is
// left alone, so a copy run twice writes nothing the second time and
// never replaces an answer put here since. progress, when not nil, is
// called after each transaction (about every thousand entries) with the
// counts so far. Entries are written a batch per transaction: a copy that
// fails leaves the batches before it, and run again, it goes on.
func (c *Cache) CopyFrom(ctx context.Context, src *cache.Cache, progress func(Copied)) (Copied, error) {
	if err := c.Flush(); err != nil {
		return Copied{}, err
	}
	var (
		done  Copied
		batch []cache.Entry
		bytes int
		werr  error
	)
	write := func() bool {
		n, size, err := c.copyEntries(ctx, batch)
		if err != nil {
			werr = fmt.Errorf("cache: copy: %w", err)
			return false
		}
		done.Entries += len(batch)
		done.EntriesCopied += n
		batch, bytes = batch[:0], 0
		c.maybeEvict(size)
		if progress != nil {
			progress(done)
		}
		return true
	}
	err := src.Entries(func(e cache.Entry) bool {
		batch = append(batch, e)
		bytes += len(e.Key) + len(e.Value)
		return len(batch) < copyBatch && bytes < copyBatchBytes || write()
	})
	if err == nil && werr == nil && len(batch) > 0 {
		write()
	}
	if err = errors.Join(werr, err); err != nil {
		return done, err
	}
	var rejected []cache.RejectedEntry
	if err := src.Rejected(func(r cache.RejectedEntry) bool {
		rejected = append(rejected, r)
		return true
	}); err != nil {
		return done, err
	}
	for chunk := range slices.Chunk(rejected, copyBatch) {
		n, err := c.copyRejected(ctx, chunk)
		if err != nil {
			return done, fmt.Errorf("cache: copy: %w", err)
		}
		done.Rejected += len(chunk)
		done.RejectedCopied += n
		if progress != nil {
			progress(done)
		}
	}
	return done, nil
}

// copyEntries writes entries in one transaction and returns how many it
// wrote and the entries' bytes after it.
func (c *Cache) copyEntries(ctx context.Context, entries []cache.Entry) (int, int64, error) {
	keys := make([]string, len(entries))
	values := make([][]byte, len(entries))
	times := make([]time.Time, len(entries))
	for i, e := range entries {
		keys[i], values[i], times[i] = e.Key, e.Value, e.PutAt
		if e.PutAt.IsZero() {
			times[i] = unknownTime
		}
		if values[i] == nil {
			values[i] = []byte{} // bytea NOT NULL: an empty answer is an empty value
		}
	}
	var (
		n    int
		size int64
	)
	err := c.locked(ctx, func(tx pgx.Tx, _ int64) error {
		tag, err := tx.Exec(ctx, copyInsertSQL, keys, values, times)
		if err != nil {
			return err
		}
		n = int(tag.RowsAffected())
		return tx.QueryRow(ctx, `SELECT bytes FROM tenax_cache_size`).Scan(&size)
	})
	return n, size, err
}

// copyRejected writes rejected entries in one transaction and returns how
// many it wrote.
func (c *Cache) copyRejected(ctx context.Context, rejected []cache.RejectedEntry) (int, error) {
	keys := make([]string, len(rejected))
	values := make([][]byte, len(rejected))
	reasons := make([]string, len(rejected))
	times := make([]time.Time, len(rejected))
	for i, r := range rejected {
		keys[i], values[i], reasons[i], times[i] = r.Key, r.Value, r.Reason, r.RejectedAt
		if r.RejectedAt.IsZero() {
			times[i] = unknownTime
		}
		if values[i] == nil {
			values[i] = []byte{}
		}
	}
	var n int
	err := c.locked(ctx, func(tx pgx.Tx, _ int64) error {
		tag, err := tx.Exec(ctx, copyRejectedSQL, keys, values, reasons, times)
		n = int(tag.RowsAffected())
		return err
	})
	return n, err
}
