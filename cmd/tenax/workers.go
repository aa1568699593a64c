package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/tracing"
	"github.com/tenaxhq/tenax/web"
	"github.com/tenaxhq/tenax/worker"
)

// postgresURL is the PostgreSQL URL that --store or TENAX_STORE names,
// "" for a directory store.
func (g *globals) postgresURL() string {
	loc, err := g.storeLocation()
	if err != nil {
		return ""
	}
	return loc.PostgresURL
}

// storeArgument is the --store of a command printed for pasting: the
// store these commands use, its password hidden.
func storeArgument(g *globals) string {
	return strings.TrimPrefix(job.LocationFlags("", g.postgresURL()), " ")
}

// openWorkers connects to the --store database for the commands that need
// PostgreSQL, migrating on first use.
func openWorkers(ctx context.Context, g *globals) (*worker.Client, error) {
	if _, err := g.storeLocation(); err != nil {
		return nil, err
	}
	url := g.postgresURL()
	if url == "" {
		return nil, usageErr(errors.New("this command needs a PostgreSQL store: pass --store postgres://… or set TENAX_STORE"))
	}
	// A database that cannot be opened exits 4 (a *store.OpenError,
	// execute's rule for every command).
	return worker.Open(ctx, url)
}

func newWorkerCmd(g *globals) *cobra.Command {
	var f workerFlags
	cmd := &cobra.Command{
		Use:   "worker",
		Short: "Run the items of jobs enqueued in PostgreSQL, beside any number of other workers",
		Long: `A worker is a River client on the --store database. The items of a job enqueued
with 'tenax run SPEC --store postgres://… --workers 0' are River jobs of up to 16
items each; the worker runs tenax's whole per-item logic on each item (retries with
backoff, the heal loop, classification), writes its final record with a claim of
its round, and completes the River job with its last record, so each item gets
exactly one final record per round.

The task is built from the job's spec as stored; secrets (${OPENAI_API_KEY}) come
from this worker's own environment. The circuit breaker, 429 cooldowns, the
rate_limit and the budget of a job are shared by all its workers: budget.max_tokens
and max_cost_usd bound what all of them spend together, and once it is reached every
worker stops the job (aborted, its items pending until 'tenax resume').

A worker killed mid-call has its items rescued by another worker within about
--rescue-after + 35s. The first SIGINT/SIGTERM finishes the calls in flight and
hands waiting items back to the queue; a second cancels the calls in flight.

A lost database connection is tried again with backoff (logged once): the worker
exits (code 4) only when the database stays away past --db-outage-limit.

--metrics ADDR serves Prometheus metrics: this worker's items in flight and finished,
and each job's series labelled job_id (docs/metrics.md); the workers of a job sum to
its totals.`,
		Example: `  tenax worker --store "$TENAX_STORE" --all
  tenax worker --store "$TENAX_STORE" --all --metrics 127.0.0.1:9464
  tenax worker --store postgres://db/tenax --job job_20261123_101500 --concurrency 16`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runWorker(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.jobs, "job", nil, "work on this job: an id, latest, or a job's name (repeatable)")
	fl.BoolVar(&f.all, "all", false, "work on every job enqueued for workers, new ones included")
	fl.IntVar(&f.concurrency, "concurrency", 0, "most items of one job in flight on this worker (0 = the spec's concurrency.max)")
	fl.DurationVar(&f.rescue, "rescue-after", worker.DefaultRescueAfter, "River rescues a dead worker's items this long after its last heartbeat")
	fl.DurationVar(&f.outageLimit, "db-outage-limit", worker.DefaultDBOutageLimit, "exit (code 4) when the database stays unreachable this long; shorter outages are ridden out")
	fl.StringVar(&f.metricsAddr, "metrics", "", "serve Prometheus metrics at ADDR/metrics: this worker's and its jobs' series (not loopback: a bearer token is required, $TENAX_METRICS_TOKEN or a random one, printed)")
	fl.DurationVar(&f.reportEvery, "report-every", 10*time.Second, "print the jobs taken up and the items finished this often, when there is news (0 = never)")
	addStoreFlag(cmd, g)
	return cmd
}

// workerFlags are tenax worker's flags.
type workerFlags struct {
	jobs        []string
	all         bool
	concurrency int
	rescue      time.Duration
	reportEvery time.Duration
	outageLimit time.Duration
	metricsAddr string
}

// runWorker is tenax worker: one worker until a signal stops it.
func runWorker(ctx context.Context, g *globals, f workerFlags) error {
	if err := checkWorkerFlags(f.all, len(f.jobs), f.concurrency, f.reportEvery, f.outageLimit); err != nil {
		return usageErr(err)
	}
	log, err := g.loggerOn(g.stderr)
	if err != nil {
		return err
	}
	c, err := openWorkers(ctx, g)
	if err != nil {
		return err
	}
	defer c.Close()
	// "latest" and a job's name, as status and resume take them;
	// a mistyped id is a usage error before the worker starts.
	for i, ref := range f.jobs {
		if f.jobs[i], err = job.ResolveID(ctx, c.Store(), ref); err != nil {
			return err
		}
	}
	tr, stopTracing := g.startTracing(ctx)
	defer stopTracing()
	cfg := worker.Config{
		Jobs: f.jobs, Concurrency: f.concurrency, RescueAfter: f.rescue, DBOutageLimit: f.outageLimit,
		Options: job.Options{Home: g.homeDir(), Version: version, Logger: log}, Tracer: tr,
	}
	reg, err := workerMetrics(&cfg, f.metricsAddr)
	if err != nil {
		return err
	}
	w, err := c.NewWorker(cfg)
	if err != nil {
		return usageErr(err)
	}
	fmt.Fprintf(g.stderr, "tenax: worker %s on schema %s\n", w.ID(), c.Schema())
	if reg != nil {
		ep, err := serveWorkerMetrics(g.stderr, reg, w, f.metricsAddr)
		if err != nil {
			return err
		}
		defer ep.Close()
	}
	stop := w.Report(g.stderr, f.reportEvery)
	err = runWorkers(ctx, g, []*worker.Worker{w})
	stop()
	return err
}

// workerMetrics readies --metrics: a registry whose jobs' series cfg's
// worker feeds (Config.OnJob); nil without --metrics.
func workerMetrics(cfg *worker.Config, addr string) (*prometheus.Registry, error) {
	if addr == "" {
		return nil, nil
	}
	reg, err := serviceRegistry()
	if err != nil {
		return nil, err
	}
	cfg.OnJob = metrics.ObserveJobs(metrics.NewJobs(reg))
	return reg, nil
}

// serveWorkerMetrics adds worker w's own series to reg and serves it on
// addr, saying where on out.
func serveWorkerMetrics(out io.Writer, reg *prometheus.Registry, w *worker.Worker, addr string) (*web.Endpoint, error) {
	if err := metrics.RegisterWorker(reg, w); err != nil {
		return nil, err
	}
	return listenMetrics(out, addr, reg)
}

// checkWorkerFlags refuses the flags of tenax worker that cannot work.
func checkWorkerFlags(all bool, jobs, concurrency int, reportEvery, outageLimit time.Duration) error {
	switch {
	case all == (jobs > 0):
		return errors.New("say which jobs to work on: --job ID (repeatable) or --all")
	case reportEvery < 0:
		return fmt.Errorf("--report-every %s: want 0 (no reports) or more", reportEvery)
	case concurrency < 0:
		return fmt.Errorf("--concurrency %d: want 0 (the spec's concurrency.max) or more", concurrency)
	case outageLimit <= 0:
		return fmt.Errorf("--db-outage-limit %s: want a positive duration, e.g. 5m", outageLimit)
	}
	return nil
}

// runWorkers runs workers until the context ends or a signal comes: the
// first signal stops them gracefully, the second cancels calls in flight.
func runWorkers(ctx context.Context, g *globals, ws []*worker.Worker) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if g.interrupts != nil {
		go func() {
			select {
			case <-ctx.Done():
				return
			case <-g.interrupts:
			}
			fmt.Fprintln(g.stderr, "\ntenax: stopping: finishing the calls in flight (again to cancel them)")
			cancel()
			select {
			case <-g.interrupts:
				for _, w := range ws {
					w.StopNow()
				}
			case <-time.After(time.Hour):
			}
		}()
	}
	first := worker.RunAll(ctx, ws)
	var ue *job.UsageError
	if errors.As(first, &ue) {
		return usageErr(first)
	}
	if errors.Is(first, worker.ErrNotQueued) {
		// A --job that one process ran: nothing for workers to do.
		return usageErr(first)
	}
	if first != nil {
		return &exitError{code: exitcode.Storage, err: first}
	}
	return nil
}

func newBreakerCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "breaker continue|abort JOB|latest|NAME",
		Short: "Answer the open circuit breaker of a job run by workers",
		Long: `When a job run by workers trips its circuit breaker, every worker stops taking its
items. With breaker.on_trip: prompt the workers wait for this answer: continue resets
the breaker and lets them go on; abort stops the job on every worker (its items stay
pending: 'tenax resume JOB' runs them later). The first answer to a trip wins, from here
or from the terminal of an attached 'tenax run': a later one is refused, saying which
answer came first and from where.`,
		Example: `  tenax breaker continue job_20261123_101500 --store "$TENAX_STORE"
  tenax breaker abort job_20261123_101500`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			d := worker.Decision(args[0])
			if d != worker.Continue && d != worker.Abort {
				return usageErr(fmt.Errorf("%q: want continue or abort", args[0]))
			}
			c, err := openWorkers(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer c.Close()
			id, err := job.ResolveID(cmd.Context(), c.Store(), args[1])
			if err != nil {
				return err
			}
			if err := c.Decide(cmd.Context(), id, d, worker.OperatorName("tenax breaker")); err != nil {
				var ae *worker.AnsweredError
				if errors.Is(err, worker.ErrBreakerClosed) || errors.As(err, &ae) {
					return usageErr(err)
				}
				return err
			}
			fmt.Fprintf(g.stdout, "tenax: job %s: %s\n", id, d)
			return nil
		},
	}
	addStoreFlag(cmd, g)
	return cmd
}

// refuseOnWorkers refuses the flags of run and resume that a job run on
// workers does not honour, saying what to do instead: a flag ignored
// would spend calls the operator did not ask for (a --limit 10 that ran
// every item) or promise what never comes (a --ui page).
func refuseOnWorkers(cmd *cobra.Command, f runFlags) error {
	resume := cmd.Name() == "resume"
	refused := []struct {
		flag string
		when bool
		why  string
	}{
		{"ui", true, "the live page watches one process's engine; follow a job on workers with tenax status JOB --store …"},
		{"metrics", true, "/metrics serves one process's engine; follow a job on workers with tenax status JOB --store …"},
		{"batch", true, "batch mode sends the items through the provider's batch API from one process: run it without --workers"},
		{"limit", resume, "a resume on workers runs all of the job's items still to run"},
		{"fingerprint", resume, "a resume on workers re-runs every failed item: --retry-failures without =CLASS"},
		{"route", resume, "a resume on workers re-runs every failed item: --retry-failures without =CLASS"},
		{"retry-failures", resume && len(f.classes) > 0, "a resume on workers re-runs every failed item: --retry-failures without =CLASS"},
		{"output", f.workers == 0, "with --workers 0 nothing runs here: when the workers are done, tenax export JOB --store … -o FILE"},
	}
	for _, r := range refused {
		if r.when && cmd.Flags().Changed(r.flag) {
			return usageErr(fmt.Errorf("--%s does not work with --workers: %s", r.flag, r.why))
		}
	}
	return nil
}

// runOnWorkers is `tenax run SPEC --store postgres://…`: create the job,
// enqueue its items, then work in-process with n workers (0: only
// enqueue) and show progress until the job ends.
func runOnWorkers(ctx context.Context, g *globals, specPath string, f runFlags, n int) error {
	log, err := g.loggerOn(g.stderr)
	if err != nil {
		return err
	}
	// Until the items are enqueued a signal stops the connection, the
	// check of the input and the enqueue (each of its batches a
	// transaction: the job holds whole ones, and a resume enqueues the
	// rest); the workers then handle signals themselves (runWorkers).
	cctx, created := g.cancelOnInterrupt(ctx, stoppingEnqueue)
	c, cr, err := createOnWorkers(cctx, g, specPath, f, log)
	interrupted := cctx.Err() != nil
	created()
	if c != nil {
		defer c.Close()
	}
	if interrupted {
		if cr != nil {
			// The signal came as the job was written: it has no item
			// enqueued, and says so in tenax status.
			fmt.Fprintf(g.stderr, "tenax: job %s was created; none of its items was enqueued\n", cr.Job.Manifest().ID)
			cr.Job.Close()
		}
		return &exitError{code: exitcode.Interrupted}
	}
	if err != nil {
		return err
	}
	id := cr.Job.Manifest().ID
	// The job span covers the enqueue and, with in-process workers, the
	// run; the workers' item spans hang under it (River job metadata).
	tr, stopTracing := g.startTracing(ctx)
	defer stopTracing()
	ctx, trace := tr.StartJob(ctx, traceJob(id, cr.Spec, nil))
	qctx, queued := g.cancelOnInterrupt(ctx, stoppingEnqueue)
	e, err := c.Enqueue(qctx, cr)
	interrupted = qctx.Err() != nil
	queued()
	cr.Job.Close()
	if interrupted {
		trace.End(nil, context.Canceled)
		fmt.Fprintf(g.stderr, "tenax: job %s: enqueue interrupted; tenax resume %s %s --workers 0 enqueues the rest\n", id, id, storeArgument(g))
		return &exitError{code: exitcode.Interrupted}
	}
	if err != nil {
		trace.End(nil, err)
		return &exitError{code: exitcode.Storage, err: err}
	}
	fmt.Fprintf(g.stderr, "tenax: job %s (queue %s, schema %s): %d items enqueued in %s\n", e.JobID, e.Queue, c.Schema(), e.Items, e.Elapsed.Round(time.Millisecond))
	if n == 0 {
		trace.End(nil, nil)
		fmt.Fprintf(g.stdout, "Job %s enqueued. Run it with: tenax worker %s --job %s\n", e.JobID, storeArgument(g), e.JobID)
		return nil
	}
	err = attach(ctx, g, c, e.JobID, n, f.output, log, tr)
	trace.End(nil, err)
	return err
}

// createOnWorkers connects to the --store database and creates the job
// from the spec at specPath; the client is returned open even when the
// job could not be created.
func createOnWorkers(ctx context.Context, g *globals, specPath string, f runFlags, log *slog.Logger) (*worker.Client, *job.Created, error) {
	c, err := openWorkers(ctx, g)
	if err != nil {
		return nil, nil, err
	}
	opts := job.Options{Home: g.homeDir(), Version: version, Input: f.input, Limit: f.limit, AllowEmpty: f.allowEmpty, Logger: log}
	cr, err := job.Create(ctx, specPath, c.Store(), opts)
	if err != nil {
		return c, nil, err
	}
	return c, cr, nil
}

// interruptedOr is err, or the exit of an interrupted command when a
// signal canceled ctx.
func interruptedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return &exitError{code: exitcode.Interrupted}
	}
	return err
}

// stoppingEnqueue is what a signal during an enqueue says.
const stoppingEnqueue = "\ntenax: interrupted: stopping the enqueue"

// resumeOnWorkers is `tenax resume JOB --store postgres://…`.
func resumeOnWorkers(ctx context.Context, g *globals, id string, f runFlags, n int) error {
	log, err := g.loggerOn(g.stderr)
	if err != nil {
		return err
	}
	// As in runOnWorkers: until the items are enqueued a signal stops
	// the connection and the enqueue; then the workers handle signals.
	qctx, queued := g.cancelOnInterrupt(ctx, stoppingEnqueue)
	defer queued()
	c, err := openWorkers(qctx, g)
	if err != nil {
		return interruptedOr(qctx, err)
	}
	defer c.Close()
	if id, err = job.ResolveID(qctx, c.Store(), id); err != nil {
		return interruptedOr(qctx, err)
	}
	tr, stopTracing := g.startTracing(ctx)
	defer stopTracing()
	ctx, trace := tr.StartJob(ctx, traceJob(id, nil, nil))
	// The trace's context, canceled with qctx.
	rctx, stopRequeue := context.WithCancel(ctx)
	defer stopRequeue()
	context.AfterFunc(qctx, stopRequeue)
	e, err := c.Requeue(rctx, id, worker.RequeueOptions{RetryFailures: f.retryFailures, Force: f.force})
	interrupted := qctx.Err() != nil
	queued()
	if interrupted {
		trace.End(nil, context.Canceled)
		fmt.Fprintf(g.stderr, "tenax: job %s: enqueue interrupted; tenax resume %s %s --workers 0 enqueues the rest\n", id, id, storeArgument(g))
		return &exitError{code: exitcode.Interrupted}
	}
	if err != nil {
		trace.End(nil, err)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, worker.ErrNotQueued) {
			return usageErr(err)
		}
		return err
	}
	fmt.Fprintf(g.stderr, "tenax: job %s: %d items enqueued again (round %d)\n", id, e.Items, e.Round)
	if n == 0 {
		trace.End(nil, nil)
		return nil
	}
	err = attach(ctx, g, c, id, n, f.output, log, tr)
	trace.End(nil, err)
	return err
}

// attach works on a job with n in-process workers and prints progress
// until it ends, then writes output (when set) and the summary.
func attach(ctx context.Context, g *globals, c *worker.Client, id string, n int, output string, log *slog.Logger, tr *tracing.Tracer) error {
	var ws []*worker.Worker
	for range n {
		w, err := c.NewWorker(worker.Config{Jobs: []string{id}, Options: job.Options{Home: g.homeDir(), Version: version, Logger: log}, Tracer: tr})
		if err != nil {
			return usageErr(err)
		}
		ws = append(ws, w)
	}
	// On a terminal, a trip with on_trip prompt, or unset, is asked here
	// as in one process (the terminal marks the job attended, so that an
	// unset on_trip asks instead of aborting); the answer goes to every
	// worker through the database.
	at := worker.Attached{
		Workers: ws,
		Run:     func(ctx context.Context, ws []*worker.Worker) error { return runWorkers(ctx, g, ws) },
		Warn: func(err error) {
			log.Warn("answering the breaker from this terminal failed; use tenax breaker continue|abort", "job", id, "error", err)
		},
	}
	// The terminal's prompter of a run on one machine: the job's trips
	// and check-ins are asked in the same words.
	var op *console.Prompter
	if g.interactive() {
		op = console.NewPrompter(g.stdin, g.stderr)
		at.Operator, at.By = op, worker.OperatorName("the terminal of tenax run")
	}
	if !g.quiet {
		at.Progress = func(p worker.Progress) {
			if op == nil || !op.Asking() {
				fmt.Fprintf(g.stderr, "tenax: %s: %d finished, %d waiting, %d running, %d retrying%s\n", id, p.Finished, p.Waiting, p.Running, p.Retrying, breakerNote(p))
			}
		}
	}
	elapsed, runErr := c.Attach(ctx, id, at)
	if output != "" {
		if err := writeWorkerOutput(context.WithoutCancel(ctx), c, id, output); err != nil && runErr == nil {
			runErr = err
		}
	}
	return printWorkerSummary(context.WithoutCancel(ctx), g, c, id, elapsed, runErr)
}

// writeWorkerOutput writes --output from the job's records, as a run on
// one machine does when it ends.
func writeWorkerOutput(ctx context.Context, c *worker.Client, id, path string) error {
	j, err := c.Store().OpenReadOnly(ctx, id)
	if err != nil {
		return err
	}
	defer j.Close()
	if err := store.WriteOutput(ctx, j, path, job.OutputFormat(path), nil); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func breakerNote(p worker.Progress) string {
	if !p.Breaker.Open {
		return ""
	}
	return fmt.Sprintf(" | breaker open (%s, on_trip %s) on %s: tenax breaker continue|abort", p.Breaker.Reason, p.Breaker.Action, p.Breaker.Owner)
}

// printWorkerSummary prints the job's counts and returns the exit code.
func printWorkerSummary(ctx context.Context, g *globals, c *worker.Client, id string, elapsed time.Duration, runErr error) error {
	j, err := c.Store().OpenReadOnly(ctx, id)
	if err != nil {
		return err
	}
	defer j.Close()
	m := j.Manifest()
	o, err := j.Outcomes(ctx)
	if err != nil {
		return err
	}
	ok, failed, pending := o.Count(m.Items)
	fmt.Fprintf(g.stdout, "Job %s: %d succeeded, %d failed, %d pending (%s, state %s)\n", id, ok, failed, pending, elapsed.Round(time.Millisecond), m.State)
	if m.StopReason != "" {
		fmt.Fprintf(g.stdout, "Stopped: %s\n", m.StopReason)
	}
	if pending > 0 {
		fmt.Fprintf(g.stdout, "Resume: tenax resume %s %s\n", id, storeArgument(g))
	} else if failed > 0 {
		fmt.Fprintf(g.stdout, "Retry the failures: tenax resume %s %s --retry-failures\n", id, storeArgument(g))
	}
	switch {
	case runErr != nil:
		return &exitError{code: exitcode.Storage, err: runErr}
	case m.State == store.StateAborted:
		return &exitError{code: exitcode.Aborted}
	case pending > 0:
		return &exitError{code: exitcode.Interrupted}
	case failed > 0:
		return &exitError{code: exitcode.Failures}
	}
	return nil
}

// printWorkers writes the workers table of `tenax status`.
func printWorkers(ctx context.Context, w io.Writer, c *worker.Client) error {
	list, err := c.Workers(ctx)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(w, "Workers: none has run on this database")
		return nil
	}
	fmt.Fprintln(w, "Workers:")
	now := time.Now()
	for _, i := range list {
		state := fmt.Sprintf("heartbeat %s ago", now.Sub(i.Heartbeat).Round(time.Second))
		switch {
		case i.Stopped != nil:
			state = "stopped " + i.Stopped.Format(time.RFC3339)
		case i.Lost:
			state = "lost: its items go back to the queue, " + state
		}
		fmt.Fprintf(w, "  %-36s %s pid %d | %s | jobs %s | %d in flight, %d finished\n", i.ID, i.Host, i.PID, state, strings.Join(i.Jobs, ","), i.InFlight, i.Finished)
	}
	return nil
}

// addWorkersFlag gives run and resume --workers.
func addWorkersFlag(cmd *cobra.Command, f *runFlags) {
	cmd.Flags().IntVar(&f.workers, "workers", 1, "run on River with a PostgreSQL --store: enqueue the items, then work on them with `N` workers in this process (0 = only enqueue, for tenax worker on other machines); on a terminal a breaker trip on any worker, and the check-ins, are asked here")
}

// queueProgress opens the workers' client and reads job id's River queue,
// for both forms of `tenax status`. It returns a nil client, and no
// error, when there is nothing to show: no PostgreSQL store, or a job run
// by one process (no queue, and no worker). A non-nil client is the
// caller's to close.
func queueProgress(ctx context.Context, g *globals, id string) (*worker.Client, worker.Progress, error) {
	var none worker.Progress
	if g.postgresURL() == "" {
		return nil, none, nil
	}
	c, err := openWorkers(ctx, g)
	if err != nil {
		return nil, none, err
	}
	p, err := c.Progress(ctx, id)
	if err != nil {
		c.Close()
		if errors.Is(err, worker.ErrNotQueued) {
			err = nil
		}
		return nil, none, err
	}
	return c, p, nil
}

// workersStatus adds to `tenax status` on a PostgreSQL store the job's
// River queue and shared breaker, when workers run it, and the workers
// with their last heartbeat.
func workersStatus(ctx context.Context, g *globals, id string) error {
	c, p, err := queueProgress(ctx, g, id)
	if c == nil || err != nil {
		return err
	}
	defer c.Close()
	fmt.Fprintf(g.stdout, "Queue:     %d finished, %d waiting, %d running, %d retrying, %d discarded by River (resume --workers enqueues them again)%s\n",
		p.Finished, p.Waiting, p.Running, p.Retrying, p.Discarded, breakerNote(p))
	if ci := p.CheckIns; ci != nil {
		if ci.Due {
			fmt.Fprintf(g.stdout, "Check-in:  due (every %d items): the queue is paused until the attending terminal answers\n", ci.Every)
		} else {
			fmt.Fprintf(g.stdout, "Check-ins: every %d items, held by the attending terminal: %d of %d toward the next\n", ci.Every, ci.Done, ci.Next)
		}
	}
	if b := p.Budget; b != nil {
		fmt.Fprintf(g.stdout, "Budget:    %d tokens, $%.4f spent by the job's workers since it was created or resumed, %d tokens held by calls under way\n", b.Tokens, b.CostUSD, b.Held)
	}
	return printWorkers(ctx, g.stdout, c)
}

// workersJSON adds to `tenax status --json` on a PostgreSQL store what
// the text's Queue line and Workers table show (workersStatus): the job's
// River queue, its shared breaker, check-ins and budget, and the workers.
func workersJSON(ctx context.Context, g *globals, id string, s *report.StatusJSON) error {
	c, p, err := queueProgress(ctx, g, id)
	if c == nil || err != nil {
		return err
	}
	defer c.Close()
	b := p.Breaker
	q := &report.QueueJSON{Finished: p.Finished, Waiting: p.Waiting, Running: p.Running, Retrying: p.Retrying, Discarded: p.Discarded, Paused: p.Paused,
		Breaker: report.SharedBreakerJSON{Open: b.Open, Action: b.Action, Reason: b.Reason, Owner: b.Owner, Trips: b.Trips, Decision: b.Decision, DecidedBy: b.DecidedBy}}
	if ci := p.CheckIns; ci != nil {
		q.Checkin = &report.CheckinJSON{Every: ci.Every, Done: ci.Done, Next: ci.Next, Due: ci.Due}
	}
	if sp := p.Budget; sp != nil {
		q.Budget = &report.SharedBudgetJSON{Tokens: sp.Tokens, CostUSD: sp.CostUSD, Held: sp.Held, Reached: sp.Reached}
	}
	s.Queue = q
	if h := p.Hold; h != nil && s.Job.Paused == nil && s.Job.State == string(store.StateRunning) {
		s.Job.Paused = &report.PauseJSON{By: h.By, Since: h.Since}
	}
	list, err := c.Workers(ctx)
	if err != nil {
		return err
	}
	s.Workers = []report.WorkerJSON{}
	for _, i := range list {
		state := "running"
		switch {
		case i.Stopped != nil:
			state = "stopped"
		case i.Lost:
			state = "lost"
		}
		s.Workers = append(s.Workers, report.WorkerJSON{ID: i.ID, Host: i.Host, PID: i.PID, Jobs: i.Jobs, State: state,
			Heartbeat: i.Heartbeat, Stopped: i.Stopped, InFlight: i.InFlight, Finished: i.Finished})
	}
	return nil
}
