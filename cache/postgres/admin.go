package postgres

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/cache"
)

// Stats is what the cache in the database holds.
type Stats struct {
	// Entries and Bytes are the entries and their bytes (keys and
	// values), what the bound counts.
	Entries int
	Bytes   int64
	// TableBytes is what tenax_cache takes on disk, its index and
	// out-of-line values included: Bytes, PostgreSQL's overhead, and the
	// space of deleted rows that VACUUM has not yet given back.
	TableBytes int64
	// Oldest and Newest are when the oldest and newest entries were put;
	// zero when there is none.
	Oldest, Newest time.Time
	// Rejected counts the entries kept in tenax_cache_rejected.
	Rejected int
}

// Stats returns what the cache holds, as committed: Flush first to
// include this Cache's latest Puts.
func (c *Cache) Stats(ctx context.Context) (Stats, error) {
	var s Stats
	var oldest, newest *time.Time
	err := c.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(bytes), 0), min(put_at), max(put_at),
		(SELECT count(*) FROM tenax_cache_rejected), pg_total_relation_size(to_regclass('tenax_cache'))
		FROM tenax_cache`).Scan(&s.Entries, &s.Bytes, &oldest, &newest, &s.Rejected, &s.TableBytes)
	if err != nil {
		return Stats{}, fmt.Errorf("cache: %w", err)
	}
	if oldest != nil {
		s.Oldest, s.Newest = *oldest, *newest
	}
	return s, nil
}

// WriteText writes the stats as tenax cache stats prints them, one
// "name: value" line each, times in UTC, as package cache's Stats does.
func (s Stats) WriteText(w io.Writer) error {
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format(time.RFC3339)
	}
	_, err := fmt.Fprintf(w, "entries:  %d\nbytes:    %d (the table takes %d on disk)\nrejected: %d\noldest:   %s\nnewest:   %s\n",
		s.Entries, s.Bytes, s.TableBytes, s.Rejected, when(s.Oldest), when(s.Newest))
	return err
}

// Prune deletes the entries put before olderThan (when not zero) and,
// when maxBytes is 0 or more, the oldest entries whose bytes are over
// maxBytes; maxBytes below 0 is no bound. This Cache's Puts are written
// first, and kept unless the prune drops them. The bytes of Pruned are
// the entries', as the bound counts them.
func (c *Cache) Prune(ctx context.Context, maxBytes int64, olderThan time.Time) (cache.Pruned, error) {
	if err := c.Flush(); err != nil {
		return cache.Pruned{}, err
	}
	var p cache.Pruned
	err := c.locked(ctx, func(tx pgx.Tx, size int64) error {
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tenax_cache`).Scan(&p.EntriesBefore); err != nil {
			return err
		}
		p.BytesBefore = size
		if !olderThan.IsZero() {
			if _, err := tx.Exec(ctx, `DELETE FROM tenax_cache WHERE put_at < $1`, olderThan); err != nil {
				return err
			}
			if err := tx.QueryRow(ctx, `SELECT bytes FROM tenax_cache_size`).Scan(&size); err != nil {
				return err
			}
		}
		if maxBytes >= 0 {
			if _, err := evict(ctx, tx, size, maxBytes); err != nil {
				return err
			}
		}
		return tx.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenax_cache), bytes FROM tenax_cache_size`).Scan(&p.EntriesAfter, &p.BytesAfter)
	})
	if err != nil {
		return cache.Pruned{}, fmt.Errorf("cache: prune: %w", err)
	}
	return p, nil
}

// Clear removes every entry, and the rejected ones kept for analysis,
// for every process on the database.
func (c *Cache) Clear(ctx context.Context) (cache.Pruned, error) {
	if err := c.Flush(); err != nil {
		return cache.Pruned{}, err
	}
	var p cache.Pruned
	err := c.locked(ctx, func(tx pgx.Tx, size int64) error {
		p.BytesBefore = size
		tag, err := tx.Exec(ctx, `DELETE FROM tenax_cache`)
		if err != nil {
			return err
		}
		p.EntriesBefore = int(tag.RowsAffected())
		_, err = tx.Exec(ctx, `DELETE FROM tenax_cache_rejected`)
		return err
	})
	if err != nil {
		return cache.Pruned{}, fmt.Errorf("cache: clear: %w", err)
	}
	return p, nil
}
