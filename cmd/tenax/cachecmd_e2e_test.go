package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/cache"
	"github.com/tenaxhq/tenax/mock"
)

// TestCacheCommandsShowPruneAndClearACache: stats counts what a cache
// holds, prune and clear refuse without their flags (exit 2, CI having no
// terminal to ask), and do what they say with them.
func TestCacheCommandsShowPruneAndClearACache(t *testing.T) {
	w := newWorkdir(t)
	dir := filepath.Join(w.home, "cache")
	c, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		key, _ := cache.Key(strconv.Itoa(i))
		if err := c.Put(key, []byte(`{"answer":"`+strings.Repeat("a", 100)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cache", "stats"}, 0, "entries:  30"},
		{[]string{"cache", "clear"}, 2, "--yes"},
		{[]string{"cache", "prune"}, 2, "--max-bytes"},
		{[]string{"cache", "prune", "--max-bytes", "1000", "--dir", dir}, 0, "30 entries"},
		{[]string{"cache", "stats", "--dir", dir}, 0, "entries:  5"},
		{[]string{"cache", "clear", "--yes"}, 0, "0 entries, 0 bytes after"},
		{[]string{"cache", "stats"}, 0, "entries:  0"},
	}
	for _, s := range steps {
		r := w.tenax(s.args...)
		if r.code != s.code || !strings.Contains(r.stdout+r.stderr, s.want) {
			t.Fatalf("tenax %s: exit %d, want %d with %q in its output\n%s%s", strings.Join(s.args, " "), r.code, s.code, s.want, r.stdout, r.stderr)
		}
	}
}

// TestAPostgresStoresRunsShareTheCacheInItsDatabase: a run with --store
// postgres://… keeps its answers in the database, not in the home: a run
// under another home (another machine) is served them all, and cache
// stats, prune and clear with --store act on that cache.
func TestAPostgresStoresRunsShareTheCacheInItsDatabase(t *testing.T) {
	pg := postgresStore(t)
	const n = 20
	first, second := newWorkdir(t), newWorkdir(t)
	for _, w := range []*workdir{first, second} {
		var items strings.Builder
		for i := range n {
			fmt.Fprintf(&items, `{"word":"w%d"}`+"\n", i)
		}
		w.write("items.jsonl", items.String(), 0o644)
		w.write("job.yaml", "name: shared\ninput: items.jsonl\ntask:\n  type: llm\n  provider: mock\n  model: mock-json\n  output: json\n  prompt: \"Describe {{.word}}\"\n", 0o644)
	}
	if r := first.tenax("run", "-q", "job.yaml", "--store", pg); r.code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(first.home, "cache", cache.LogName)); err == nil {
		t.Error("a run on a PostgreSQL store wrote its answers to the home's cache")
	}
	if r := second.tenax("run", "-q", "job.yaml", "--store", pg); r.code != 0 {
		t.Fatalf("second run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if st := second.tenax("status", "latest", "--store", pg); !strings.Contains(st.stdout, fmt.Sprintf("%d served from cache", n)) {
		t.Errorf("the run under another home was not served the first one's answers:\n%s", st.stdout)
	}
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"cache", "stats", "--store", pg}, fmt.Sprintf("entries:  %d", n)},
		{[]string{"cache", "stats"}, "entries:  0"}, // the home's file cache
		{[]string{"cache", "prune", "--max-bytes", "0", "--store", pg}, fmt.Sprintf("%d entries", n)},
		{[]string{"cache", "stats", "--store", pg}, "entries:  0"},
		{[]string{"cache", "clear", "--yes", "--store", pg}, "0 entries, 0 bytes after"},
	}
	for _, s := range steps {
		r := second.tenax(s.args...)
		if r.code != 0 || !strings.Contains(r.stdout, s.want) {
			t.Fatalf("tenax %s: exit %d, want 0 with %q\n%s%s", strings.Join(s.args, " "), r.code, s.want, r.stdout, r.stderr)
		}
	}
	secret := strings.Replace(pg, "postgres://postgres@", "postgres://postgres:s3cret@", 1)
	if r := second.tenax("cache", "stats", "--store", secret); strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("cache stats shows the store's password:\n%s%s", r.stdout, r.stderr)
	}
}

// TestCacheCopyServesALocalCachesAnswersToAPostgresStoresRuns: the answers
// a run paid for under a home, copied with tenax cache copy into a
// PostgreSQL store, serve a run on that store (another machine) without
// one call to the provider; a second copy copies nothing, and a --from
// that holds no cache, or a --store that is no database, is refused.
func TestCacheCopyServesALocalCachesAnswersToAPostgresStoresRuns(t *testing.T) {
	pg := postgresStore(t)
	const n = 20
	var calls atomic.Int64
	srv := mock.New(mock.Config{Seed: 1})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			calls.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	local, remote := newWorkdir(t), newWorkdir(t)
	for _, w := range []*workdir{local, remote} {
		w.words(n)
		w.write("job.yaml", fmt.Sprintf("input: words.jsonl\ntask:\n  type: llm\n  provider: openai\n  base_url: %s/v1\n  api_key: sk-test\n  model: mock-json\n  output: json\n  prompt: \"Describe {{.word}}\"\n", hs.URL), 0o644)
	}
	if r := local.tenax("run", "-q", "job.yaml"); r.code != 0 {
		t.Fatalf("the local run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	paid := calls.Load()
	if paid < n {
		t.Fatalf("the local run made %d calls for %d items", paid, n)
	}
	steps := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"cache", "copy", "--from", local.home, "--store", pg}, 0, fmt.Sprintf("copied %d, skipped 0", n)},
		{[]string{"cache", "copy", "--from", filepath.Join(local.home, "cache"), "--store", pg}, 0, fmt.Sprintf("copied 0, skipped %d", n)},
		{[]string{"cache", "copy", "--from", remote.dir, "--store", pg}, 2, "holds no cache"},
		{[]string{"cache", "copy", "--from", local.home}, 2, "--store postgres://"},
	}
	for _, s := range steps {
		r := remote.tenax(s.args...)
		if r.code != s.code || !strings.Contains(r.stdout+r.stderr, s.want) {
			t.Fatalf("tenax %s: exit %d, want %d with %q\n%s%s", strings.Join(s.args, " "), r.code, s.code, s.want, r.stdout, r.stderr)
		}
	}
	if r := remote.tenax("run", "-q", "job.yaml", "--store", pg); r.code != 0 {
		t.Fatalf("the run on the PostgreSQL store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if more := calls.Load() - paid; more != 0 {
		t.Errorf("the run on the PostgreSQL store made %d calls to the provider, want 0: the copied answers were not served", more)
	}
	secret := strings.Replace(pg, "postgres://postgres@", "postgres://postgres:s3cret@", 1)
	if r := remote.tenax("cache", "copy", "--from", local.home, "--store", secret); strings.Contains(r.stdout+r.stderr, "s3cret") {
		t.Errorf("cache copy shows the store's password:\n%s%s", r.stdout, r.stderr)
	}
}
