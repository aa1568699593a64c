//go:build unix

package jsonl

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/tenaxhq/tenax/store"
)

// InUseError is returned by Store.Open when another process holds the job
// open for writing. It matches store.ErrInUse with errors.Is.
type InUseError struct {
	ID  string
	PID int // the holder's process id, 0 when it could not be read
}

func (e *InUseError) Error() string {
	if e.PID == 0 {
		return fmt.Sprintf("job %s is in use by another tenax process", e.ID)
	}
	return fmt.Sprintf("job %s is in use by another tenax process (pid %d)", e.ID, e.PID)
}

// Is makes errors.Is(err, store.ErrInUse) true.
func (e *InUseError) Is(target error) bool { return target == store.ErrInUse }

// lockJob takes an exclusive flock on the job directory's lock file and
// writes this process's id into it. The lock lasts until the returned file
// is closed, or the process dies: a crash never leaves a job locked.
func lockJob(dir, id string) (*os.File, error) {
	path := dir + string(os.PathSeparator) + lockFile
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jsonl: locking job %s: %w", id, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var pid int
			if b, rerr := os.ReadFile(path); rerr == nil {
				pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			}
			return nil, &InUseError{ID: id, PID: pid}
		}
		return nil, fmt.Errorf("jsonl: locking job %s: %w", id, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
