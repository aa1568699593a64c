package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// controlFlags are the flags of tenax pause, continue and stop.
type controlFlags struct {
	by   string
	wait time.Duration
}

// controlHelp is what each of pause, continue and stop says of itself.
var controlHelp = map[job.ControlAction]struct{ short, long, example string }{
	job.ControlPause: {
		short: "Pause a running job from another terminal: nothing new starts, calls in flight finish",
		long: `Pause holds a running job's dispatch: no new call starts, the calls in flight
finish and are recorded, and the run waits, paused, however long it takes, until
'tenax continue JOB'. Nothing is lost or failed by a pause; 'tenax status' shows who
paused the job and since when, and /metrics has tenax_paused 1.

A job run by one process (tenax run, with its records in a job directory or in
PostgreSQL without workers) hears it through the job's control log in its store
(control.jsonl in the job directory, tenax_notes rows in PostgreSQL) within half a
second; pause waits until the run confirms (at most --wait). A job on River workers
(a postgres:// --store) is paused in the database: its queue stops handing out items
and every worker holds its calls at once.

Every pause is audited: the run's log (or each worker's) says "paused by WHO",
and the control log keeps who asked and when. --by names you (default: your OS
user).

Exit codes: 0 paused; 2 no such job, the job is not running, already paused (by
whom is said) or stopping; 4 the control log or the database could not be
written.`,
		example: `  tenax pause latest
  tenax pause job_20261123_101500 --by alice
  tenax pause translate-hsk --store "$TENAX_STORE"`,
	},
	job.ControlContinue: {
		short: "Let a job paused by tenax pause (or the page's Pause) go on",
		long: `Continue ends an operator's pause: dispatch goes on where it left off. On workers
the job's queue resumes, unless its circuit breaker or a check-in still holds it
(their own answer lets it go on). It does not answer a tripped breaker (that is
'tenax breaker continue') and does not restart a stopped job (that is 'tenax resume').

Audited as pause is: "continued by WHO" in the run's log; --by names you (default:
your OS user).

Exit codes: 0 the job goes on; 2 no such job, the job is not running or not
paused; 4 the control log or the database could not be written.`,
		example: `  tenax continue latest
  tenax continue job_20261123_101500 --by alice`,
	},
	job.ControlStop: {
		short: "Stop a running job gracefully: calls in flight finish and are recorded, the job stays resumable",
		long: `Stop stops a running job as an operator's abort: no new call starts, the calls in
flight finish and their records are written, the job is saved with state aborted
and its reason ("stopped by WHO at TIME"), and the run exits 3. The items left are
pending: 'tenax resume JOB' runs them later, without --retry-failures. A paused job
can be stopped.

For a job run by one process, stop waits (at most --wait) until the run has
drained and ended, then prints its state. On workers, every worker stops the job
within a moment and hands its waiting items back to the queue; stop waits until
no item of the job is running.

Exit codes: 0 stopped (or stopping, when --wait ran out first: said on stderr); 2
no such job or the job is not running; 4 the control log or the database could
not be written.`,
		example: `  tenax stop latest
  tenax stop job_20261123_101500 --by alice --wait 5m
  tenax stop translate-hsk --store "$TENAX_STORE"`,
	},
}

// newControlCmds are tenax pause, continue and stop.
func newControlCmds(g *globals) []*cobra.Command {
	var cmds []*cobra.Command
	for _, action := range []job.ControlAction{job.ControlPause, job.ControlContinue, job.ControlStop} {
		h := controlHelp[action]
		var f controlFlags
		cmd := &cobra.Command{
			Use:     string(action) + " JOB|latest|NAME",
			Short:   h.short,
			Long:    h.long,
			Example: h.example,
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if f.wait < 0 {
					return usageErr(fmt.Errorf("--wait %s: want 0 (do not wait) or more", f.wait))
				}
				f.by = cmp.Or(f.by, osUser())
				if g.postgresURL() != "" {
					return controlOnWorkers(cmd.Context(), g, action, args[0], f)
				}
				return controlLocal(cmd.Context(), g, action, args[0], f)
			},
		}
		cmd.Flags().StringVar(&f.by, "by", "", "who asks, for the audit in the run's log (default: your OS user)")
		wait := 30 * time.Second
		if action == job.ControlStop {
			wait = 10 * time.Minute
		}
		cmd.Flags().DurationVar(&f.wait, "wait", wait, "how long to wait for the run to confirm (stop: to drain and end); 0 does not wait")
		addStoreFlag(cmd, g)
		cmds = append(cmds, cmd)
	}
	return cmds
}

// osUser names the operator by default: the OS user, as the login
// environment names it (os/user would link cgo's or its own passwd
// lookup for one name).
func osUser() string {
	return cmp.Or(os.Getenv("USER"), os.Getenv("LOGNAME"), os.Getenv("USERNAME"), "an operator")
}

// controlPoll is how often pause, continue and stop look whether the run
// did what they asked.
const controlPoll = 100 * time.Millisecond

// controlLocal asks the run that holds a job of a store without workers
// (JSONL, one process), through the job's control log, and waits for its
// confirmation.
func controlLocal(ctx context.Context, g *globals, action job.ControlAction, ref string, f controlFlags) error {
	st, closeStore, err := g.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore()
	id, err := job.ResolveID(ctx, st, ref)
	if err != nil {
		return err
	}
	return controlStored(ctx, g, st, action, id, f)
}

// controlStored asks the run of job id that one process runs (a JSONL
// store's, or a PostgreSQL store's without workers) through the job's
// control log in st (store.RequestControl, the page's way too), and waits
// for the run to confirm: its manifest says the pause, or no pause, or
// the job ended.
func controlStored(ctx context.Context, g *globals, st store.Store, action job.ControlAction, id string, f controlFlags) error {
	read := func() (store.Manifest, error) {
		j, err := st.OpenReadOnly(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return store.Manifest{}, usageErr(fmt.Errorf("no job %s in %s (see `tenax status --all`)", id, job.DescribeStore(st)))
		}
		if err != nil {
			return store.Manifest{}, err
		}
		defer j.Close()
		return j.Manifest(), nil
	}
	// running: the manifest says so and, in a JSONL store, a process
	// holds the job (a killed run's job is stale).
	running := func(m store.Manifest) bool {
		state, _ := report.CurrentState(ctx, st, m, "")
		return state == store.StateRunning
	}
	m, err := read()
	if err != nil {
		return err
	}
	if _, ok := st.(store.Controls); !ok {
		return usageErr(fmt.Errorf("job %s: %s carries no control requests", id, job.DescribeStore(st)))
	}
	if err := refuseControl(action, id, m, running(m)); err != nil {
		return err
	}
	req, err := store.RequestControl(ctx, st, id, job.ControlRequest{Action: action, By: f.by})
	if err != nil {
		return &exitError{code: exitcode.Storage, err: err}
	}
	done := func() bool {
		m, err := read()
		switch {
		case err != nil:
			return false
		case !running(m):
			return true
		case action == job.ControlStop:
			return false
		}
		return (m.Paused != nil) == (action == job.ControlPause)
	}
	confirmed := waitUntil(ctx, f.wait, done)
	m, err = read()
	if err != nil {
		return err
	}
	return reportControl(g, action, id, m, req, confirmed, f.wait)
}

// refuseControl refuses an action that cannot apply to the job now, as a
// usage error that says why and what to do instead.
func refuseControl(action job.ControlAction, id string, m store.Manifest, running bool) error {
	if !running || m.State != store.StateRunning {
		state := m.State
		if m.State == store.StateRunning {
			state = store.StateStale
		}
		return usageErr(fmt.Errorf("job %s is not running (state %s): nothing to %s; `tenax resume %s` restarts a stopped job", id, state, action, id))
	}
	switch {
	case action == job.ControlPause && m.Paused != nil:
		return usageErr(fmt.Errorf("job %s is already paused, by %s since %s: `tenax continue %s` lets it go on", id, m.Paused.By, m.Paused.Since.Local().Format(time.RFC3339), id))
	case action == job.ControlContinue && m.Paused == nil:
		return usageErr(fmt.Errorf("job %s is not paused: nothing to continue (a tripped breaker is answered with `tenax breaker continue`)", id))
	}
	return nil
}

// waitUntil polls cond every controlPoll until it holds, ctx ends or
// within has passed, and reports whether it held.
func waitUntil(ctx context.Context, within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if within == 0 || time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(controlPoll):
		}
	}
}

// reportControl says what came of a request made by the control log.
func reportControl(g *globals, action job.ControlAction, id string, m store.Manifest, req job.ControlRequest, confirmed bool, wait time.Duration) error {
	if !confirmed {
		what := map[job.ControlAction]string{job.ControlPause: "confirmed the pause", job.ControlContinue: "confirmed it goes on", job.ControlStop: "ended"}[action]
		fmt.Fprintf(g.stderr, "tenax: job %s: asked to %s (by %s); the run has not %s within --wait %s: it heeds the request when it next reads its control requests (a run that was killed never will: see `tenax status`)\n", id, action, req.By, what, wait)
		return nil
	}
	switch action {
	case job.ControlPause:
		if m.Paused == nil {
			return usageErr(fmt.Errorf("job %s ended before it paused (state %s): nothing to pause", id, m.State))
		}
		fmt.Fprintf(g.stdout, "tenax: job %s paused by %s at %s: calls in flight finish and are recorded; `tenax continue %s%s` goes on\n", id, m.Paused.By, m.Paused.Since.Local().Format(time.RFC3339), id, job.LocationFlags("", g.postgresURL()))
	case job.ControlContinue:
		fmt.Fprintf(g.stdout, "tenax: job %s goes on (continued by %s)\n", id, req.By)
	default:
		fmt.Fprintf(g.stdout, "tenax: job %s stopped (state %s): %s\n", id, m.State, cmp.Or(m.StopReason, "ended"))
		if m.State == store.StateAborted {
			fmt.Fprintf(g.stdout, "Resume: tenax resume %s%s\n", id, job.LocationFlags("", g.postgresURL()))
		}
	}
	return nil
}

// controlOnWorkers pauses, continues or stops a job run by workers, in the
// database every worker follows.
func controlOnWorkers(ctx context.Context, g *globals, action job.ControlAction, ref string, f controlFlags) error {
	c, err := openWorkers(ctx, g)
	if err != nil {
		return err
	}
	defer c.Close()
	id, err := job.ResolveID(ctx, c.Store(), ref)
	if err != nil {
		return err
	}
	if _, err := c.Progress(ctx, id); errors.Is(err, worker.ErrNotQueued) {
		// One process runs it (tenax run --store postgres://… without
		// workers): its control log is in the database.
		return controlStored(ctx, g, c.Store(), action, id, f)
	}
	j, err := c.Store().OpenReadOnly(ctx, id)
	if err != nil {
		return err
	}
	m := j.Manifest()
	j.Close()
	if err := refuseControl(action, id, m, true); err != nil {
		return err
	}
	switch action {
	case job.ControlPause:
		err = c.Pause(ctx, id, f.by)
	case job.ControlContinue:
		err = c.Continue(ctx, id, f.by)
	default:
		err = c.Stop(ctx, id, job.StopDetail(f.by, time.Now()))
	}
	var pe *worker.PausedError
	switch {
	case errors.As(err, &pe), errors.Is(err, worker.ErrNotPaused), errors.Is(err, worker.ErrStopping):
		return usageErr(err)
	case errors.Is(err, worker.ErrNotQueued):
		return usageErr(fmt.Errorf("job %s was not enqueued for workers: nothing on %s runs it", id, storeArgument(g)))
	case err != nil:
		return &exitError{code: exitcode.Storage, err: err}
	}
	switch action {
	case job.ControlPause:
		fmt.Fprintf(g.stdout, "tenax: job %s paused by %s on every worker: calls in flight finish and are recorded; `tenax continue %s %s` goes on\n", id, f.by, id, storeArgument(g))
	case job.ControlContinue:
		fmt.Fprintf(g.stdout, "tenax: job %s goes on (continued by %s)\n", id, f.by)
	default:
		drained := waitUntil(ctx, f.wait, func() bool {
			p, err := c.Progress(ctx, id)
			return err == nil && p.Running == 0
		})
		if !drained {
			fmt.Fprintf(g.stderr, "tenax: job %s: stopping; its workers are still finishing their calls in flight after --wait %s\n", id, f.wait)
		}
		fmt.Fprintf(g.stdout, "tenax: job %s stopped by %s (state aborted): the items left are pending\nResume: tenax resume %s %s\n", id, f.by, id, storeArgument(g))
	}
	return nil
}
