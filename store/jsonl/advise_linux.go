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

func adviseDontNeed(f *os.File, off, n int64) {
	_ = unix.Fadvise(int(f.Fd()), off, n, unix.FADV_DONTNEED)
}

// cachedWhole reports whether every page of f's bytes [off, off+n) is in
// the page cache, by cachestat(2) (Linux 6.5); false when it cannot tell.
func cachedWhole(f *os.File, off, n int64) bool {
	if n <= 0 {
		return false
	}
	// The pages the stretch touches, its partial first and last included.
	page := uint64(os.Getpagesize())
	first := uint64(off) &^ (page - 1)
	r := unix.CachestatRange{Off: first, Len: uint64(off+n) - first}
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &r, &st, 0); err != nil {
		return false
	}
	return st.Cache >= (r.Len+page-1)/page
}
