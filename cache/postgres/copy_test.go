package postgres_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/cache"
	pgcache "github.com/tenaxhq/tenax/cache/postgres"
)

// fileCacheOfBothLayouts returns a file cache holding n entries put to its
// log, two of the file-per-entry layout (moved into the log as Open
// does), and one rejected entry; keys[i] is "entry i", keys[n] and
// keys[n+1] the old layout's, rejected the rejected one's key.
func fileCacheOfBothLayouts(t *testing.T, n int) (src *cache.Cache, keys []string, rejected string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cache")
	c, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		keys = append(keys, key(t, "entry "+strconv.Itoa(i)))
		if err := c.Put(keys[i], []byte(`{"n":`+strconv.Itoa(i)+`}`)); err != nil {
			t.Fatal(err)
		}
	}
	rejected = key(t, "bad answer")
	if err := c.Put(rejected, []byte(`{"bad":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.Reject(rejected, "missing field n"); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		k := key(t, "old "+strconv.Itoa(i))
		keys = append(keys, k)
		path := filepath.Join(dir, k[:2], k+".json")
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(`{"key":"`+k+`","value":{"old":`+strconv.Itoa(i)+`}}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	src, err = cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = src.Close() })
	return src, keys, rejected
}

// TestCopyFromADirectoryKeepsEntriesRejectionsAndNewerAnswers: every
// entry of a file cache, of the log and of the old layout, is copied
// with its key, the rejected one with its reason; an answer the database
// holds as newer, or rejected since, is left alone, an older one is
// replaced; a second copy writes nothing.
func TestCopyFromADirectoryKeepsEntriesRejectionsAndNewerAnswers(t *testing.T) {
	const n = 2500 // three transactions
	src, keys, rejected := fileCacheOfBothLayouts(t, n)
	p := pool(t)
	dst := open(t, p, pgcache.Options{})
	newer, older, rejectedHere := keys[0], keys[1], keys[2]
	if err := dst.Put(newer, []byte(`"put here since"`)); err != nil {
		t.Fatal(err)
	}
	if err := dst.Put(rejectedHere, []byte(`"bad here"`)); err != nil {
		t.Fatal(err)
	}
	if err := dst.Reject(rejectedHere, "invalid here"); err != nil {
		t.Fatal(err)
	}
	// An answer put here long ago: a direct write, as no Put takes a time.
	if _, err := p.Exec(t.Context(), `INSERT INTO tenax_cache (key, value, put_at) VALUES ($1, '"stale"', '2000-01-01')`, older); err != nil {
		t.Fatal(err)
	}
	var progress []pgcache.Copied
	got, err := dst.CopyFrom(t.Context(), src, func(c pgcache.Copied) { progress = append(progress, c) })
	if err != nil {
		t.Fatal(err)
	}
	want := pgcache.Copied{Entries: n + 2, EntriesCopied: n + 2 - 2, Rejected: 1, RejectedCopied: 1}
	if got != want {
		t.Errorf("CopyFrom: %+v, want %+v (all but the newer and the rejected-here answers)", got, want)
	}
	if len(progress) != 4 || progress[len(progress)-1] != got {
		t.Errorf("progress calls: %+v, want one per transaction (3 of entries, 1 of rejected ones) ending with the result", progress)
	}
	for i, k := range keys {
		v, ok, err := dst.Get(k)
		wantV := `{"n":` + strconv.Itoa(i) + `}`
		switch {
		case i >= n:
			wantV = `{"old":` + strconv.Itoa(i-n) + `}`
		case k == newer:
			wantV = `"put here since"`
		}
		if k == rejectedHere {
			if ok || err != nil {
				t.Errorf("the entry rejected here since was copied back: %q, %v, %v", v, ok, err)
			}
			continue
		}
		if !ok || err != nil || string(v) != wantV {
			t.Fatalf("entry %d after the copy: %q, %v, %v, want %s", i, v, ok, err, wantV)
		}
	}
	e, ok, err := dst.Rejected(t.Context(), rejected)
	if !ok || err != nil || e.Reason != "missing field n" || string(e.Value) != `{"bad":true}` || time.Since(e.RejectedAt) > time.Hour {
		t.Errorf("the rejected entry after the copy: %+v, %v, %v, want its value, reason and time", e, ok, err)
	}
	again, err := dst.CopyFrom(t.Context(), src, nil)
	if err != nil || again.Copied() != 0 || again.Skipped() != n+3 {
		t.Errorf("a second copy: %+v (copied %d, skipped %d), %v, want 0 copied, %d skipped", again, again.Copied(), again.Skipped(), err, n+3)
	}
	var rows int
	if err := p.QueryRow(t.Context(), `SELECT count(*) FROM tenax_cache`).Scan(&rows); err != nil || rows != n+1 {
		t.Errorf("%d rows after two copies (%v), want %d", rows, err, n+1)
	}
	var sum int64
	if err := p.QueryRow(t.Context(), `SELECT coalesce(sum(bytes), 0) FROM tenax_cache`).Scan(&sum); err != nil || sum != counted(t, p) {
		t.Errorf("tenax_cache_size holds %d after the copy, the rows %d (%v)", counted(t, p), sum, err)
	}
}

// TestCopyingARejectionDropsTheSameAnswerCachedHere: the database holds
// the answer a file cache rejected since; the copy of the rejection
// removes it, so no worker is served it again.
func TestCopyingARejectionDropsTheSameAnswerCachedHere(t *testing.T) {
	p := pool(t)
	dst := open(t, p, pgcache.Options{})
	k := key(t, "question")
	if err := dst.Put(k, []byte(`{"bad":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := dst.Flush(); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Put(k, []byte(`{"bad":true}`)); err != nil {
		t.Fatal(err)
	}
	if err := src.Reject(k, "missing field n"); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.CopyFrom(t.Context(), src, nil); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := dst.Get(k); ok || err != nil {
		t.Errorf("Get after copying its rejection: %q, %v, %v, want a miss", v, ok, err)
	}
}
