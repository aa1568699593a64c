package exec

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

// ExitError reports a command that did not end well: it exited non-zero,
// was killed by a signal, timed out, was canceled, or could not be started
// at all. It carries what the classifier reads: the exit code and signal
// (classify.ExitCoder) and the tail of stderr (classify.StderrCarrier).
//
// Codes follow the shell's conventions where the process never got to
// choose one: 127 for a command that was not found, 126 for one that is
// not executable, 124 for a timeout (as timeout(1) does).
type ExitError struct {
	// Argv0 is the command as rendered, for messages.
	Argv0 string
	// Code is the exit status, or -1 when a signal killed the process.
	Code int
	// Sig names the signal that killed the process ("killed",
	// "terminated"), "" when it exited by itself or timed out.
	Sig string
	// StderrText is what the command wrote to stderr, its middle elided
	// beyond Config.MaxStderr. (A field named Stderr would clash with the
	// Stderr method that classify.StderrCarrier requires.)
	StderrText string
	// TimedOut reports that Config.Timeout expired and the process group
	// was killed; Code is then 124 and Err is context.DeadlineExceeded.
	TimedOut bool
	// Timeout is the limit that expired when TimedOut.
	Timeout time.Duration
	// Err is the underlying cause: an *os/exec.ExitError, an
	// *os/exec.Error for a command that cannot be run (errors.Is
	// os/exec.ErrNotFound), context.DeadlineExceeded, or context.Canceled.
	Err error
}

// Error reads like "./review.sh: exit 2: what went wrong", where what went
// wrong is stderr's headline (classify.Headline): a Python traceback's
// exception line, a Go panic, or the last line the command wrote.
func (e *ExitError) Error() string {
	var b strings.Builder
	b.WriteString(e.Argv0)
	b.WriteString(": ")
	switch {
	case e.TimedOut:
		b.WriteString("timed out after ")
		b.WriteString(e.Timeout.String())
	case errors.Is(e.Err, context.Canceled):
		b.WriteString("canceled")
	case e.Sig != "":
		b.WriteString("signal ")
		b.WriteString(e.Sig)
	default:
		b.WriteString("exit ")
		b.WriteString(strconv.Itoa(e.Code))
	}
	if line := classify.Headline(e.StderrText); line != "" {
		b.WriteString(": ")
		b.WriteString(line)
	} else if e.Code == 126 || e.Code == 127 {
		// The process never ran; say why it could not.
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the underlying cause.
func (e *ExitError) Unwrap() error { return e.Err }

// ExitCode returns the exit status, -1 when the process was killed by a
// signal. It implements classify.ExitCoder.
func (e *ExitError) ExitCode() int { return e.Code }

// Signal returns the name of the signal that killed the process, "" if
// none did. It implements classify.ExitCoder.
func (e *ExitError) Signal() string { return e.Sig }

// Stderr returns the captured stderr. It implements classify.StderrCarrier,
// so that rules can match it.
func (e *ExitError) Stderr() string { return e.StderrText }
