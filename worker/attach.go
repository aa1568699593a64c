package worker

import (
	"context"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
)

// Attached says how Client.Attach works on one job from this process.
type Attached struct {
	// Workers are the workers to run, made by Client.NewWorker for the job.
	Workers []*Worker
	// Run runs them until its context ends; nil means RunAll. The CLI
	// passes its own to stop them on a signal.
	Run func(ctx context.Context, ws []*Worker) error
	// Operator, when set, attends the job from here (BeginAttending
	// before the workers start, so that the first check-in counts their
	// first items) under the name By. Attending failures go to Warn: the
	// job goes on, answered from elsewhere (tenax breaker).
	Operator engine.Operator
	By       string
	Warn     func(error)
	// Every is how often the job's queue is read for Progress: 2s when 0.
	Every time.Duration
	// Progress, when set, is given the job's queue at each reading.
	Progress func(Progress)
}

// Attach runs a's workers on job id until the job leaves the running
// state (its last item recorded, or stopped), ctx ends, or the workers
// stop, and returns the workers' error and how long it took. It is what
// `tenax run --workers N` does after enqueueing: work on the job here,
// show its queue, and hand the breaker's questions to this terminal.
func (c *Client) Attach(ctx context.Context, id string, a Attached) (time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if a.Operator != nil {
		c.attendFrom(ctx, id, a)
	}
	run := a.Run
	if run == nil {
		run = RunAll
	}
	every := a.Every
	if every <= 0 {
		every = 2 * time.Second
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, a.Workers) }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	start := time.Now()
	for {
		select {
		case err := <-done:
			return time.Since(start), err
		case <-tick.C:
		}
		st, p, err := c.jobProgress(ctx, id)
		if err != nil {
			continue // a blip: the next tick reads again
		}
		if a.Progress != nil {
			a.Progress(p)
		}
		if st != store.StateRunning {
			cancel()
			return time.Since(start), <-done
		}
	}
}

// attendFrom serves a.Operator for the job until ctx ends.
func (c *Client) attendFrom(ctx context.Context, id string, a Attached) {
	warn := a.Warn
	if warn == nil {
		warn = func(error) {}
	}
	at, err := c.BeginAttending(ctx, id)
	if err != nil {
		warn(err)
		return
	}
	go func() {
		if err := at.Serve(ctx, a.By, a.Operator); err != nil {
			warn(err)
		}
	}()
}

// jobProgress reads the job's queue and its state.
func (c *Client) jobProgress(ctx context.Context, id string) (store.State, Progress, error) {
	p, err := c.Progress(ctx, id)
	if err != nil {
		return "", p, err
	}
	j, err := c.Store().OpenReadOnly(ctx, id)
	if err != nil {
		return "", p, err
	}
	defer j.Close()
	return j.Manifest().State, p, nil
}
