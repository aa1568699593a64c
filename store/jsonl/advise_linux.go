package jsonl

import (
	"os"

	"golang.org/x/sys/unix"
)

// The kernel's page-cache hints for a long sequential read (seqread.go).
// They are advice: an error changes nothing a reader relies on, so it is
// ignored.

func adviseSequential(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_SEQUENTIAL)
}

func adviseWillNeed(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_WILLNEED)
}

func adviseDontNeed(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}
