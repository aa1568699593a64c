//go:build !purego

package jsonl

// indexControl returns the index of the first byte below 0x20 in b, or
// len(b) when there is none: the check the one rule for a damaged line
// makes of every byte a resume reads, at the speed of the searches for a
// single byte (bytes.IndexByte), which SWAR Go code runs at a third of
// (docs/benchmarks.md, issue 38).
//
//go:noescape
func indexControl(b []byte) int

// firstControl returns the index of the first byte below 0x20 in b at or
// after i, or len(b) when there is none: a line's newline and, in the same
// pass, whether any other control byte comes before it, where a search for
// the newline and then hasControl over the line read each byte twice.
func firstControl(b []byte, i int) int { return i + indexControl(b[i:]) }

// hasControl reports whether b holds a byte below 0x20, which JSON allows
// nowhere in a compact line: a NUL from a damaged block, a tab or a
// carriage return.
func hasControl(b []byte) bool { return indexControl(b) < len(b) }
