//go:build unix

package jsonl

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

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
// writes this process's id and host name into it ("1234 build-7\n"). The lock lasts until the returned file
// is closed, or the process dies: a crash never leaves a job locked.
func lockJob(dir, id string) (*os.File, error) {
	path := dir + string(os.PathSeparator) + lockFile
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("jsonl: locking job %s: %w", id, err)
	}
	if err := flockOrOrphan(f, path); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			var pid int
			if b, rerr := os.ReadFile(path); rerr == nil {
				pid = parseHolder(b).PID
			}
			return nil, &InUseError{ID: id, PID: pid}
		}
		return nil, fmt.Errorf("jsonl: locking job %s: %w", id, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+hostname()+"\n"), 0)
	}
	return f, nil
}

// orphanGrace is how long a lock whose holder has died may stay taken.
// The lock file is close-on-exec, but a child the holder forked holds it
// from fork until its exec: a run killed with -9 while it was starting a
// command (a long moment on a loaded machine) leaves the lock to that
// child for as long. A resume started at once met it, and was told the job
// was in use by the process that had just died.
const orphanGrace = 2 * time.Second

// flockOrOrphan takes f's exclusive lock. While another process holds it
// and the holder that the lock file names is a process on this host that
// no longer exists, or this process (which closed the job while another
// goroutine forked a command: the child holds the lock until it execs),
// it tries again for up to orphanGrace.
func flockOrOrphan(f *os.File, path string) error {
	deadline := time.Now().Add(orphanGrace)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return err
		}
		h := parseHolder(b)
		if h.PID <= 0 || h.Host != hostname() || (processAlive(h.PID) && h.PID != os.Getpid()) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
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
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Holder{}, nil
	}
	if err != nil {
		return Holder{}, fmt.Errorf("jsonl: %w", err)
	}
	h := parseHolder(b)
	if h.PID > 0 && h.Host != "" && h.Host == hostname() {
		h.Held = processAlive(h.PID)
		return h, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return Holder{}, fmt.Errorf("jsonl: %w", err)
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		h.Held = true
	case err != nil:
		return Holder{}, fmt.Errorf("jsonl: probing the lock of job %s: %w", id, err)
	default:
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	}
	return h, nil
}

// parseHolder reads a lock file: "pid host", or "pid" alone as written
// before hosts were recorded.
func parseHolder(b []byte) Holder {
	fields := strings.Fields(string(b))
	var h Holder
	if len(fields) > 0 {
		h.PID, _ = strconv.Atoi(fields[0])
	}
	if len(fields) > 1 {
		h.Host = fields[1]
	}
	return h
}

// processAlive reports whether a process with this id exists on this host.
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// hostname is this host's name with spaces removed (the lock file is
// space-separated); "unknown" when it cannot be read.
func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return strings.Join(strings.Fields(h), "_")
}
