package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

type runFlags struct {
	input         string
	output        string
	limit         int
	dryRun        bool
	allowEmpty    bool
	retryFailures bool
	// retryClasses is --retry-failures's value: "all", or classes.
	retryClasses string
	fingerprints []string
	routes       []string // --route: the failures of these routes
	classes      []classify.Class
	force        bool
	batch        bool   // --batch: provider batch mode
	ui           string // --ui: serve the live page here
	metrics      string // --metrics: serve /metrics here
	workers      int    // --workers: run on River (PostgreSQL store)
}

// parseRetry reads --retry-failures[=CLASS,…], --fingerprint and --route.
func (f *runFlags) parseRetry() error {
	f.retryFailures = f.retryClasses != "" || len(f.fingerprints) > 0 || len(f.routes) > 0
	if f.retryClasses == "" || f.retryClasses == "all" {
		return nil
	}
	for _, name := range strings.Split(f.retryClasses, ",") {
		c, err := classify.ParseClass(strings.TrimSpace(name))
		if err != nil || c == classify.Canceled || c == classify.Unknown {
			return fmt.Errorf("--retry-failures=%s: %q is not a failure class; want retryable, fatal, item or invalid", f.retryClasses, name)
		}
		f.classes = append(f.classes, c)
	}
	return nil
}

// addWatchFlags adds --ui and --metrics.
func addWatchFlags(cmd *cobra.Command, f *runFlags) {
	fl := cmd.Flags()
	fl.StringVar(&f.ui, "ui", "", "serve a live web page of the run (and /metrics); --ui alone picks a free port on 127.0.0.1, --ui=ADDR listens there (not loopback: a token is required, printed in the URL)")
	fl.Lookup("ui").NoOptDefVal = "127.0.0.1:0"
	fl.StringVar(&f.metrics, "metrics", "", "serve Prometheus metrics at ADDR/metrics, without the web page (not loopback: a bearer token is required, $TENAX_METRICS_TOKEN or a random one, printed)")
}

// watchArgs is cobra.ExactArgs(n) that explains `--ui ADDR` (a bare --ui
// takes no value, so ADDR would be read as an argument).
func watchArgs(n int, f *runFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == n+1 && cmd.Flags().Changed("ui") && f.ui == "127.0.0.1:0" {
			return usageErr(fmt.Errorf("write --ui=%s (with =): a bare --ui picks a free loopback port and takes no value", args[n]))
		}
		return cobra.ExactArgs(n)(cmd, args)
	}
}

// resumeArgs is watchArgs(1) that explains `--retry-failures CLASS`: a bare
// --retry-failures means every class and takes no value, so CLASS would be
// read as a second job.
func resumeArgs(f *runFlags) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == 2 && cmd.Flags().Changed("retry-failures") && f.retryClasses == "all" {
			for _, a := range []string{args[1], args[0]} {
				if c, err := classify.ParseClass(strings.Split(a, ",")[0]); err == nil && c != classify.Unknown {
					return usageErr(fmt.Errorf("write --retry-failures=%s (with =): a bare --retry-failures re-runs every failure and takes no value", a))
				}
			}
		}
		return watchArgs(1, f)(cmd, args)
	}
}

func newRunCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run SPEC",
		Short: "Start a job: run the spec's task over every item of its input",
		Long: `Start a job: run the spec's task over every item of its input, with retries,
the circuit breaker, self-healing re-asks and a checkpoint in .tenax/jobs/<id>/.

A spec may name several routes (providers, models, deployments) with opt-in
fallbacks: an outage, a context window too small or a refusal moves the item to
another route instead of failing it (docs/routes.md, examples/routes.yaml).
OTEL_EXPORTER_OTLP_ENDPOINT sends a trace of the run (docs/tracing.md).

The first Ctrl-C stops dispatching, lets the calls in flight finish and prints the
resume command; a second one cancels them (their items stay pending).`,
		Example: `  tenax run examples/quickstart.yaml
  tenax run job.yaml --input more.jsonl --output results.jsonl
  tenax run job.yaml --limit 10      # try the first ten items
  tenax run job.yaml --dry-run       # check spec and input, show the plan, call nothing
  tenax run job.yaml --ui            # and watch it in the browser (the URL is printed)
  tenax run job.yaml --batch         # through the provider's batch API, at half the price
  tenax run examples/routes.yaml     # two mock routes, one down: every item moves to the other`,
		Args: watchArgs(1, &f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.limit < 0 {
				return usageErr(fmt.Errorf("--limit %d: want 0 (all) or more", f.limit))
			}
			if f.dryRun {
				return dryRun(cmd.Context(), g, args[0], f)
			}
			if cmd.Flags().Changed("workers") {
				if err := refuseOnWorkers(cmd, f); err != nil {
					return err
				}
				return runOnWorkers(cmd.Context(), g, args[0], f, f.workers)
			}
			return runJob(cmd.Context(), g, f, func(ctx context.Context, o job.Options) (*job.Result, error) {
				return job.Run(ctx, args[0], o)
			})
		},
	}
	addStoreFlag(cmd, g)
	fl := cmd.Flags()
	fl.StringVar(&f.input, "input", "", "input file instead of the spec's (.jsonl, .csv or .txt)")
	fl.StringVar(&f.output, "output", "", "write the compacted, idx-ordered results here at the end (.jsonl or .csv)")
	fl.IntVar(&f.limit, "limit", 0, "run at most N items (0 = all)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "check the spec and the input, render the templates against the first 100 items, show the plan; call nothing")
	fl.BoolVar(&f.allowEmpty, "allow-empty", false, "accept an input without items (otherwise an error, exit 2)")
	addWatchFlags(cmd, &f)
	addWorkersFlag(cmd, &f)
	fl.BoolVar(&f.batch, "batch", false, "send the items through the provider's batch API in waves (as task.mode: batch; openai, azure, anthropic, gemini or mock)")
	return cmd
}

func newResumeCmd(g *globals) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "resume JOB|latest|NAME",
		Short: "Run a job's pending items (and, with --retry-failures, its failed ones)",
		Long: `Resume a job: run every item that has no record yet. With --retry-failures, also
re-run the items whose latest record failed; --retry-failures=retryable,invalid
re-runs only the failures of these classes, --fingerprint FP only those of
one error group of 'tenax status', and --route NAME only those a route of the
job produced (both imply --retry-failures; given together, a failure must match
each). JOB is a job
id, 'latest', or a job's name (its latest run). The spec is read again from its file
(so a fixed script or a raised budget takes effect); the input must be unchanged
unless --force.`,
		Example: `  tenax resume job_20261122_101500
  tenax resume latest --retry-failures
  tenax resume latest --route azure-eu   # the failures that route produced
  tenax resume translate-hsk         # the latest job of that spec name`,
		Args: resumeArgs(&f),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.parseRetry(); err != nil {
				return usageErr(err)
			}
			if cmd.Flags().Changed("workers") {
				if err := refuseOnWorkers(cmd, f); err != nil {
					return err
				}
				return resumeOnWorkers(cmd.Context(), g, args[0], f, f.workers)
			}
			return runJob(cmd.Context(), g, f, func(ctx context.Context, o job.Options) (*job.Result, error) {
				return job.Resume(ctx, args[0], o)
			})
		},
	}
	addStoreFlag(cmd, g)
	fl := cmd.Flags()
	fl.StringVar(&f.retryClasses, "retry-failures", "", "also re-run items whose latest record failed; =CLASS,… only those of these classes (retryable, fatal, item, invalid)")
	fl.Lookup("retry-failures").NoOptDefVal = "all"
	fl.StringSliceVar(&f.fingerprints, "fingerprint", nil, "re-run only the failed items with this error fingerprint `FP` (or a prefix of it, as tenax status shows it); repeatable")
	fl.StringSliceVar(&f.routes, "route", nil, "re-run only the failed items whose record the route `NAME` produced (tenax status lists a job's routes); repeatable")
	fl.BoolVar(&f.force, "force", false, "resume even though the input file changed")
	fl.StringVar(&f.output, "output", "", "write the compacted, idx-ordered results here at the end (.jsonl or .csv)")
	fl.IntVar(&f.limit, "limit", 0, "run at most N items (0 = all)")
	addWatchFlags(cmd, &f)
	addWorkersFlag(cmd, &f)
	return cmd
}

// runJob runs a job with the terminal's progress line, prompts and signal
// handling, prints the summary and turns the result into an exit code.
func runJob(ctx context.Context, g *globals, f runFlags, start func(context.Context, job.Options) (*job.Result, error)) error {
	// Everything the run writes on stderr goes through one screen, so that
	// log lines and messages appear above the live progress line instead
	// of on it.
	screen := console.NewScreen(g.stderr, g.stderrIsTerminal() && !g.quiet)
	log, err := g.loggerOn(screen)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Signals are handled from the start: opening a PostgreSQL store that
	// does not answer is stopped by the first, as the input's check is.
	var running atomic.Pointer[engine.Engine]
	go handleSignals(ctx, g, screen, &running, cancel)
	st, closeStore, err := g.openStore(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return &exitError{code: exitcode.Interrupted}
		}
		return err
	}
	defer closeStore()
	opts, prompter := runOptions(g, f, st, screen, log)
	w, err := startWatch(screen, f, &opts)
	if err != nil {
		return err
	}
	defer w.close()
	trace, stopTracing := g.traceRun(ctx, &opts)
	defer stopTracing()
	stopProgress := func() {}
	opts.OnStart = func(s job.Started) {
		trace.started(ctx, s)
		fmt.Fprintf(screen, "tenax: job %s (%s)\n", s.JobID, cmp.Or(s.Dir, s.Store))
		running.Store(s.Engine)
		w.start(s)
		if prompter != nil {
			prompter.Redact = s.Redact
		}
		if g.quiet || s.Stats != nil {
			// Batch mode prints a line at each poll instead (below).
			return
		}
		p := console.NewProgress(screen, 5*time.Second, s.Engine.Stats)
		p.Width = g.stderrWidth
		if prompter != nil {
			prompter.Progress = p
		}
		pctx, pcancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); p.Run(pctx) }()
		stopProgress = func() { pcancel(); <-done }
	}
	if !g.quiet {
		opts.OnBatchProgress = func(p batch.Progress) { fmt.Fprintln(screen, "batches: "+p.String()) }
	}
	w.observeBatch(&opts)
	res, runErr := start(ctx, opts)
	trace.ended(res, runErr)
	stopProgress()
	w.end()
	return ended(g, res, runErr)
}

// runOptions are a run's job.Options from its flags and store, and on a
// terminal the prompter that answers its breaker (nil otherwise).
func runOptions(g *globals, f runFlags, st store.Store, screen io.Writer, log *slog.Logger) (job.Options, *console.Prompter) {
	if js, ok := st.(*jsonl.Store); ok {
		// A resume of a job without results.idx reads its whole log first.
		js.Logger = log
	}
	interactive := g.interactive()
	opts := job.Options{
		Home: g.homeDir(), Store: st, StoreFlag: g.storeURL, Version: version, Input: f.input, Output: f.output, Limit: f.limit,
		RetryFailures: f.retryFailures, RetryClasses: f.classes, RetryFingerprints: f.fingerprints, RetryRoutes: f.routes,
		Force: f.force, AllowEmpty: f.allowEmpty, Interactive: interactive, Logger: log,
		Batch: f.batch,
	}
	if !interactive {
		return opts, nil
	}
	prompter := console.NewPrompter(g.stdin, screen)
	// Inspect pages through the failures the breaker drained.
	failures := console.NewFailureLog(console.DefaultFailureLogSize)
	prompter.Failures = failures
	opts.Operator = prompter
	opts.OnEvent = failures.Observe
	return opts, prompter
}

// ended prints the summary of a run that returned res and runErr and
// turns them into the command's error, carrying the exit code.
func ended(g *globals, res *job.Result, runErr error) error {
	if res == nil {
		if errors.Is(runErr, context.Canceled) {
			// A signal before the first item: nothing ran, nothing was
			// recorded.
			return &exitError{code: exitcode.Interrupted, err: runErr}
		}
		return runErr
	}
	printSummary(g.stdout, res)
	if runErr != nil {
		return &exitError{code: max(res.ExitCode, exitcode.Failures), err: runErr}
	}
	if res.ExitCode != exitcode.OK {
		return &exitError{code: res.ExitCode}
	}
	return nil
}

// handleSignals: the first SIGINT, SIGTERM or SIGHUP drains the running
// engine, the second cancels the calls in flight. Before the engine runs
// (while the input is scanned) there is nothing to drain: the first signal
// cancels. A SIGHUP (the terminal closed, an SSH session dropped) is an
// interruption like the others: the job ends interrupted, resumable, with
// its failures.jsonl, instead of dying with its manifest saying running.
func handleSignals(ctx context.Context, g *globals, out io.Writer, running *atomic.Pointer[engine.Engine], cancel context.CancelFunc) {
	if g.interrupts == nil {
		return
	}
	var sig os.Signal
	select {
	case <-ctx.Done():
		return
	case sig = <-g.interrupts:
	}
	name := signalName(sig)
	e := running.Load()
	if e == nil {
		fmt.Fprintf(out, "tenax: interrupted (%s) before the run started\n", name)
		cancel()
		return
	}
	fmt.Fprintf(out, "tenax: interrupted (%s): finishing the calls in flight (Ctrl-C again to cancel them)\n", name)
	e.Stop(engine.StopSignal, "interrupted by "+name)
	select {
	case <-ctx.Done():
		return
	case <-g.interrupts:
	}
	fmt.Fprintln(out, "tenax: canceling the calls in flight; their items stay pending")
	cancel()
}

// signalName names a signal as a user knows it.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP, the terminal closed"
	}
	return "a signal"
}

func printSummary(w io.Writer, r *job.Result) {
	s := r.Summary
	var b strings.Builder
	if r.CountsErr != nil {
		// Zeros here would read as "nothing was saved".
		fmt.Fprintf(&b, "Job %s: outcomes unknown, the job's records could not be read (%v)", r.JobID, r.CountsErr)
	} else {
		fmt.Fprintf(&b, "Job %s: %d succeeded, %d failed, %d pending", r.JobID, r.Succeeded, r.Failed, r.Pending)
	}
	if r.InputUnread {
		b.WriteString(" + the rest of the input, not read yet")
	}
	fmt.Fprintf(&b, " (this run: %d done in %s", s.Done, s.Elapsed.Round(time.Millisecond))
	if s.Elapsed > 0 && s.Done > 0 {
		fmt.Fprintf(&b, ", %.1f items/s", float64(s.Done)/s.Elapsed.Seconds())
	}
	fmt.Fprintf(&b, ", %d calls, %d retries", s.Calls, s.Retries)
	if s.HealAttempts > 0 {
		fmt.Fprintf(&b, ", %d re-asks", s.HealAttempts)
	}
	b.WriteString(")\n")
	if t := s.Usage.Total(); t > 0 {
		fmt.Fprintf(&b, "Tokens: %d in, %d out", s.Usage.InputTokens, s.Usage.OutputTokens)
		if s.CostUSD > 0 {
			fmt.Fprintf(&b, " | cost $%.4f", s.CostUSD)
		}
		b.WriteByte('\n')
	}
	for i, rt := range s.Routes {
		sep := "; "
		if i == 0 {
			sep = "Routes: "
		}
		fmt.Fprintf(&b, "%s%s: breaker %s, %d calls, %d succeeded, %d failed", sep, rt.Name, rt.Breaker, rt.Calls, rt.Succeeded, rt.Failed)
		if rt.Faults > 0 || rt.Refused > 0 {
			// Status's words: what this run's breaker counted, which no
			// record shows for a refusal.
			fmt.Fprintf(&b, " (breaker: %d fault(s), %d refused)", rt.Faults, rt.Refused)
		}
		if i == len(s.Routes)-1 {
			b.WriteByte('\n')
		}
	}
	if bt := r.Batch; bt != nil {
		fmt.Fprintf(&b, "Batch mode: %d wave(s), %d batch(es), %d requests submitted", bt.Waves, bt.Batches, bt.Requests)
		if bt.Repolled > 0 {
			fmt.Fprintf(&b, ", %d batch(es) of the last run polled again", bt.Repolled)
		}
		if bt.OnlineCostUSD > 0 {
			fmt.Fprintf(&b, " | batch price $%.4f, online $%.4f, saved $%.4f", bt.CostUSD, bt.OnlineCostUSD, bt.OnlineCostUSD-bt.CostUSD)
		}
		b.WriteByte('\n')
	}
	if s.StopDetail != "" {
		fmt.Fprintf(&b, "Stopped: %s\n", s.StopDetail)
	}
	switch {
	case r.Failed > 0 && r.Dir != "":
		fmt.Fprintf(&b, "Failures: %s/failures.jsonl (tenax status %s shows them grouped)\n", r.Dir, r.JobID)
	case r.Failed > 0:
		fmt.Fprintf(&b, "Failures: tenax export %s --failed (tenax status %s shows them grouped)\n", r.JobID, r.JobID)
	}
	if r.ExportCommand != "" {
		fmt.Fprintf(&b, "Write the results again: %s\n", r.ExportCommand)
	}
	switch {
	case r.ResumeCommand == "":
	case r.Pending > 0 || r.InputUnread:
		fmt.Fprintf(&b, "Resume: %s\n", r.ResumeCommand)
	default:
		fmt.Fprintf(&b, "Retry the failures: %s\n", r.ResumeCommand)
	}
	io.WriteString(w, b.String())
}
