package main

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/cache"
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
