package lockfile

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestALockLeftToAForkedChildIsWaitedFor: a run killed with -9 while
// it was starting a command leaves its lock to the forked child until that
// child execs; a resume started at once was told the job was in use by the
// process that had just died (TestCrashSafety failed 4 times in 40 on a
// loaded machine, exit 1 before its job line).
func TestALockLeftToAForkedChildIsWaitedFor(t *testing.T) {
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead := done.ProcessState.Pid()
	for _, tc := range []struct {
		name      string
		holderPID int
		releaseIn time.Duration // 0: never
		wantLock  bool
		wantWait  time.Duration
	}{
		{name: "dead holder, lock released by its child", holderPID: dead, releaseIn: 100 * time.Millisecond, wantLock: true, wantWait: 100 * time.Millisecond},
		{name: "dead holder, lock never released", holderPID: dead, wantWait: OrphanGrace},
		{name: "live holder", holderPID: os.Getppid()},
		// A job this process closed while another goroutine was forking a
		// command: the child holds the lock until it execs. Reopened at
		// once, the job was "in use by another tenax process" whose pid
		// was this one's (TestPrioritizeFlagGoesFirstAndSurvivesResume
		// failed under -race with fix's parallel tests forking git).
		{name: "this process, lock released by a forked child", holderPID: os.Getpid(), releaseIn: 100 * time.Millisecond, wantLock: true, wantWait: 100 * time.Millisecond},
		{name: "this process, lock never released", holderPID: os.Getpid(), wantWait: OrphanGrace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "lock")
				if err := os.WriteFile(path, fmt.Appendf(nil, "%d %s\n", tc.holderPID, Hostname()), 0o644); err != nil {
					t.Fatal(err)
				}
				child, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				defer child.Close()
				fd := int(child.Fd())
				if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
					t.Fatal(err)
				}
				if tc.releaseIn > 0 {
					released := make(chan struct{})
					defer func() { <-released }() // before child.Close
					go func() {
						defer close(released)
						time.Sleep(tc.releaseIn)
						_ = syscall.Flock(fd, syscall.LOCK_UN)
					}()
				}
				start := time.Now()
				f, err := Take(path)
				waited := time.Since(start)
				if f != nil {
					f.Close()
				}
				var busy *BusyError
				switch {
				case tc.wantLock && err != nil:
					t.Fatalf("Take: %v, want the lock once the dead run's child let it go", err)
				case !tc.wantLock && !errors.As(err, &busy):
					t.Fatalf("Take: %v, want a *BusyError", err)
				}
				if waited < tc.wantWait || waited > tc.wantWait+20*time.Millisecond {
					t.Errorf("waited %v for the lock, want %v", waited, tc.wantWait)
				}
			})
		})
	}
}
