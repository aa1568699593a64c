//go:build !linux

package jsonl

import (
	"errors"
	"os"
)

// allocate cannot reserve blocks without fallocate(2); the caller writes
// zeros instead.
func allocate(*os.File, int64) error {
	return errors.ErrUnsupported
}
