package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"golang.org/x/term"
)

// exitError carries an exit code through cobra's error return.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// globals are the flags every command shares, and the process's streams.
type globals struct {
	home      string
	storeURL  string // --store, on the commands that read or write jobs
	logFormat string
	logLevel  string
	quiet     bool
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
	// interrupts delivers SIGINT, SIGTERM and SIGHUP; nil in tests that
	// send none.
	interrupts <-chan os.Signal
}

// homeDir is where jobs live: --home, else $TENAX_HOME, else ./.tenax.
func (g *globals) homeDir() string {
	if g.home != "" {
		return g.home
	}
	if h := os.Getenv("TENAX_HOME"); h != "" {
		return h
	}
	return job.DefaultHome
}

// interactive reports whether a person can answer prompts: stdin and
// stderr are terminals and this is not CI.
func (g *globals) interactive() bool {
	if os.Getenv("CI") == "true" {
		return false
	}
	in, ok1 := g.stdin.(*os.File)
	errf, ok2 := g.stderr.(*os.File)
	return ok1 && ok2 && term.IsTerminal(int(in.Fd())) && term.IsTerminal(int(errf.Fd()))
}

// stderrIsTerminal reports whether the progress line can be redrawn.
func (g *globals) stderrIsTerminal() bool {
	f, ok := g.stderr.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// stderrWidth is the terminal's width in columns, 0 when unknown.
func (g *globals) stderrWidth() int {
	f, ok := g.stderr.(*os.File)
	if !ok {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return w
}

// loggerOn is the logger the flags ask for, writing to w.
func (g *globals) loggerOn(w io.Writer) (*slog.Logger, error) {
	return g.loggerOnAtLeast(w, slog.LevelError)
}

// loggerOnAtLeast is loggerOn showing at least the lines of level most
// (those of --log-level's, when it is less severe).
func (g *globals) loggerOnAtLeast(w io.Writer, most slog.Level) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, usageErr(fmt.Errorf("--log-level %q: want debug, info, warn or error", g.logLevel))
	}
	opts := &slog.HandlerOptions{Level: min(level, most)}
	switch g.logFormat {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, usageErr(fmt.Errorf("--log-format %q: want text or json", g.logFormat))
}

// usageErr marks err as a usage or spec error (exit 2).
func usageErr(err error) error { return &exitError{code: exitcode.Usage, err: err} }

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "tenax",
		Short: "Run unreliable operations over many items; bring every item to a recorded outcome",
		Long: `tenax runs an operation (an LLM call, an HTTP call, a command) over every item of an
input file, with retries and backoff, error classification, a circuit breaker that asks
before spending more, self-healing re-asks on invalid output, and a checkpoint that lets
any run resume where it stopped.

Jobs live in ./.tenax (--home or TENAX_HOME moves them; --store or TENAX_STORE
names another directory or a PostgreSQL database: postgres://user@host/db).

Exit codes: 0 all items succeeded; 1 finished with failures; 2 usage or spec error,
or a job another process holds (its pid named); 3 aborted (breaker, budget or
operator); 4 tenax's own storage or input failed (a full disk; the job stays
resumable); 130 interrupted (SIGINT, SIGTERM, SIGHUP).`,
		Example: `  tenax run examples/quickstart.yaml       # 500 items through the built-in mock LLM
  tenax status                             # the latest job's counts and error groups
  tenax resume job_20261122_101500 --retry-failures
  tenax export job_20261122_101500 --failed --format csv`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	addVersionFlag(root)
	root.SetIn(g.stdin)
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageErr(err) })
	pf := root.PersistentFlags()
	pf.StringVar(&g.home, "home", "", "where jobs live (default $TENAX_HOME or ./.tenax)")
	pf.StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	pf.StringVar(&g.logLevel, "log-level", "warn", "least severe log level shown: debug, info, warn or error")
	pf.BoolVarP(&g.quiet, "quiet", "q", false, "no progress line; only the summary and errors")
	root.AddCommand(
		ownSignals(newRunCmd(g)), ownSignals(newResumeCmd(g)), newStatusCmd(g), newExportCmd(g), newValidateCmd(g),
		ownSignals(newMockCmd(g)), newVersionCmd(), ownSignals(newFixCmd(g)),
		newMigrateCmd(g), ownSignals(newWorkerCmd(g)), newBreakerCmd(g), newCacheCmd(g), newImportCmd(g),
	)
	root.AddCommand(ownSignals(newUICmd(g)))
	root.AddCommand(newControlCmds(g)...)
	return root
}

// addVersionFlag gives root --version (-v), printing what `tenax version`
// prints. Not cobra's Version field: its output takes a custom text only
// through SetVersionTemplate, a text/template, whose run-time method
// lookup makes the linker keep every exported method in the binary
// (30 MB; docs/install.md, "Sizes").
func addVersionFlag(root *cobra.Command) {
	var show bool
	root.Flags().BoolVarP(&show, "version", "v", false, "print the version, the commit and the Go version")
	root.RunE = func(cmd *cobra.Command, _ []string) error {
		if !show {
			return cmd.Help()
		}
		_, err := fmt.Fprint(cmd.OutOrStdout(), currentBuild().text())
		return err
	}
}

// execute runs the CLI and returns the process exit code.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	// A closed terminal interrupts the run like Ctrl-C; under nohup, which
	// ignores SIGHUP so that the run outlives the terminal, it stays
	// ignored.
	if !signal.Ignored(syscall.SIGHUP) {
		signal.Notify(sigs, syscall.SIGHUP)
	}
	defer signal.Stop(sigs)
	return executeWith(args, stdin, stdout, stderr, sigs)
}

// executeWith is execute with the signals given: tests send their own.
func executeWith(args []string, stdin io.Reader, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr, interrupts: sigs}
	root := newRootCmd(g)
	if completing(args) {
		completeDynamic(root, g)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	done := make(chan struct{})
	defer close(done)
	root.PersistentPreRun = func(cmd *cobra.Command, _ []string) {
		if cmd.Annotations[ownsSignals] == "" {
			go stopOnInterrupt(cmd.Context(), g, cancel, done)
		}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if errors.Is(context.Cause(ctx), errInterrupted) {
		return exitcode.Interrupted
	}
	if err == nil {
		return exitcode.OK
	}
	// A store that cannot be opened is tenax's own storage failing, in
	// every command: one rule here, not one per command's path to it.
	var oe *store.OpenError
	if errors.As(err, &oe) {
		fmt.Fprintln(stderr, "tenax:", err)
		return exitcode.Storage
	}
	// A job another process holds is refused before any call: not a run
	// that ended with failures (1) but a command to give again once the
	// holder (named by its pid) is done, as a usage error is.
	if errors.Is(err, store.ErrInUse) {
		fmt.Fprintf(stderr, "tenax: %v; wait for that run to end (or stop it), then run the command again\n", err)
		return exitcode.Usage
	}
	// A job whose manifest cannot be read is tenax's own storage failing,
	// for that job alone: the others are listed and resumed as ever.
	var unreadable *store.UnreadableJobsError
	if errors.As(err, &unreadable) {
		fmt.Fprintln(stderr, "tenax:", err)
		return exitcode.Storage
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "tenax:", ee.err)
		}
		return ee.code
	}
	var ue *job.UsageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, "tenax:", ue.Err)
		return exitcode.Usage
	}
	fmt.Fprintln(stderr, "tenax:", err)
	if isUsage(err) {
		// "accepts 1 arg(s), received 0" alone does not say which
		// argument `tenax run` wants.
		if cmd != nil && cmd != root {
			fmt.Fprintf(stderr, "Usage: %s\nRun '%s --help' for more.\n", cmd.UseLine(), cmd.CommandPath())
		}
		return exitcode.Usage
	}
	return exitcode.Failures
}

// isUsage reports cobra's own argument errors, which it returns unwrapped.
func isUsage(err error) bool {
	msg := err.Error()
	for _, p := range []string{"unknown command", "accepts ", "requires at least", "requires exactly", "unknown flag", "unknown shorthand"} {
		if len(msg) >= len(p) && containsFold(msg, p) {
			return true
		}
	}
	return false
}
