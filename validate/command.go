package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/classify"
)

// Caps on what a command validator keeps of its output. The heal feedback
// shows the first lines; a runaway script must not fill memory.
const (
	maxCapture     = 64 << 10 // bytes read from each stream
	maxStderrLines = 50       // lines kept in Error.StderrText
	maxStderrBytes = 8 << 10  // bytes kept in Error.StderrText
)

// MaxStdoutBytes bounds what a command validator may write to stdout, as
// an exec task's stdout is bounded (task.DefaultMaxAnswerBytes): past it
// the command is stopped, as on its timeout, and the output fails the
// check ("command … wrote more than 16 MiB to stdout"). Of what it wrote,
// maxCapture bytes are kept for the feedback.
const MaxStdoutBytes = 16 << 20

// waitDelay bounds how long Validate waits for the output pipes after the
// command exits or is killed, should a background grandchild keep them open.
const waitDelay = 2 * time.Second

// CommandValidator runs a command with the output on its stdin; a non-zero
// exit means invalid, and what the command wrote to stderr is the error.
// It is immutable and safe for concurrent use: each Validate starts its
// own process.
type CommandValidator struct {
	argv    []string
	name    string // argv[0] as messages name it
	timeout time.Duration
	dir     string
}

// Command returns a validator that runs argv directly, never through a
// shell, in dir ("" for the current directory), and kills it, with every
// process it started, after timeout (0 for none).
//
// argv[0] is not looked up here: a command that cannot start fails each
// Validate with an error marked classify.Fatal, since no output can fix it.
// Check it earlier with exec.LookPath to refuse a run before any call.
func Command(argv []string, timeout time.Duration, dir string) (*CommandValidator, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("validate: command: empty argv")
	}
	if timeout < 0 {
		return nil, fmt.Errorf("validate: command %s: negative timeout %v", argv[0], timeout)
	}
	return &CommandValidator{argv: slices.Clone(argv), name: argv[0], timeout: timeout, dir: dir}, nil
}

// Named returns a copy of c whose messages call the program name rather
// than argv[0]: a path relative to the spec instead of the absolute one
// the spec resolved, so the heal feedback a provider reads shows no local
// directory.
func (c *CommandValidator) Named(name string) *CommandValidator {
	n := *c
	n.name = name
	return &n
}

// Validate runs the command with the output's text on its stdin (the
// decoded string of a JSON string output, so ["python3", "-"] runs a
// generated script; the JSON text as it is otherwise). A non-zero exit, a killing
// signal or the timeout yield an *Error. A command that cannot start
// yields an error marked classify.Fatal, and a canceled ctx its error.
func (c *CommandValidator) Validate(ctx context.Context, output json.RawMessage) error {
	runCtx := ctx
	if c.timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	stdin, _, _ := decodeString(output)
	// Stdout past MaxStdoutBytes stops the command, on a context of its
	// own so that the timeout still says what it says.
	cmdCtx, stopCmd := context.WithCancel(runCtx)
	defer stopCmd()
	stdout := capped{max: MaxStdoutBytes, over: stopCmd}
	var stderr capped
	cmd := exec.CommandContext(cmdCtx, c.argv[0], c.argv[1:]...)
	cmd.Dir = c.dir
	cmd.Stdin = bytes.NewReader(stdin)
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	// Its own process group, so a timeout kills what it started too (the
	// interpreter a shell script runs, a test runner's workers).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = waitDelay

	if err := cmd.Start(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("validate: command %s: %w", c.argv[0], ctx.Err())
		}
		return classify.WithClass(
			fmt.Errorf("validate: validator command %s cannot start: %w", c.argv[0], err),
			classify.Fatal, "validator command")
	}
	err := cmd.Wait()
	if errors.Is(err, exec.ErrWaitDelay) {
		// It exited 0 and a background child kept the output pipes
		// open: the check itself passed.
		err = nil
	}
	if stdout.tooLarge && err == nil {
		err = errStdoutTooLarge
	}
	// Background processes left in the group must not outlive the check.
	// The group outlives its leader only while a member lives, and a
	// reaped pid is not handed out again until the pid space wraps.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("validate: command %s: %w", c.argv[0], ctx.Err())
	}
	text := stderr.buf.String()
	if strings.TrimSpace(text) == "" {
		text = stdout.buf.String()
	}
	msg := c.why(runCtx, err, stdout.tooLarge)
	// The headline (a Python traceback's exception, a panic, else the last
	// line, where most tools print their conclusion) makes the message,
	// and so the error's fingerprint, tell one failure from another; an
	// exec task names its failures by the same rule.
	if last := classify.Headline(text); last != "" {
		msg += ": " + last
	}
	return &Error{Validator: KindCommand, Message: msg, StderrText: firstLines(text)}
}

// why says in one line how a command that failed the check ended: its
// stdout over the bound, its timeout, its exit status or signal, or its
// output's copying.
func (c *CommandValidator) why(runCtx context.Context, err error, tooLarge bool) string {
	var exitErr *exec.ExitError
	switch {
	case tooLarge && runCtx.Err() == nil:
		return fmt.Sprintf("command %s wrote more than %d MiB to stdout and was stopped", c.name, MaxStdoutBytes>>20)
	case runCtx.Err() != nil:
		return fmt.Sprintf("command %s timed out after %v", c.name, c.timeout)
	case errors.As(err, &exitErr):
		ws, _ := exitErr.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return fmt.Sprintf("command %s was killed by signal %v", c.name, ws.Signal())
		}
		return fmt.Sprintf("command %s exited with status %d", c.name, exitErr.ExitCode())
	default:
		// Copying its output failed: the check did not complete.
		return fmt.Sprintf("command %s did not complete: %v", c.name, err)
	}
}

// capped is a writer that keeps the first maxCapture bytes and discards
// the rest, so that a chatty command never blocks or fills memory.
type capped struct {
	buf bytes.Buffer
	// max, when set, bounds the bytes the stream may carry: a write past
	// it fails (closing the pipe) and calls over.
	max      int64
	over     func()
	written  int64
	tooLarge bool
}

func (w *capped) Write(p []byte) (int, error) {
	if w.max > 0 && w.written+int64(len(p)) > w.max {
		w.tooLarge = true
		w.over()
		return 0, errStdoutTooLarge
	}
	w.written += int64(len(p))
	if room := maxCapture - w.buf.Len(); room > 0 {
		w.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// errStdoutTooLarge ends the copying of a validator's stdout past
// MaxStdoutBytes; Validate reports the bound instead.
var errStdoutTooLarge = errors.New("validator stdout over the bound")

// firstLines returns the first maxStderrLines lines of s, at most
// maxStderrBytes, without trailing blank space.
func firstLines(s string) string {
	s = strings.TrimRight(s, " \t\r\n")
	cut := false
	if len(s) > maxStderrBytes {
		n := maxStderrBytes
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s, cut = s[:n], true
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			n++
			if n == maxStderrLines {
				s, cut = s[:i], true
				break
			}
		}
	}
	if cut {
		s += "\n…"
	}
	return s
}
