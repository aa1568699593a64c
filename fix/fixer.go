package fix

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
	texec "github.com/tenaxhq/tenax/task/exec"
)

// Fixer fixes one error per call, by editing the files of the work
// directory (Request.Workdir). The loop records what changed, so a fixer
// needs to say nothing about its edit. An error is a failed attempt: it is
// recorded and counted, and the loop goes on; ctx's end stops the run.
type Fixer interface {
	Fix(ctx context.Context, r Request) (Answer, error)
}

// Request is what a fixer is told about the error to fix. An exec fixer
// gets it as JSON on stdin.
type Request struct {
	// Run is the fix run's id.
	Run string `json:"run"`
	// Attempt is this attempt's number in the run, from 1; ErrorAttempt
	// its number on this error.
	Attempt      int `json:"attempt"`
	MaxAttempts  int `json:"max_attempts"`
	ErrorAttempt int `json:"error_attempt"`
	// Error is the error to fix.
	Error Error `json:"error"`
	// Group names the other tests or files that fail with the same
	// normalized message in the same test file or at the same location
	// (Groups): fixing one often fixes all.
	Group []string `json:"group,omitempty"`
	// Source is the code around the error's location.
	Source *Source `json:"source,omitempty"`
	// Hints are the spec's hints whose pattern matches the error.
	Hints []string `json:"hints,omitempty"`
	// Context is the user's context (the spec's, and --context).
	Context string `json:"context,omitempty"`
	// Previous are the earlier attempts on this error.
	Previous []AttemptSummary `json:"previous,omitempty"`
	// Workdir is where the files are.
	Workdir string `json:"workdir"`
	// Protected are paths relative to Workdir that hold tenax's own state
	// (its home): the LLM fixer neither quotes nor edits them, nor any
	// file git ignores, and an exec fixer must leave them alone.
	Protected []string `json:"protected,omitempty"`
	// Check is the check's command, and OutputTail the last lines of its
	// latest output.
	Check      []string `json:"check"`
	OutputTail string   `json:"output_tail,omitempty"`
}

// Error is a tracked error with where it points.
type Error struct {
	heal.TrackedError
	// Location is the first file:line of the message (or of the check's
	// output) that names a file of the work directory.
	Location *Location `json:"location,omitempty"`
}

// Answer is what a fixer reports about its attempt.
type Answer struct {
	// Summary is what the fixer says it did (an exec fixer's stdout, cut).
	Summary string
	// PromptHash identifies what an LLM fixer was asked.
	PromptHash string
	// Usage and CostUSD are an LLM fixer's spending.
	Usage   task.Usage
	CostUSD float64
	// Reasks counts the answers re-asked because their edits did not
	// apply.
	Reasks int
}

// ExecFixer runs a command per attempt. The command gets the Request as
// JSON on stdin and its main fields in the environment:
// TENAX_ERROR_FINGERPRINT, TENAX_ERROR_NAME, TENAX_ERROR_MESSAGE,
// TENAX_ERROR_STATUS, TENAX_ERROR_ATTEMPT, TENAX_ERROR_FILE,
// TENAX_ERROR_LINE, TENAX_FIX_RUN, TENAX_FIX_ATTEMPT and TENAX_FIX_CONTEXT.
// It runs in the work directory and edits the files itself; a non-zero
// exit is a failed attempt.
type ExecFixer struct {
	Argv    []string
	Env     map[string]string
	Timeout time.Duration

	// groups records the fixer's process group for the run (runGroup).
	groups *texec.GroupFile
}

// maxSummary caps the fixer's words kept in the audit trail.
const maxSummary = 2000

// Fix runs the command once.
func (x ExecFixer) Fix(ctx context.Context, r Request) (Answer, error) {
	if len(x.Argv) == 0 {
		return Answer{}, errors.New("fix: the exec fixer has no command")
	}
	in, err := json.Marshal(r)
	if err != nil {
		return Answer{}, err
	}
	runCtx := ctx
	if x.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, x.Timeout)
		defer cancel()
	}
	cmd := exec.CommandContext(runCtx, x.Argv[0], x.Argv[1:]...)
	cmd.Dir = r.Workdir
	cmd.Stdin = bytes.NewReader(in)
	cmd.Env = append(os.Environ(), requestEnv(r)...)
	for k, v := range x.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = runGroup(cmd, x.groups)
	a := Answer{Summary: cut(strings.TrimSpace(stdout.String()), maxSummary)}
	switch {
	case ctx.Err() != nil:
		return a, ctx.Err()
	case runCtx.Err() != nil:
		return a, fmt.Errorf("fix: the fixer timed out after %s", x.Timeout)
	case err != nil:
		// As an exec task's error, so that classify reads the exit code
		// (127: not found, fatal) and rules can match stderr.
		xe := &texec.ExitError{Argv0: x.Argv[0], Code: -1, StderrText: cut(strings.TrimSpace(stderr.String()), 500), Err: err}
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			xe.Code = ee.ExitCode()
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				xe.Sig = ws.Signal().String()
			}
		case errors.Is(err, exec.ErrNotFound), errors.Is(err, fs.ErrNotExist):
			xe.Code = 127 // never started, as the shell says
		case errors.Is(err, fs.ErrPermission):
			xe.Code = 126
		}
		return a, fmt.Errorf("fix: the fixer %w", xe)
	}
	return a, nil
}

func requestEnv(r Request) []string {
	env := []string{
		"TENAX_ERROR_FINGERPRINT=" + r.Error.Fingerprint,
		"TENAX_ERROR_NAME=" + r.Error.Name,
		"TENAX_ERROR_MESSAGE=" + r.Error.Message,
		"TENAX_ERROR_STATUS=" + string(r.Error.Status),
		"TENAX_ERROR_ATTEMPT=" + strconv.Itoa(r.ErrorAttempt),
		"TENAX_FIX_RUN=" + r.Run,
		"TENAX_FIX_ATTEMPT=" + strconv.Itoa(r.Attempt),
		"TENAX_FIX_CONTEXT=" + r.Context,
	}
	if l := r.Error.Location; l != nil {
		env = append(env, "TENAX_ERROR_FILE="+l.File, "TENAX_ERROR_LINE="+strconv.Itoa(l.Line))
	}
	return env
}

// cut shortens s to n bytes at a rune boundary, saying so.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + " […]"
}
