//go:build unix

package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tenaxhq/tenax/internal/lockfile"
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

// lockJob takes the exclusive lock on the job directory's lock file
// (package lockfile: "pid host" in it, a lock left to a forked child
// waited out). The lock lasts until the returned file is closed, or the
// process dies: a crash never leaves a job locked.
func lockJob(dir, id string) (*os.File, error) {
	f, err := lockfile.Take(dir + string(os.PathSeparator) + lockFile)
	var busy *lockfile.BusyError
	switch {
	case errors.As(err, &busy):
		return nil, &InUseError{ID: id, PID: busy.Holder.PID}
	case err != nil:
		return nil, fmt.Errorf("jsonl: locking job %s: %w", id, err)
	}
	return f, nil
}

// Holder is the process that holds, or last held, a job open for writing,
// as its lock file names it.
type Holder struct {
	// Held reports whether that process still holds the job: false for a
	// job whose run died without closing it (kill -9, a power cut, an
	// older tenax killed by SIGHUP), which status shows as stale.
	Held bool
	// PID and Host name the process; 0 and "" when the lock file does not
	// say (a job never opened for writing, or one locked by an older
	// tenax that wrote no host).
	PID  int
	Host string
}

// Holder tells whether a process holds job id open for writing. On this
// host, the pid written in the lock file answers: the process is alive or
// it is not (a pid reused since by an unrelated process reads as alive).
// For a holder on another host sharing the directory, or one that wrote no
// host, the flock itself is probed with a shared, non-blocking lock that
// is released at once.
func (s *Store) Holder(_ context.Context, id string) (Holder, error) {
	jobs, err := s.jobsDir()
	if err != nil {
		return Holder{}, err
	}
	if !validID(id) {
		return Holder{}, fmt.Errorf("jsonl: job %q: %w", id, store.ErrNotFound)
	}
	path := filepath.Join(jobs, id, lockFile)
	lh, err := lockfile.Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, fmt.Errorf("jsonl: %w", err)
	}
	h := Holder{PID: lh.PID, Host: lh.Host}
	if lh.OnThisHost() {
		h.Held = lockfile.Alive(h.PID)
		return h, nil
	}
	if h.Held, err = lockfile.Probe(path); err != nil {
		return Holder{}, fmt.Errorf("jsonl: probing the lock of job %s: %w", id, err)
	}
	return h, nil
}
