package fix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// OutcomeStale is what status shows for a run whose state says running
// but that no process holds any more: it was killed (kill -9, a crash, a
// power cut). `tenax fix --resume ID` continues it.
const OutcomeStale = "stale"

// lockName is the run directory's lock file.
const lockName = "lock"

// lock holds the run for this process: an exclusive flock on the run
// directory's lock file, with the process id written in it. The kernel
// drops it when the process dies, however it dies, which is how status
// tells a run at work from a dead one. A run held by another process is
// refused (*SetupError): two loops on one tree would take each other's
// edits for their own.
func (s *Store) lock() (*os.File, error) {
	path := filepath.Join(s.Dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, &StorageError{Err: err}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			who := "another tenax process"
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					who = fmt.Sprintf("another tenax process (pid %d)", pid)
				}
			}
			return nil, &SetupError{Err: fmt.Errorf("fix: the run %s is in use by %s; wait for it to end, or stop it", filepath.Base(s.Dir), who)}
		}
		return nil, &StorageError{Err: err}
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

// held reports whether a process holds the run (see lock). A run whose
// lock cannot be probed is taken as held: status must not call a live
// run dead.
func (s *Store) held() bool {
	f, err := os.Open(filepath.Join(s.Dir, lockName))
	if errors.Is(err, os.ErrNotExist) {
		return false // a run that never held it: an older tenax's, or dead
	}
	if err != nil {
		return true
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// CurrentOutcome is the run's outcome as a user should read it: the
// state's, except that a run saved as running that no process holds is
// OutcomeStale.
func CurrentOutcome(dir string, st *State) string {
	if st.Outcome == OutcomeRunning && !(&Store{Dir: dir}).held() {
		return OutcomeStale
	}
	return st.Outcome
}
