package fix_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
)

// A check or fixer is rarely the process that hangs or edits: go test
// runs a test binary, a fixer script runs an agent. Killing only the
// command left those running: a hung test binary for go test's own 10
// minutes after every timed-out check, and a fixer's child editing the
// tree after its attempt was recorded (or after tenax had exited).
func TestNothingACheckOrFixerStartedOutlivesIt(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to see whether a process runs")
	}
	// child.pid gets the pid of a process the command leaves behind.
	const spawn = `sleep 300 >/dev/null 2>&1 & echo $! > child.pid; `
	cases := []struct {
		name string
		run  func(ctx context.Context, dir string, timeout time.Duration) error
	}{
		{"a check that timed out", func(ctx context.Context, dir string, timeout time.Duration) error {
			c := fix.Check{Argv: []string{"sh", "-c", spawn + "sleep 300"}, Dir: dir, Timeout: timeout}
			res, err := c.Run(ctx)
			if err == nil && !res.TimedOut {
				t.Errorf("the check did not time out: %+v", res)
			}
			return err
		}},
		{"a check that exited", func(ctx context.Context, dir string, _ time.Duration) error {
			c := fix.Check{Argv: []string{"sh", "-c", spawn + "exit 1"}, Dir: dir}
			_, err := c.Run(ctx)
			return err
		}},
		{"a fixer that timed out", func(ctx context.Context, dir string, timeout time.Duration) error {
			x := fix.ExecFixer{Argv: []string{"sh", "-c", spawn + "sleep 300"}, Timeout: timeout}
			if _, err := x.Fix(ctx, fix.Request{Workdir: dir}); err == nil || !strings.Contains(err.Error(), "timed out") {
				t.Errorf("the fixer's error is %v; want a timeout", err)
			}
			return nil
		}},
		{"a fixer that exited", func(ctx context.Context, dir string, _ time.Duration) error {
			x := fix.ExecFixer{Argv: []string{"sh", "-c", spawn + "exit 0"}}
			_, err := x.Fix(ctx, fix.Request{Workdir: dir})
			return err
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// On a loaded machine a timeout may end the shell before it
			// started its child: then there is nothing to outlive it, and
			// the case runs again with a longer timeout.
			var b []byte
			for timeout := 100 * time.Millisecond; ; timeout *= 4 {
				dir := t.TempDir()
				if err := tc.run(context.Background(), dir, timeout); err != nil {
					t.Fatal(err)
				}
				var err error
				b, err = os.ReadFile(filepath.Join(dir, "child.pid"))
				if err == nil && len(strings.TrimSpace(string(b))) > 0 {
					break
				}
				if timeout > time.Minute {
					t.Fatalf("the command never wrote child.pid: %v", err)
				}
			}
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(30 * time.Second); alive(pid); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					_ = killProcess(pid)
					t.Fatalf("%s: the process it started (pid %d) still runs", tc.name, pid)
				}
			}
		})
	}
}

// alive reports whether pid runs: it exists and is no zombie (a killed
// orphan stays a zombie until init reaps it, which a container's init may
// never do).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// pid (comm) state ...: the state follows the last ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

func killProcess(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// A check that exits leaving a process that holds its output open (a
// server started in the background) was a setup error, exit 2 ("WaitDelay
// expired"): its exit status must decide, as for any check.
func TestACheckWhoseChildHoldsItsOutputIsDecidedByItsExitStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		script string
		passed bool
	}{
		{"sleep 300 & echo started; exit 0", true},
		{"sleep 300 & echo 'x.go:1:2: broken'; exit 1", false},
	} {
		c := fix.Check{Argv: []string{"sh", "-c", tc.script}, Dir: t.TempDir(), Parser: fix.ParserGeneric}
		res, err := c.Run(context.Background())
		if err != nil {
			t.Fatalf("%s: %v; want the check's result", tc.script, err)
		}
		if res.Passed() != tc.passed || (!tc.passed && len(res.Errors) != 1) {
			t.Errorf("%s: passed %v, errors %v; want passed %v", tc.script, res.Passed(), res.Errors, tc.passed)
		}
	}
}
