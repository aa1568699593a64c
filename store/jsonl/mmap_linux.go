package jsonl

import (
	"os"

	"golang.org/x/sys/unix"
)

// mapLog maps f's bytes [off, off+n) read-only, so that a chunk of the log
// is scanned where the page cache holds it instead of copied out of it
// first (a quarter of a warm scan's CPU went to the copy). ok is false
// when it cannot map them; the caller reads them instead. unmap must be
// called once the scan is done with data. A mapping of bytes the file no
// longer has faults (SIGBUS): a goroutine that reads one sets
// debug.SetPanicOnFault and recovers (recoverFault).
func mapLog(f *os.File, off, n int64) (data []byte, unmap func(), ok bool) {
	page := int64(os.Getpagesize())
	first := off &^ (page - 1)
	length := off + n - first
	if n <= 0 || length != int64(int(length)) {
		return nil, nil, false
	}
	m, err := unix.Mmap(int(f.Fd()), first, int(length), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return m[off-first:], func() { _ = unix.Munmap(m) }, true
}
