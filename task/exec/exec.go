package exec

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// DefaultMaxStderr is how much stderr an ExitError keeps when
// Config.MaxStderr is zero: 64 KiB, half from the start, half from the end.
const DefaultMaxStderr = 64 << 10

// killGrace is how long a canceled or timed-out command has between
// SIGTERM and SIGKILL to its process group, and how long Run waits for
// leftover processes to close its pipes after the command has exited.
const killGrace = 500 * time.Millisecond

// The environment variables Run sets for the command.
const (
	// EnvIdx holds the item's index.
	EnvIdx = "TENAX_IDX"
	// EnvAttempt holds the heal attempt: 0 for the first generation, n
	// for the n-th re-ask with feedback.
	EnvAttempt = "TENAX_ATTEMPT"
	// EnvFeedback holds the path of a file with the heal loop's feedback
	// message; set only when the item is re-asked.
	EnvFeedback = "TENAX_FEEDBACK"
	// EnvPreviousOutput holds the path of a file with the output that
	// failed validation; set only when the item is re-asked.
	EnvPreviousOutput = "TENAX_PREVIOUS_OUTPUT"
)

// Output formats of Config.Output.
const (
	// OutputText makes stdout, less one trailing newline, the item's
	// output as a JSON string.
	OutputText = "text"
	// OutputJSON requires stdout to be one JSON value, which becomes the
	// item's output.
	OutputJSON = "json"
)

// Config describes the command a Task runs for each item.
type Config struct {
	// Argv is the command and its arguments, each a text/template
	// rendered over the item. Argv[0] is looked up in PATH when it has no
	// slash. Each rendered value is exactly one argument: no shell ever
	// sees it.
	Argv []string
	// Stdin is a template for the command's standard input; "" gives it
	// an empty stdin.
	Stdin string
	// Env adds variables to the command's environment, which otherwise is
	// tenax's own. Values are templates. The TENAX_ variables Run sets
	// win over these.
	Env map[string]string
	// Dir is the command's working directory; "" is tenax's. A relative
	// Argv[0] with a slash ("./review.sh") is relative to it.
	Dir string
	// Timeout limits each attempt; 0 means none. When it expires the
	// command's whole process group is terminated.
	Timeout time.Duration
	// ExitCodes classifies exit codes explicitly, ahead of the defaults
	// (75 retryable, 126 and 127 fatal, others item).
	ExitCodes ExitCodes
	// Output is OutputText (the default, "") or OutputJSON.
	Output string
	// MaxStderr caps the stderr an ExitError keeps, head and tail; 0 means
	// DefaultMaxStderr.
	MaxStderr int
	// MaxAnswerBytes bounds stdout: a command that writes more is stopped
	// as on a timeout and the attempt fails with a
	// *task.AnswerTooLargeError marked classify.Item, holding no more than
	// the bound. 0 means task.DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// AllowOptionValues lets an item's value start an argument with "-".
	// By default such an attempt fails as the item's fault (classify.Item)
	// before anything runs, since the program would read the value as an
	// option ("-o/tmp/pwned" given to sort): unless the argument's
	// template itself starts with "-" ("--file={{.f}}"), or comes after an
	// argument that is exactly "--", which ends a program's options.
	AllowOptionValues bool
}

// ExitCodes lists exit codes whose class the user knows, such as
// {Retryable: [75], Fatal: [126, 127]}. A code may appear in one list only.
type ExitCodes struct {
	// Retryable codes are transient failures, retried with backoff.
	Retryable []int
	// Fatal codes mean the setup is wrong: the run stops.
	Fatal []int
	// Item codes mean only this item is bad: it is recorded as failed.
	Item []int
}

// Task runs a command per item, from argv templates, never through a
// shell. It implements task.Task and is safe for concurrent use.
type Task struct {
	argv      []*task.Template
	argvSrc   []string
	stdin     *task.Template
	env       []envTemplate
	dir       string
	timeout   time.Duration
	exitClass map[int]classify.Class
	json      bool
	maxStderr int
	maxStdout int64 // Config.MaxAnswerBytes, defaulted
	options   bool  // Config.AllowOptionValues
	groups    *GroupFile
}

// WithGroups returns a copy of t that records the process groups it
// starts in g, and gives its commands g's token (EnvRun).
func (t *Task) WithGroups(g *GroupFile) *Task {
	c := *t
	c.groups = g
	return &c
}

type envTemplate struct {
	name string
	tmpl *task.Template
}

// New checks cfg and parses its templates, so that a typo fails before
// any item runs. Errors name the template at fault ("argv[1]", "stdin",
// "env[TOKEN]").
func New(cfg Config) (*Task, error) {
	if len(cfg.Argv) == 0 {
		return nil, errors.New("exec: argv is empty")
	}
	t := &Task{dir: cfg.Dir, timeout: cfg.Timeout, maxStderr: cfg.MaxStderr, options: cfg.AllowOptionValues, argvSrc: slices.Clone(cfg.Argv)}
	switch cfg.Output {
	case "", OutputText:
	case OutputJSON:
		t.json = true
	default:
		return nil, fmt.Errorf("exec: output %q: want %q or %q", cfg.Output, OutputText, OutputJSON)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("exec: negative timeout %v", cfg.Timeout)
	}
	if t.maxStderr <= 0 {
		t.maxStderr = DefaultMaxStderr
	}
	if cfg.MaxAnswerBytes < 0 {
		return nil, fmt.Errorf("exec: negative max_answer_bytes %d", cfg.MaxAnswerBytes)
	}
	t.maxStdout = cmp.Or(cfg.MaxAnswerBytes, task.DefaultMaxAnswerBytes)
	for i, src := range cfg.Argv {
		tmpl, err := task.ParseTemplate("argv["+strconv.Itoa(i)+"]", src)
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		t.argv = append(t.argv, tmpl)
	}
	if cfg.Stdin != "" {
		tmpl, err := task.ParseTemplate("stdin", cfg.Stdin)
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		t.stdin = tmpl
	}
	names := make([]string, 0, len(cfg.Env))
	for name := range cfg.Env {
		if name == "" || strings.ContainsAny(name, "=\x00") {
			return nil, fmt.Errorf("exec: env: invalid variable name %q", name)
		}
		names = append(names, name)
	}
	slices.Sort(names) // deterministic errors and environment order
	for _, name := range names {
		tmpl, err := task.ParseTemplate("env["+name+"]", cfg.Env[name])
		if err != nil {
			return nil, fmt.Errorf("exec: %w", err)
		}
		t.env = append(t.env, envTemplate{name, tmpl})
	}
	t.exitClass = make(map[int]classify.Class)
	for _, l := range []struct {
		class classify.Class
		codes []int
	}{{classify.Retryable, cfg.ExitCodes.Retryable}, {classify.Fatal, cfg.ExitCodes.Fatal}, {classify.Item, cfg.ExitCodes.Item}} {
		for _, code := range l.codes {
			if prev, ok := t.exitClass[code]; ok && prev != l.class {
				return nil, fmt.Errorf("exec: exit_codes: %d is listed as both %s and %s", code, prev, l.class)
			}
			t.exitClass[code] = l.class
		}
	}
	return t, nil
}

// Run makes one attempt: it renders the templates over item, starts the
// command in a process group of its own, and waits for it or for ctx.
//
// A non-zero exit, a signal, a timeout or a command that cannot start is
// an *ExitError (find it with errors.As), marked with its class when
// Config.ExitCodes lists its code. A timeout also matches
// context.DeadlineExceeded and a canceled ctx context.Canceled with
// errors.Is. Stdout that is not JSON under OutputJSON is a
// *task.OutputError; stdout over Config.MaxAnswerBytes a
// *task.AnswerTooLargeError marked classify.Item. A template that cannot render is marked
// classify.Item.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	d := task.TemplateData(item)
	argv, stdin, err := t.render(d)
	if err != nil {
		return task.Result{}, err
	}
	env, cleanup, err := t.environ(d, item)
	defer cleanup()
	if err != nil {
		return task.Result{}, err
	}

	path, err := t.lookPath(argv[0])
	if err != nil {
		return task.Result{}, t.mark(&ExitError{Argv0: argv[0], Code: startFailureCode(err), Err: err})
	}

	attemptCtx := ctx
	if t.timeout > 0 {
		var cancel context.CancelFunc
		attemptCtx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	// Stdout over the bound stops the command as a timeout would, on a
	// context of its own so that the attempt's timeout still says what
	// it says.
	cmdCtx, stopCmd := context.WithCancel(attemptCtx)
	defer stopCmd()
	cmd := osexec.CommandContext(cmdCtx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = t.dir
	cmd.Env = env
	if t.stdin != nil {
		cmd.Stdin = strings.NewReader(stdin)
	}
	stdout := &boundedStdout{max: t.maxStdout, over: stopCmd}
	stderr := newCapBuffer(t.maxStderr)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if t.groups != nil {
		cmd.Env = append(cmd.Env, EnvRun+"="+t.groups.token)
	}
	cmd.SysProcAttr = SysProcAttr()
	// On cancel, ask the whole group to stop; WaitDelay later kills the
	// leader and closes pipes a stubborn grandchild still holds, and
	// killGroup below finishes off the rest.
	cmd.Cancel = func() error { return signalGroup(cmd.Process.Pid, syscall.SIGTERM) }
	cmd.WaitDelay = killGrace

	if err := cmd.Start(); err != nil {
		return task.Result{}, t.startError(ctx, attemptCtx, argv[0], err)
	}
	t.groups.record(item.Idx, '+', cmd.Process.Pid)
	waitErr := cmd.Wait()
	if waitErr != nil && (cmdCtx.Err() != nil || errors.Is(waitErr, osexec.ErrWaitDelay)) {
		// The attempt is over; nothing of its process group may outlive it.
		_ = signalGroup(cmd.Process.Pid, syscall.SIGKILL)
	}
	t.groups.record(item.Idx, '-', cmd.Process.Pid)
	if stdout.tooLarge && ctx.Err() == nil {
		return task.Result{}, fmt.Errorf("exec: %s: %w", argv[0], task.TooLarge("stdout", t.maxStdout))
	}
	return t.outcome(ctx, attemptCtx, cmd, waitErr, stdout.buf.Bytes(), stderr.String())
}

// boundedStdout keeps a command's stdout up to max bytes. A write past it
// fails, which closes the pipe (a command still writing gets SIGPIPE),
// and calls over, which stops the command's process group.
type boundedStdout struct {
	buf      bytes.Buffer
	max      int64
	over     func()
	tooLarge bool
}

func (b *boundedStdout) Write(p []byte) (int, error) {
	if int64(b.buf.Len())+int64(len(p)) > b.max {
		b.tooLarge = true
		b.over()
		return 0, errStdoutTooLarge
	}
	return b.buf.Write(p)
}

// errStdoutTooLarge ends the copying of a command's stdout past the bound;
// Run reports the bound instead.
var errStdoutTooLarge = errors.New("stdout over the bound")

// outcome is what an ended command comes to: its output parsed, or an
// *ExitError that says whether the run's interruption, the attempt's
// timeout or the command itself ended it.
func (t *Task) outcome(ctx, attemptCtx context.Context, cmd *osexec.Cmd, waitErr error, stdout []byte, stderr string) (task.Result, error) {
	argv0 := cmd.Args[0]
	switch {
	case waitErr == nil, errors.Is(waitErr, osexec.ErrWaitDelay):
		// ErrWaitDelay: the command succeeded but left a process holding
		// its stdout; the output is what arrived until then.
		return t.result(stdout)
	case ctx.Err() != nil:
		// Not marked: the run's interruption decides, whatever the code.
		return task.Result{}, &ExitError{Argv0: argv0, Code: cmd.ProcessState.ExitCode(), Sig: signalName(cmd.ProcessState), StderrText: stderr, Err: ctx.Err()}
	case attemptCtx.Err() != nil:
		return task.Result{}, t.mark(&ExitError{Argv0: argv0, Code: 124, StderrText: stderr, TimedOut: true, Timeout: t.timeout, Err: context.DeadlineExceeded})
	}
	var exitErr *osexec.ExitError
	if !errors.As(waitErr, &exitErr) {
		return task.Result{}, fmt.Errorf("exec: %s: %w", argv0, waitErr)
	}
	e := &ExitError{Argv0: argv0, Code: exitErr.ExitCode(), StderrText: stderr, Err: exitErr}
	if sig := signalName(exitErr.ProcessState); sig != "" {
		e.Code, e.Sig = -1, sig
	}
	return task.Result{}, t.mark(e)
}

// render executes the argument and stdin templates for one item, refusing
// an argument no program should get from an item (checkArg).
func (t *Task) render(d map[string]any) (argv []string, stdin string, err error) {
	var sb strings.Builder
	argv = make([]string, len(t.argv))
	for i, tmpl := range t.argv {
		s, err := tmpl.Execute(&sb, d)
		if err != nil {
			return nil, "", err
		}
		if err := t.checkArg(i, s); err != nil {
			return nil, "", err
		}
		argv[i] = s
	}
	if t.stdin != nil {
		if stdin, err = t.stdin.Execute(&sb, d); err != nil {
			return nil, "", err
		}
	}
	return argv, stdin, nil
}

// startError is what a command that could not start comes to: the run's
// interruption, the attempt's timeout, an item whose values are too long
// for one command line, or a command that cannot run.
func (t *Task) startError(ctx, attemptCtx context.Context, argv0 string, err error) error {
	if ctx.Err() != nil {
		return &ExitError{Argv0: argv0, Code: -1, Err: ctx.Err()}
	}
	if attemptCtx.Err() != nil {
		return t.mark(&ExitError{Argv0: argv0, Code: 124, TimedOut: true, Timeout: t.timeout, Err: context.DeadlineExceeded})
	}
	if errors.Is(err, syscall.E2BIG) {
		// The item's values made the command line or the environment
		// too long: this item's fault, not a command that cannot run.
		return classify.WithClass(fmt.Errorf("exec: %s: the item's arguments and environment are too long for one command (%w): pass large values on stdin (task.stdin)", argv0, err), classify.Item, "argument list too long")
	}
	return t.mark(&ExitError{Argv0: argv0, Code: startFailureCode(err), Err: err})
}

// checkArg refuses, as the item's fault, an argument no program should get
// from an item: one holding a NUL byte (no argument can carry it), or one
// that starts with "-" because of the item's value (see
// Config.AllowOptionValues).
func (t *Task) checkArg(i int, arg string) error {
	field := "argv[" + strconv.Itoa(i) + "]"
	if strings.IndexByte(arg, 0) >= 0 {
		return classify.WithClass(fmt.Errorf("exec: %s holds a NUL byte, which no program argument can carry", field), classify.Item, "NUL in argv")
	}
	if i == 0 || t.options || !strings.HasPrefix(arg, "-") || strings.HasPrefix(t.argvSrc[i], "-") || slices.Contains(t.argvSrc[1:i], "--") {
		return nil
	}
	return classify.WithClass(fmt.Errorf(
		"exec: %s is %s, which %s would read as an option: put \"--\" before it in task.argv, or set task.allow_option_values: true",
		field, quoteShort(arg), t.argvSrc[0]), classify.Item, "option value")
}

// quoteShort quotes s, cut to 60 bytes.
func quoteShort(s string) string {
	if len(s) > 60 {
		return strconv.Quote(strings.ToValidUTF8(s[:60], "")) + "…"
	}
	return strconv.Quote(s)
}

// mark applies the exit_codes rules to e.
func (t *Task) mark(e *ExitError) error {
	if class, ok := t.exitClass[e.Code]; ok && e.Sig == "" {
		return classify.WithClass(e, class, "exit_codes rule")
	}
	return e
}

// result turns stdout into the item's output.
func (t *Task) result(stdout []byte) (task.Result, error) {
	if t.json {
		var buf bytes.Buffer
		if err := json.Compact(&buf, stdout); err != nil {
			return task.Result{}, &task.OutputError{Output: string(stdout), Err: fmt.Errorf("stdout is not JSON: %w", err)}
		}
		return task.Result{Output: buf.Bytes()}, nil
	}
	stdout = bytes.TrimSuffix(stdout, []byte("\n"))
	stdout = bytes.TrimSuffix(stdout, []byte("\r"))
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <, > and & as the command wrote them
	if err := enc.Encode(string(stdout)); err != nil {
		return task.Result{}, err // unreachable: a string always encodes
	}
	return task.Result{Output: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}, nil
}

// environ returns the command's environment and a function removing the
// feedback files it wrote, which the caller must call.
func (t *Task) environ(d map[string]any, item task.Item) (env []string, cleanup func(), err error) {
	var files []string
	cleanup = func() {
		for _, f := range files {
			_ = os.Remove(f)
		}
	}
	base := os.Environ()
	env = make([]string, 0, len(base)+len(t.env)+4)
	for _, kv := range base {
		// A tenax run inside an exec task must not pass its own feedback on.
		if !strings.HasPrefix(kv, EnvFeedback+"=") && !strings.HasPrefix(kv, EnvPreviousOutput+"=") {
			env = append(env, kv)
		}
	}
	var sb strings.Builder
	for _, e := range t.env {
		v, err := e.tmpl.Execute(&sb, d)
		if err != nil {
			return nil, cleanup, err
		}
		if strings.IndexByte(v, 0) >= 0 {
			return nil, cleanup, classify.WithClass(fmt.Errorf("exec: env[%s] holds a NUL byte, which no environment variable can carry", e.name), classify.Item, "NUL in env")
		}
		env = append(env, e.name+"="+v)
	}
	attempt := 0
	if fb := item.Feedback; fb != nil {
		attempt = fb.Attempt
		for _, f := range []struct{ name, text string }{{EnvFeedback, fb.Message}, {EnvPreviousOutput, fb.PreviousOutput}} {
			path, err := writeTemp(f.text)
			if path != "" {
				files = append(files, path)
			}
			if err != nil {
				return nil, cleanup, fmt.Errorf("exec: write %s file: %w", f.name, err)
			}
			env = append(env, f.name+"="+path)
		}
	}
	env = append(env, EnvIdx+"="+strconv.Itoa(item.Idx), EnvAttempt+"="+strconv.Itoa(attempt))
	return env, cleanup, nil
}

func writeTemp(text string) (string, error) {
	f, err := os.CreateTemp("", "tenax-feedback-*.txt")
	if err != nil {
		return "", err
	}
	_, err = f.WriteString(text)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return f.Name(), err
}

// lookPath finds the program to run: a bare name in PATH, a path with a
// slash relative to the task's directory. Its errors are *os/exec.Error,
// wrapping os/exec.ErrNotFound or fs.ErrPermission.
func (t *Task) lookPath(name string) (string, error) {
	if !strings.Contains(name, "/") {
		return osexec.LookPath(name)
	}
	p := name
	if t.dir != "" && !filepath.IsAbs(p) {
		p = filepath.Join(t.dir, p)
	}
	fi, err := os.Stat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", &osexec.Error{Name: name, Err: osexec.ErrNotFound}
	case err != nil:
		return "", &osexec.Error{Name: name, Err: err}
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return "", &osexec.Error{Name: name, Err: fs.ErrPermission}
	}
	// Run the name as given: the kernel resolves it against Dir.
	return name, nil
}

// startFailureCode returns the shell's exit code for a command that could
// not be started: 127 not found, 126 found but not executable.
func startFailureCode(err error) int {
	switch {
	case errors.Is(err, osexec.ErrNotFound), errors.Is(err, osexec.ErrDot), errors.Is(err, syscall.ENOENT):
		return 127
	default:
		return 126
	}
}

// signalGroup sends sig to the process group led by pid.
func signalGroup(pid int, sig syscall.Signal) error {
	err := syscall.Kill(-pid, sig)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}

// signalName returns the name of the signal that killed the process, ""
// when it exited by itself.
func signalName(ps *os.ProcessState) string {
	if ps == nil {
		return ""
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal().String()
	}
	return ""
}
