package fix

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/heal"
)

// The parsers a Check may name: which extractor reads its output.
const (
	ParserAuto    = "auto"
	ParserGoTest  = "gotest"
	ParserPytest  = "pytest"
	ParserJest    = "jest"
	ParserVitest  = "vitest"
	ParserTSC     = "tsc"
	ParserESLint  = "eslint"
	ParserGeneric = "generic"
)

// maxCheckOutput caps the output kept of one check run; the head and the
// tail are kept, since summaries come last.
const maxCheckOutput = 4 << 20

// Check is the command whose errors a fix run fixes.
type Check struct {
	// Argv is the command, run without a shell.
	Argv []string
	// Dir is where it runs.
	Dir string
	// Env adds variables to its environment.
	Env map[string]string
	// Timeout bounds one run; 0 is none.
	Timeout time.Duration
	// Parser is one of the Parser constants; "" is ParserAuto.
	Parser string
}

// CheckResult is one run of the check.
type CheckResult struct {
	// ExitCode is the command's exit status; -1 when it was killed.
	ExitCode int `json:"exit_code"`
	// Errors are the errors extracted from Output; none when the check
	// passed (exit status 0).
	Errors []heal.Observed `json:"errors"`
	// Output is the command's stdout and stderr, interleaved.
	Output string `json:"-"`
	// Duration is how long it ran.
	Duration time.Duration `json:"duration_ns"`
	// TimedOut reports that Timeout killed it.
	TimedOut bool `json:"timed_out,omitempty"`
}

// Passed reports whether the check passed: exit status 0.
func (r CheckResult) Passed() bool { return r.ExitCode == 0 && !r.TimedOut }

// Run runs the check once. The exit status decides: 0 is a pass, whatever
// the output says; otherwise the parser's errors, or, when it finds none,
// one error named "check" that quotes the output's last line, so a failed
// check never looks like a passing one. The error is non-nil only when the
// command could not be started, or ctx ended.
func (c Check) Run(ctx context.Context) (CheckResult, error) {
	if len(c.Argv) == 0 {
		return CheckResult{}, errors.New("fix: the check has no command")
	}
	runCtx := ctx
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, c.Argv[0], c.Argv[1:]...)
	cmd.Dir = c.Dir
	cmd.Env = os.Environ()
	for k, v := range c.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var out cappedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := runGroup(cmd)
	res := CheckResult{Output: out.String(), Duration: time.Since(start)}
	var exitErr *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return res, ctx.Err()
	case runCtx.Err() != nil:
		res.ExitCode, res.TimedOut = -1, true
		res.Errors = []heal.Observed{{Name: "check", Message: fmt.Sprintf("the check timed out after %s", c.Timeout)}}
		return res, nil
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	case err != nil:
		// The command cannot start: no run of it will go better.
		return res, &SetupError{Err: fmt.Errorf("fix: run the check %s: %w", strings.Join(c.Argv, " "), err)}
	}
	if res.ExitCode == 0 {
		return res, nil
	}
	res.Errors = Extract(c.Parser, res.Output)
	if len(res.Errors) == 0 {
		res.Errors = []heal.Observed{{Name: "check", Message: fmt.Sprintf("the check failed (exit status %d): %s", res.ExitCode, lastLine(res.Output))}}
	}
	return res, nil
}

// Extract reads a check's output with the named parser (see the Parser
// constants; "" and "auto" detect the tool).
func Extract(parser, output string) []heal.Observed {
	switch parser {
	case ParserGoTest:
		return heal.ExtractGoTest(output)
	case ParserPytest:
		return heal.ExtractPytest(output)
	case ParserJest, ParserVitest:
		return heal.ExtractJest(output)
	case ParserTSC:
		return heal.ExtractTSC(output)
	case ParserESLint:
		return heal.ExtractESLint(output)
	case ParserGeneric:
		return heal.ExtractGeneric(output)
	}
	return heal.Extract(output)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if l := strings.TrimSpace(lines[i]); l != "" {
			return l
		}
	}
	return "no output"
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// cappedBuffer keeps the first and last halves of maxCheckOutput bytes.
type cappedBuffer struct {
	head    bytes.Buffer
	tail    []byte
	dropped int
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	n := len(p)
	if room := maxCheckOutput/2 - b.head.Len(); room > 0 {
		k := min(room, len(p))
		b.head.Write(p[:k])
		p = p[k:]
	}
	if len(p) > 0 {
		b.tail = append(b.tail, p...)
		if over := len(b.tail) - maxCheckOutput/2; over > 0 {
			b.dropped += over
			b.tail = append(b.tail[:0], b.tail[over:]...)
		}
	}
	return n, nil
}

func (b *cappedBuffer) String() string {
	if b.dropped == 0 {
		return b.head.String() + string(b.tail)
	}
	return fmt.Sprintf("%s\n[… %d bytes left out …]\n%s", b.head.String(), b.dropped, b.tail)
}
