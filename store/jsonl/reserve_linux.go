package jsonl

import (
	"os"

	"golang.org/x/sys/unix"
)

// allocate gives f n bytes of blocks without writing them, so that a
// compressing filesystem cannot store the reserve in nothing.
func allocate(f *os.File, n int64) error {
	return unix.Fallocate(int(f.Fd()), 0, 0, n)
}
