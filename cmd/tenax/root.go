package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes, as DESIGN.md fixes them.
const (
	exitOK          = 0
	exitFailures    = 1
	exitUsage       = 2
	exitAborted     = 3
	exitInterrupted = 130
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

// usageErr marks err as a usage or spec error (exit 2).
func usageErr(err error) error { return &exitError{code: exitUsage, err: err} }

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// globals are the flags every command shares.
type globals struct {
	home      string
	logFormat string
	quiet     bool
	stdin     io.Reader
	stdout    io.Writer
	stderr    io.Writer
}

func newRootCmd(g *globals) *cobra.Command {
	root := &cobra.Command{
		Use:   "tenax",
		Short: "Run unreliable operations over many items; bring every item to a recorded outcome",
		Long: `tenax runs an operation (an LLM call, an HTTP call, a command) over every item of an
input file, with retries and backoff, error classification, a circuit breaker that asks
before spending more, self-healing re-asks on invalid output, and a checkpoint that lets
any run resume where it stopped.

Exit codes: 0 all items succeeded; 1 finished with failures; 2 usage or spec error;
3 aborted (breaker, budget or operator); 130 interrupted.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(g.stdin)
	root.SetOut(g.stdout)
	root.SetErr(g.stderr)
	root.PersistentFlags().StringVar(&g.home, "home", "", "where jobs live (default $TENAX_HOME or ./.tenax)")
	root.PersistentFlags().StringVar(&g.logFormat, "log-format", "text", "log format on stderr: text or json")
	root.PersistentFlags().BoolVarP(&g.quiet, "quiet", "q", false, "no progress line; only the summary and errors")
	root.AddCommand(newVersionCmd())
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the tenax version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintf(cmd.OutOrStdout(), "tenax %s\n", version)
			return err
		},
	}
}

// execute runs the CLI and returns the process exit code.
func execute(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	g := &globals{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRootCmd(g)
	root.SetArgs(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "tenax:", ee.err)
		}
		return ee.code
	}
	fmt.Fprintln(stderr, "tenax:", err)
	return exitUsage
}
