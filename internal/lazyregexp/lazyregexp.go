package lazyregexp

import (
	"errors"
	"fmt"
	"regexp"
	"sync"
)

var (
	mu sync.Mutex
	// exprs are the patterns New was given, for CheckAll.
	exprs []string
)

// New returns a function that compiles expr on its first call, with
// regexp.MustCompile, and returns that same *regexp.Regexp on every call,
// from any goroutine.
func New(expr string) func() *regexp.Regexp {
	mu.Lock()
	exprs = append(exprs, expr)
	mu.Unlock()
	return sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(expr) })
}

// CheckAll compiles every pattern given to New so far, in this process,
// and returns the errors of those that do not compile. It compiles them
// apart from the values New returned, which stay uncompiled.
func CheckAll() error {
	mu.Lock()
	all := append([]string(nil), exprs...)
	mu.Unlock()
	var errs []error
	for _, expr := range all {
		if _, err := regexp.Compile(expr); err != nil {
			errs = append(errs, fmt.Errorf("lazyregexp: %w", err))
		}
	}
	return errors.Join(errs...)
}
