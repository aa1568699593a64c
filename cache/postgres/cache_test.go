package postgres_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/tenaxhq/tenax/cache"
	pgcache "github.com/tenaxhq/tenax/cache/postgres"
	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/store/postgres"
)

// pool returns the pool of a store opened (and migrated) in a schema of
// the test's own.
func pool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	st, err := postgres.Open(t.Context(), pgtest.DSN(t, "tenax_cache_"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Close)
	return st.Pool()
}

func open(t *testing.T, p *pgxpool.Pool, opts pgcache.Options) *pgcache.Cache {
	t.Helper()
	c, err := pgcache.Open(t.Context(), p, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func key(t *testing.T, v any) string {
	t.Helper()
	k, err := cache.Key(v)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// counted returns the entries' bytes as tenax_cache_size holds them.
func counted(t *testing.T, p *pgxpool.Pool) int64 {
	t.Helper()
	var n int64
	if err := p.QueryRow(t.Context(), `SELECT bytes FROM tenax_cache_size`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestAPutIsAHitOnAnotherCacheOfTheDatabase: a Put is seen at once by
// its own Cache, and by another Cache on the database once flushed; a
// second Put of the key replaces it everywhere.
func TestAPutIsAHitOnAnotherCacheOfTheDatabase(t *testing.T) {
	p := pool(t)
	a, b := open(t, p, pgcache.Options{}), open(t, p, pgcache.Options{})
	k := key(t, "question")
	if _, ok, err := b.Get(k); ok || err != nil {
		t.Fatalf("Get before any Put: %v, %v, want a miss", ok, err)
	}
	if err := a.Put(k, []byte(`"first"`)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := a.Get(k); !ok || err != nil || string(v) != `"first"` {
		t.Errorf("own Get before the flush: %q, %v, %v", v, ok, err)
	}
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := b.Get(k); !ok || err != nil || string(v) != `"first"` {
		t.Errorf("other cache's Get after the flush: %q, %v, %v, want the answer A put", v, ok, err)
	}
	if err := b.Put(k, []byte(`"second"`)); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := a.Get(k); !ok || err != nil || string(v) != `"second"` {
		t.Errorf("Get after B replaced it and closed: %q, %v, %v, want the last write", v, ok, err)
	}
	if _, _, err := b.Get(k); !errors.Is(err, cache.ErrClosed) {
		t.Errorf("Get on a closed cache: %v, want ErrClosed", err)
	}
	if err := a.Put("not-hex", nil); !errors.Is(err, cache.ErrBadKey) {
		t.Errorf("Put of a bad key: %v, want ErrBadKey", err)
	}
	if err := a.Put(key(t, "empty"), nil); err != nil {
		t.Errorf("Put of an empty value: %v", err)
	}
	if err := a.Flush(); err != nil {
		t.Errorf("Flush of an empty value: %v", err)
	}
}

// TestRejectMovesTheEntryAsideWithItsReason: a rejected entry misses on
// every cache, even one put and not yet flushed, and is kept with its
// reason; a key without an entry is a no-op.
func TestRejectMovesTheEntryAsideWithItsReason(t *testing.T) {
	p := pool(t)
	a, b := open(t, p, pgcache.Options{}), open(t, p, pgcache.Options{})
	k := key(t, "bad")
	if err := a.Put(k, []byte(`{"x":1}`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Reject(k, "missing field y"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]*pgcache.Cache{"A": a, "B": b} {
		if _, ok, err := c.Get(k); ok || err != nil {
			t.Errorf("%s: Get after Reject: %v, %v, want a miss", name, ok, err)
		}
	}
	e, ok, err := b.Rejected(t.Context(), k)
	if err != nil || !ok || e.Reason != "missing field y" || string(e.Value) != `{"x":1}` || e.RejectedAt.IsZero() {
		t.Errorf("Rejected: %+v, %v, %v, want the value with its reason", e, ok, err)
	}
	if err := a.Reject(key(t, "never put"), "x"); err != nil {
		t.Errorf("Reject of a key without an entry: %v", err)
	}
	if _, ok, _ := a.Rejected(t.Context(), key(t, "never put")); ok {
		t.Error("a key without an entry was kept as rejected")
	}
	if s, err := a.Stats(t.Context()); err != nil || s.Entries != 0 || s.Rejected != 1 || counted(t, p) != 0 {
		t.Errorf("Stats after the rejection: %+v, %v, counted %d, want no entry and 1 rejected", s, err, counted(t, p))
	}
}

// TestOverTheBoundTheOldestEntriesAreEvicted: past MaxBytes, the oldest
// entries go until three quarters of the bound are left, and the newest
// stay; the count of bytes matches the table's.
func TestOverTheBoundTheOldestEntriesAreEvicted(t *testing.T) {
	p := pool(t)
	const entries, value = 40, 100
	k0 := key(t, 0)
	perEntry := int64(len(k0) + value)
	c := open(t, p, pgcache.Options{MaxBytes: 20 * perEntry})
	keys := make([]string, entries)
	for i := range entries {
		keys[i] = key(t, i)
		if err := c.Put(keys[i], []byte(strings.Repeat("v", value))); err != nil {
			t.Fatal(err)
		}
		if err := c.Flush(); err != nil { // one batch each: put_at orders them
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil { // waits for the eviction
		t.Fatal(err)
	}
	c = open(t, p, pgcache.Options{})
	s, err := c.Stats(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if s.Bytes > 20*perEntry || s.Bytes < 10*perEntry {
		t.Errorf("%d bytes left of a %d-byte bound, want at most the bound and no fewer than half of it", s.Bytes, 20*perEntry)
	}
	if got := counted(t, p); got != s.Bytes {
		t.Errorf("tenax_cache_size counts %d bytes, the table holds %d", got, s.Bytes)
	}
	if _, ok, _ := c.Get(keys[entries-1]); !ok {
		t.Error("the newest entry was evicted")
	}
	if _, ok, _ := c.Get(keys[0]); ok {
		t.Error("the oldest entry survived the eviction")
	}
}

// TestPruneAndClear: prune by age drops what was put before the cut,
// prune by size keeps the newest entries that fit, clear removes every
// entry and the rejected ones; Stats follow.
func TestPruneAndClear(t *testing.T) {
	p := pool(t)
	c := open(t, p, pgcache.Options{})
	for i := range 10 {
		if err := c.Put(key(t, i), []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Exec(t.Context(), `UPDATE tenax_cache SET put_at = now() - interval '2 days' WHERE key = ANY($1)`,
		[]string{key(t, 0), key(t, 1), key(t, 2)}); err != nil {
		t.Fatal(err)
	}
	// One batch shares one put_at: key 9 is made the newest.
	if _, err := p.Exec(t.Context(), `UPDATE tenax_cache SET put_at = now() + interval '1 minute' WHERE key = $1`, key(t, 9)); err != nil {
		t.Fatal(err)
	}
	s, err := c.Stats(t.Context())
	if err != nil || s.Entries != 10 || s.Oldest.After(time.Now().Add(-47*time.Hour)) || s.TableBytes <= 0 {
		t.Fatalf("Stats: %+v, %v, want 10 entries, the oldest 2 days old", s, err)
	}
	pr, err := c.Prune(t.Context(), -1, time.Now().Add(-24*time.Hour))
	if err != nil || pr.EntriesBefore != 10 || pr.EntriesAfter != 7 || pr.BytesAfter >= pr.BytesBefore {
		t.Errorf("Prune --older-than 24h: %+v, %v, want 10 entries before, 7 after", pr, err)
	}
	perEntry := int64(len(key(t, 0)) + 1)
	pr, err = c.Prune(t.Context(), 3*perEntry, time.Time{})
	if err != nil || pr.EntriesAfter != 3 || pr.BytesAfter != 3*perEntry {
		t.Errorf("Prune --max-bytes of 3 entries: %+v, %v, want 3 entries left", pr, err)
	}
	if _, ok, _ := c.Get(key(t, 9)); !ok {
		t.Error("the newest entry was pruned")
	}
	if err := c.Reject(key(t, 9), "wrong"); err != nil {
		t.Fatal(err)
	}
	pr, err = c.Clear(t.Context())
	if err != nil || pr.EntriesBefore != 2 {
		t.Errorf("Clear: %+v, %v, want the 2 entries left removed", pr, err)
	}
	if s, err := c.Stats(t.Context()); err != nil || s.Entries != 0 || s.Rejected != 0 || !s.Oldest.IsZero() || counted(t, p) != 0 {
		t.Errorf("Stats after Clear: %+v, %v, want nothing", s, err)
	}
}

// TestOpenWithoutTheTableSaysWhichMigrationMakesIt: a pool on a schema
// the store never migrated is refused with the migration to run.
func TestOpenWithoutTheTableSaysWhichMigrationMakesIt(t *testing.T) {
	p, err := pgxpool.New(t.Context(), pgtest.DSN(t, "tenax_cache_"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if _, err := pgcache.Open(t.Context(), p, pgcache.Options{}); err == nil || !strings.Contains(err.Error(), "migration 2") {
		t.Errorf("Open on an empty schema: %v, want the migration named", err)
	}
}
