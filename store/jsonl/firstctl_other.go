//go:build !amd64 || purego

package jsonl

// firstControl returns the index of the first byte below 0x20 in b at or
// after i, or len(b) when there is none (firstControlSWAR; amd64 has a
// vector form).
func firstControl(b []byte, i int) int { return firstControlSWAR(b, i) }

// hasControl reports whether b holds a byte below 0x20, which JSON allows
// nowhere in a compact line: a NUL from a damaged block, a tab or a
// carriage return.
func hasControl(b []byte) bool { return firstControlSWAR(b, 0) < len(b) }
