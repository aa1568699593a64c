package jsonl

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// A job open for writing holds reserveBytes of its filesystem in
// reserveFile. When the disk fills, the log's appends fail first; the
// manifest must still be saved after them, to say storage_failed rather
// than a stale "running". A new manifest goes to a temporary file, which
// needs free blocks: on a disk filled to the last one it could not be
// created, and the job's state was lost with the space. The reserve is
// given up to make that last write, and removed when the job closes.
const (
	reserveFile  = ".reserve"
	reserveBytes = 64 << 10
)

// holdReserve allocates the reserve. It is best effort: a disk too full
// to hold it will fail the log's next write anyway, and a reserve that is
// missing costs only the fallback it would have paid for.
func (j *Job) holdReserve() {
	f, err := os.OpenFile(filepath.Join(j.dir, reserveFile), os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() >= reserveBytes {
		return
	}
	if allocate(f, reserveBytes) != nil {
		// Zeros, where the filesystem cannot allocate without writing.
		_, _ = f.WriteAt(make([]byte, reserveBytes), 0)
	}
}

// freeReserve removes the reserve, reporting whether there was one to
// give up.
func (j *Job) freeReserve() bool {
	return os.Remove(filepath.Join(j.dir, reserveFile)) == nil
}

// noSpace reports whether err is a full filesystem's.
func noSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC)
}
