package lazyregexp

import (
	"strings"
	"sync"
	"testing"
)

// TestNewCompilesOnceOnFirstUse: the value New returns is one compiled
// regexp however many goroutines ask for it at once.
func TestNewCompilesOnceOnFirstUse(t *testing.T) {
	re := New(`^a(b+)$`)
	got := make(chan any, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { got <- re() })
	}
	wg.Wait()
	close(got)
	first := re()
	for r := range got {
		if r != first {
			t.Fatalf("two calls returned different *regexp.Regexp values (%p and %p): the pattern compiled more than once", r, first)
		}
	}
	if m := first.FindStringSubmatch("abbb"); len(m) != 2 || m[1] != "bbb" {
		t.Errorf("FindStringSubmatch(%q) = %q, want [abbb bbb]", "abbb", m)
	}
}

// TestCheckAllNamesThePatternThatDoesNotCompile: a broken pattern is
// reported by CheckAll, before anything calls it, and calling it panics
// as regexp.MustCompile does.
func TestCheckAllNamesThePatternThatDoesNotCompile(t *testing.T) {
	if err := CheckAll(); err != nil {
		t.Fatalf("CheckAll before any broken pattern = %v, want nil", err)
	}
	broken := New(`a(b`)
	t.Cleanup(func() {
		mu.Lock()
		exprs = exprs[:len(exprs)-1]
		mu.Unlock()
	})
	err := CheckAll()
	if err == nil || !strings.Contains(err.Error(), "a(b") {
		t.Fatalf("CheckAll with `a(b` registered = %v, want an error naming the pattern", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("calling a pattern that does not compile returned, want a panic as from regexp.MustCompile")
		}
	}()
	broken()
}
