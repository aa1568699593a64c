//go:build unix

package cache

import (
	"errors"
	"fmt"
	"syscall"
)

// lock takes the log's lock: exclusive to write, shared to read. A write
// is one write(2) under the exclusive lock, so a reader under the shared
// one never meets a record still being written: a part of a record it
// finds is torn for good, and skipped (see scan).
func (c *Cache) lock(exclusive bool) error {
	how := syscall.LOCK_SH
	if exclusive {
		how = syscall.LOCK_EX
	}
	for {
		err := syscall.Flock(c.fd, how)
		if !errors.Is(err, syscall.EINTR) {
			if err != nil {
				return fmt.Errorf("cache: locking the log: %w", err)
			}
			return nil
		}
	}
}

// unlock releases the lock lock took.
func (c *Cache) unlock() {
	_ = syscall.Flock(c.fd, syscall.LOCK_UN) // it is released with the file in any case
}
