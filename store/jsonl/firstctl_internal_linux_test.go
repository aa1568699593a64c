package jsonl

import (
	"syscall"
	"testing"
)

// TestFirstControlReadsNothingPastItsSlice: a slice (a buffer, a line) may
// end where readable memory ends, so the search must not read even one byte
// past its slice. Each slice here ends where an unreadable page starts: a
// read past it would crash the test.
func TestFirstControlReadsNothingPastItsSlice(t *testing.T) {
	page := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, 2*page, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	defer syscall.Munmap(mem)
	if err := syscall.Mprotect(mem[page:], syscall.PROT_NONE); err != nil {
		t.Skipf("mprotect: %v", err)
	}
	for i := range mem[:page] {
		mem[i] = 'a'
	}
	for n := range 200 {
		b := mem[page-n : page]
		if got := firstControl(b, 0); got != n {
			t.Fatalf("%d bytes without a control byte before an unreadable page: got %d, want %d", n, got, n)
		}
		if hasControl(b) {
			t.Fatalf("%d bytes without a control byte before an unreadable page: hasControl says there is one", n)
		}
	}
}
