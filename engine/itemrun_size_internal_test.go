package engine

import (
	"testing"
	"unsafe"
)

// TestAnItemRunFitsItsSizeClass keeps the one allocation every item makes
// (runItem's *itemRun) in the 704-byte size class of Go's allocator, which
// prefixes an object of over 512 bytes that holds pointers with an 8-byte
// header: State.FirstKey once took itemRun from 696 to 712 bytes, the
// 768-byte class, and BenchmarkRunNoop's items cost 59 B more each
// (docs/benchmarks.md).
func TestAnItemRunFitsItsSizeClass(t *testing.T) {
	const class, header = 704, 8
	if n := unsafe.Sizeof(itemRun{}); n+header > class {
		t.Errorf("itemRun is %d bytes, with its allocation header over the %d-byte size class: every item allocates the next class's bytes; shrink or reorder its fields", n, class)
	}
}
