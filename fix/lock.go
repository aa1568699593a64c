package fix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tenaxhq/tenax/internal/lockfile"
)

// OutcomeStale is what status shows for a run whose state says running
// but that no process holds any more: it was killed (kill -9, a crash, a
// power cut). `tenax fix --resume ID` continues it.
const OutcomeStale = "stale"

// lockName is the run directory's lock file.
const lockName = "lock"

// lock holds the run for this process: an exclusive flock on the run
// directory's lock file, with the process id written in it (package
// lockfile, which waits out a lock left to a child forked by another
// goroutine of this process). The kernel drops it when the process dies,
// however it dies, which is how status tells a run at work from a dead
// one. A run held by another process is refused (*SetupError): two loops
// on one tree would take each other's edits for their own.
func (s *Store) lock() (*os.File, error) {
	f, err := lockfile.Take(filepath.Join(s.Dir, lockName))
	var busy *lockfile.BusyError
	switch {
	case errors.As(err, &busy):
		who := "another tenax process"
		if busy.Holder.PID > 0 {
			who = fmt.Sprintf("another tenax process (pid %d)", busy.Holder.PID)
		}
		return nil, &SetupError{Err: fmt.Errorf("fix: the run %s is in use by %s; wait for it to end, or stop it", filepath.Base(s.Dir), who)}
	case err != nil:
		return nil, &StorageError{Err: err}
	}
	return f, nil
}

// held reports whether a process holds the run (see lock). A run whose
// lock cannot be probed is taken as held: status must not call a live
// run dead.
func (s *Store) held() bool {
	held, err := lockfile.Probe(filepath.Join(s.Dir, lockName))
	if errors.Is(err, os.ErrNotExist) {
		return false // a run that never held it: an older tenax's, or dead
	}
	return held || err != nil
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
