package fix

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/internal/lockfile"
)

// TestARunClosedWhileACommandForksCanBeResumed: a run this process closed
// while another goroutine was forking a command (git, a check) leaves its
// lock to the child until the child execs. Resumed at once, the run was
// "in use by another tenax process" whose pid was this one's
// (TestPrioritizeFlagGoesFirstAndSurvivesResume failed under load, with
// fix's parallel tests forking). The lock is waited for instead.
func TestARunClosedWhileACommandForksCanBeResumed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Store{Dir: t.TempDir()}
		path := filepath.Join(s.Dir, lockName)
		if err := os.WriteFile(path, fmt.Appendf(nil, "%d %s\n", os.Getpid(), lockfile.Hostname()), 0o644); err != nil {
			t.Fatal(err)
		}
		child, err := os.Open(path) // the forked child's copy, before its exec
		if err != nil {
			t.Fatal(err)
		}
		defer child.Close()
		if err := syscall.Flock(int(child.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		if !s.held() {
			t.Fatal("held() = false while the child holds the lock")
		}
		released := make(chan struct{})
		go func() {
			defer close(released)
			time.Sleep(100 * time.Millisecond) // the child execs
			_ = syscall.Flock(int(child.Fd()), syscall.LOCK_UN)
		}()
		f, err := s.lock()
		<-released
		if err != nil {
			var setup *SetupError
			t.Fatalf("lock: %v (a *SetupError: %t), want the lock once the child let it go", err, errors.As(err, &setup))
		}
		f.Close()
		if s.held() {
			t.Error("held() = true after the lock was closed")
		}
	})
}

// TestARunHeldByALiveProcessIsRefusedAtOnce: the wait is for orphans
// only; a run another live process holds is refused without waiting.
func TestARunHeldByALiveProcessIsRefusedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &Store{Dir: t.TempDir()}
		path := filepath.Join(s.Dir, lockName)
		if err := os.WriteFile(path, fmt.Appendf(nil, "%d %s\n", os.Getppid(), lockfile.Hostname()), 0o644); err != nil {
			t.Fatal(err)
		}
		other, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		_, err = s.lock()
		var setup *SetupError
		if !errors.As(err, &setup) {
			t.Fatalf("lock: %v, want a *SetupError", err)
		}
		if want := fmt.Sprintf("pid %d", os.Getppid()); !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name the holder (%s)", err, want)
		}
		if waited := time.Since(start); waited != 0 {
			t.Errorf("waited %v before refusing a live holder's run, want 0", waited)
		}
	})
}
