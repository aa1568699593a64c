package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// terminal is tenax running on a pseudo-terminal, as an operator sees it.
type terminal struct {
	t   *testing.T
	cmd *exec.Cmd
	mu  sync.Mutex
	out bytes.Buffer
	pos int      // how far expect has read
	tty *os.File // the pseudo-terminal's controlling side
}

// hangup closes the terminal, as closing a terminal window or losing an
// SSH session does: the kernel sends tenax SIGHUP.
func (tm *terminal) hangup() {
	tm.t.Helper()
	if err := tm.tty.Close(); err != nil {
		tm.t.Fatal(err)
	}
}

func startOnTerminal(t *testing.T, w *workdir, args ...string) *terminal {
	t.Helper()
	return startOnTerminalWidth(t, w, 160, args...)
}

// startOnTerminalWidth starts tenax on a pseudo-terminal cols columns wide.
func startOnTerminalWidth(t *testing.T, w *workdir, cols uint16, args ...string) *terminal {
	t.Helper()
	cmd := exec.Command(tenaxBin, append([]string{"--home", w.home}, args...)...)
	cmd.Dir = w.dir
	var env []string
	for _, kv := range childEnv() {
		if !strings.HasPrefix(kv, "CI=") {
			env = append(env, kv)
		}
	}
	cmd.Env = env
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: cols})
	if err != nil {
		t.Fatal(err)
	}
	term := &terminal{t: t, cmd: cmd, tty: f}
	go func() {
		buf := make([]byte, 4096)
		for {
			n, err := f.Read(buf)
			term.mu.Lock()
			term.out.Write(buf[:n])
			term.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		f.Close()
	})
	return term
}

// expect waits for s to appear after what earlier expects consumed.
func (tm *terminal) expect(s string) {
	tm.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		all := tm.out.String()
		tm.mu.Unlock()
		if i := strings.Index(all[tm.pos:], s); i >= 0 {
			tm.pos += i + len(s)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("terminal never showed %q; it shows:\n%s", s, tm.out.String()[tm.pos:])
}

func (tm *terminal) send(s string) {
	tm.t.Helper()
	if _, err := tm.tty.Write([]byte(s)); err != nil {
		tm.t.Fatal(err)
	}
}

func (tm *terminal) exitCode() int {
	tm.t.Helper()
	done := make(chan error, 1)
	go func() { done <- tm.cmd.Wait() }()
	select {
	case err := <-done:
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode()
		}
		if err != nil {
			tm.t.Fatal(err)
		}
		return 0
	case <-time.After(15 * time.Second):
		tm.t.Fatal("tenax did not exit")
		return -1
	}
}

// TestPromptInspectContinueAbort drives the breaker prompt of docs/classes.md on a
// terminal: Inspect shows the last error in full, Continue resets the
// breaker and resumes, Abort at the next trip exits 3.
func TestPromptInspectContinueAbort(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 50)
	w.write("tool.sh", "#!/bin/sh\necho \"cannot reach the license server for item $1\" >&2\nexit 127\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 3}
concurrency: {max: 1}
`, 0o644)
	term := startOnTerminal(t, w, "run", "job.yaml")
	term.expect("Circuit breaker open: 3 consecutive failures")
	term.expect("Last error: fatal (exit 127)")
	term.expect("Failed item: #2")
	term.expect("Processed: 3/50 | Failed: 3 | Success rate: 0.0%")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	term.send("i\n")
	term.expect("Exit code:  127")
	term.expect("cannot reach the license server for item 2")
	term.expect("Failure 1 of 3, newest first")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	// Inspect again pages back through the failures the breaker drained.
	term.send("i\n")
	term.expect("cannot reach the license server for item 1")
	term.expect("Failure 2 of 3")
	term.send("c\n")
	term.expect("Circuit breaker open: 3 consecutive failures")
	term.expect("Processed: 6/50 | Failed: 6")
	term.send("a\n")
	if code := term.exitCode(); code != 3 {
		t.Fatalf("exit %d after Abort, want 3", code)
	}
	term.expect("44 pending")
}
