// Package lazyregexp holds regular expressions that compile on first use
// instead of at package initialisation. A package-level
// regexp.MustCompile runs in every process that links its package, so
// `tenax --help` paid for the 60 patterns of heal and fix that only a fix
// loop or an error group reads (0.8 ms and 0.5 MB a start;
// docs/benchmarks.md, "Start-up").
//
//	var goFailLine = lazyregexp.New(`^(\s*)--- FAIL: (\S+)`)
//	…
//	m := goFailLine().FindStringSubmatch(line)
//
// A pattern that does not compile panics at its first use, as
// regexp.MustCompile would have at start; CheckAll lets a package's tests
// compile every pattern the binary holds, so a typo fails a test, not a
// rarely taken path.
package lazyregexp
