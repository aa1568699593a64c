//go:build unix

package lockfile

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Holder is the process a lock file names: the one that holds the lock,
// or last held it.
type Holder struct {
	// PID is the holder's process id, 0 when the file does not say.
	PID int
	// Host is the holder's host name, "" when the file does not say (a
	// file written before hosts were recorded).
	Host string
}

// OnThisHost reports whether the holder is a process of this host, so
// that its pid can be asked about.
func (h Holder) OnThisHost() bool { return h.PID > 0 && h.Host != "" && h.Host == Hostname() }

// BusyError is Take's error when another process holds the lock.
type BusyError struct {
	// Holder is the process the lock file names (zero when unreadable).
	Holder Holder
}

func (e *BusyError) Error() string {
	if e.Holder.PID == 0 {
		return "locked by another process"
	}
	return fmt.Sprintf("locked by another process (pid %d)", e.Holder.PID)
}

// OrphanGrace is how long Take waits for a lock whose holder is dead, or
// is this process: the time a forked child may hold it before its exec.
const OrphanGrace = 2 * time.Second

// Take takes the exclusive lock on the file at path, creating it, and
// writes this process's id and host name into it. The lock lasts until
// the returned file is closed or the process dies. A lock held by a live
// process is a *BusyError at once; one left to a forked child of a dead
// holder or of this process is waited for, up to OrphanGrace.
func Take(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := flockOrOrphan(f, path); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			h, _ := Read(path)
			return nil, &BusyError{Holder: h}
		}
		return nil, err
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+" "+Hostname()+"\n"), 0)
	}
	return f, nil
}

// flockOrOrphan takes f's exclusive lock. While another process holds it
// and the holder the file names is a process of this host that no longer
// exists, or this process (which closed the lock while another goroutine
// forked), it tries again for up to OrphanGrace.
func flockOrOrphan(f *os.File, path string) error {
	deadline := time.Now().Add(OrphanGrace)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			return err
		}
		h, rerr := Read(path)
		if rerr != nil {
			return err
		}
		if !h.OnThisHost() || (Alive(h.PID) && h.PID != os.Getpid()) {
			return err
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Read reads the holder a lock file names.
func Read(path string) (Holder, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Holder{}, err
	}
	return Parse(b), nil
}

// Parse reads a lock file's content: "pid host", or "pid" alone as
// written before hosts were recorded.
func Parse(b []byte) Holder {
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

// Probe reports whether some process holds the lock on the file at path,
// by taking a shared, non-blocking lock and releasing it at once. A file
// that does not exist is an error matching fs.ErrNotExist.
func Probe(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB)
	switch {
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case err != nil:
		return false, err
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false, nil
}

// Alive reports whether a process with this id exists on this host.
func Alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// Hostname is this host's name with spaces removed (the lock file is
// space-separated); "unknown" when it cannot be read.
func Hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return strings.Join(strings.Fields(h), "_")
}
