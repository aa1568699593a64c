package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/web"
	"github.com/tenaxhq/tenax/worker"
)

// uiLong is tenax ui's help.
const uiLong = `Serve a web page that watches jobs through their store: counts by outcome, error
groups by fingerprint with sample items and hints, recent items and each item's latest
record, refreshed live as the records are written, by this machine or any other;
charts of the rate, items in flight, latency, failures, tokens and cost over time;
and every item, filtered by outcome, class or fingerprint and searched. A job
that has stopped can re-run an error group or the failures shown (as
tenax resume --fingerprint / --retry-failures does), after a confirmation.

The rate, in flight, cooldowns, item timelines and the breaker's Continue / Abort
buttons of a run in one process come from that process: start it with --ui for
those. With a PostgreSQL store, the page of a job run by workers shows its River
queue, its shared breaker and budget and the workers running it, and answers the
breaker as tenax breaker does (the first answer wins).

Fix runs (tenax fix) under the home are listed beside the jobs, each with its
errors by status, the attempts with their patches and check output, and the
levers: skip an error, put one first, add context for the next attempts.

/metrics serves the counts of the running jobs (or of JOB) by outcome and, with
workers, their queues and the workers (docs/metrics.md).

Loopback by default; --addr with another address requires a token, printed in the URL.
$TENAX_UI_TOKEN sets the operator's token (answers, re-runs, pause, stop) and
$TENAX_UI_VIEW_TOKEN a read-only one for the rest of the team: every page and
chart, no action (docs/web.md).`

func newUICmd(g *globals) *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "ui [JOB|latest|NAME|FIX_RUN]",
		Short: "Serve a web page of the jobs (or of one job) as their store records them",
		Long:  uiLong,
		Example: `  tenax ui                          # every job under ./.tenax
  tenax ui job_20261122_101500      # one job
  tenax ui fix_20261122_101500      # one fix run
  tenax ui --addr 0.0.0.0:8080      # reachable from elsewhere, with a token`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, closeStore, err := g.openStore(cmd.Context())
			if err != nil {
				return err
			}
			defer closeStore()
			cfg := web.Config{Store: st, FixHome: g.homeDir()}
			resumes, err := newPageResumes(cmd.Context(), g, st)
			if err != nil {
				return err
			}
			// After the page stops serving: a re-run under way ends
			// as a resume's second Ctrl-C ends it, recorded.
			defer resumes.stop()
			cfg.Resume = resumes.resume
			if g.postgresURL() != "" {
				// Jobs run by workers show their queue, workers and
				// shared breaker, which the page can answer.
				c, err := openWorkers(cmd.Context(), g)
				if err != nil {
					return err
				}
				defer c.Close()
				cfg.Workers, cfg.Operator = c, worker.OperatorName("tenax ui")
			}
			if len(args) == 1 && fix.IsID(args[0]) {
				cfg.Fix = args[0]
			} else if len(args) == 1 {
				// "latest" and a job's name, as status takes them.
				id, err := job.ResolveID(cmd.Context(), st, args[0])
				if err != nil {
					return err
				}
				cfg.Job = id
			}
			reg, err := serviceRegistry()
			if err != nil {
				return err
			}
			reg.MustRegister(&metrics.Stored{Store: st, Job: cfg.Job, Workers: cfg.Workers})
			cfg.Metrics = reg
			uiTokens(&cfg)
			ep, err := web.Listen(addr, cfg)
			if err != nil {
				return usageErr(err)
			}
			defer ep.Close()
			sayPage(g.stderr, "serving", ep, cfg, " (Ctrl-C stops)")
			select {
			case <-cmd.Context().Done():
			case <-g.interrupts:
			}
			return nil
		},
	}
	addStoreFlag(cmd, g)
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:0", "where to listen; not loopback requires a token (printed in the URL)")
	return cmd
}

// pageResumes are the page's "retry this group / these failures": tenax
// resume's job.Resume, run in tenax ui's process until they end or it
// stops.
type pageResumes struct {
	ctx    context.Context
	cancel context.CancelFunc
	runs   sync.WaitGroup
	g      *globals
	st     store.Store
	log    *slog.Logger
}

func newPageResumes(ctx context.Context, g *globals, st store.Store) (*pageResumes, error) {
	log, err := g.loggerOn(g.stderr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	return &pageResumes{ctx: ctx, cancel: cancel, g: g, st: st, log: log}, nil
}

// resume is a web.Resumer.
func (p *pageResumes) resume(_ context.Context, id string, r web.Retry) (string, error) {
	p.runs.Add(1)
	defer p.runs.Done()
	fmt.Fprintf(p.g.stderr, "tenax: the page re-runs: %s\n", r.Command(id))
	res, err := job.Resume(p.ctx, id, job.Options{Home: p.g.homeDir(), Store: p.st, StoreFlag: p.g.storeURL, Version: version,
		RetryFailures: true, RetryClasses: r.Classes, RetryFingerprints: r.Fingerprints, RetryRoutes: r.Routes, Logger: p.log})
	if res == nil {
		return "", err
	}
	return fmt.Sprintf("%d succeeded, %d failed, %d pending", res.Succeeded, res.Failed, res.Pending), err
}

// stop cancels the re-runs under way (their calls; their items stay
// pending) and waits for them to record how they ended.
func (p *pageResumes) stop() {
	p.cancel()
	p.runs.Wait()
}
