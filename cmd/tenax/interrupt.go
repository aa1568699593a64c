package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/exitcode"
)

// ownsSignals, set in a command's Annotations, says the command reads
// globals.interrupts itself (a run drains its calls, a worker finishes
// them, a server stops serving). Every other command gets
// stopOnInterrupt.
const ownsSignals = "tenax.owns-signals"

// ownSignals marks cmd as one that handles SIGINT, SIGTERM and SIGHUP
// itself, and returns it.
func ownSignals(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[ownsSignals] = "yes"
	return cmd
}

// errInterrupted is the cause of a command's context canceled by a
// signal.
var errInterrupted = errors.New("interrupted")

// stopOnInterrupt is the signal handling of a command that has none of
// its own (status, export, validate, breaker, migrate…): the first
// signal cancels its context, so that a query to a PostgreSQL store that
// does not answer, or a long read, stops, and tenax exits 130; a second
// ends the process at once. Without it the signals execute asked for were
// never read, and Ctrl-C did nothing until the command ended. done is
// closed once the command returned.
func stopOnInterrupt(ctx context.Context, g *globals, cancel context.CancelCauseFunc, done <-chan struct{}) {
	if g.interrupts == nil {
		return
	}
	select {
	case <-ctx.Done():
		return
	case <-g.interrupts:
	}
	// Said at once: a command that reads no context (a long validate)
	// goes on until it ends or the second signal comes.
	fmt.Fprintln(g.stderr, "\ntenax: interrupted: stopping (again to exit at once)")
	cancel(errInterrupted)
	select {
	case <-g.interrupts:
		fmt.Fprintln(g.stderr, "tenax: interrupted again: exiting now")
		os.Exit(exitcode.Interrupted)
	case <-done:
	}
}

// cancelOnInterrupt returns ctx canceled at the first SIGINT or SIGTERM,
// after saying so on stderr, for a command that stops gracefully on one
// signal (the run's two-stage handling is handleSignals).
func (g *globals) cancelOnInterrupt(ctx context.Context, say string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if g.interrupts != nil {
		go func() {
			select {
			case <-ctx.Done():
			case <-g.interrupts:
				fmt.Fprintln(g.stderr, say)
				cancel()
			}
		}()
	}
	return ctx, cancel
}
