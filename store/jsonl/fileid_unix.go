//go:build unix

package jsonl

import (
	"os"
	"syscall"
)

// fileID returns the device and inode of fi's file, zero when unknown.
func fileID(fi os.FileInfo) (dev, ino uint64) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, 0
	}
	return uint64(st.Dev), uint64(st.Ino)
}
