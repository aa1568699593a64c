package job

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// ControlAction is an operator's lever on a running job from another
// process: `tenax pause`, `tenax continue`, `tenax stop`.
type ControlAction = store.ControlAction

// The control actions.
const (
	// ControlPause holds dispatch: nothing new starts, calls in flight
	// finish and are recorded, and the run waits (Engine.Pause).
	ControlPause = store.ControlPause
	// ControlContinue ends the operator's pause (Engine.Continue).
	ControlContinue = store.ControlContinue
	// ControlStop stops the run as an operator's abort: calls in flight
	// finish and are recorded, the job is saved resumable, the run exits
	// 3 (Engine.Stop with engine.StopOperator).
	ControlStop = store.ControlStop
)

// ControlFile is a JSONL job directory's append-only file of control
// requests (jsonl.ControlFile), one JSON object a line: the audit trail of
// who asked what, and when; what the run did with each is in its log (the
// engine's Held, Unheld and Stopping events, with who asked). PostgreSQL
// keeps them as tenax_notes rows (store.Controls).
const ControlFile = jsonl.ControlFile

// ControlRequest is one operator's request (store.ControlRequest), made
// with store.RequestControl.
type ControlRequest = store.ControlRequest

// controlPoll is how often a run reads its store's control log: a stat of
// one file, or one indexed query, twice a second costs nothing, and an
// operator's pause takes effect within a blink. A file watcher (inotify)
// or LISTEN/NOTIFY would save the look at the price of a platform- or
// store-specific path, and would still need a poll for a directory on
// NFS, which inotify does not see written elsewhere.
const controlPoll = 500 * time.Millisecond

// controlled is what a control request acts on: the run's engine.
type controlled interface {
	Pause(by string) bool
	Continue(by string) bool
	Stop(reason engine.StopReason, detail string)
}

// controlWatch is a run's side of its job's control log.
type controlWatch struct {
	log store.Controls
	id  string
	// since is when the run started: a request older than that was made
	// for an earlier run (or none) and is history, not an order.
	since time.Time
	// after is the log's position after the requests read so far.
	after  int64
	target controlled
	// pausable is false in batch mode, whose waves run at the provider:
	// a pause or continue is refused there (logged).
	pausable bool
	// failing is set while reading the log fails, so that a store that
	// is down is warned of once, not twice a second.
	failing bool
	logger  *slog.Logger
}

// watchControl applies the requests appended to the job's control log in
// its store (store.Controls: control.jsonl in a JSONL job directory,
// tenax_notes in PostgreSQL) while the run lasts; it returns a func that
// ends the watch. A store without one is not watched (on workers,
// `tenax pause` goes through the workers' tables instead).
func (x *execution) watchControl(ctx context.Context, target controlled, pausable bool) (stop func()) {
	log, ok := x.st.(store.Controls)
	if !ok {
		return func() {}
	}
	w := &controlWatch{log: log, id: x.m.ID, since: x.started, target: target, pausable: pausable, logger: x.log}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(controlPoll)
		defer t.Stop()
		for {
			w.look(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// look applies the requests appended since the last look.
func (w *controlWatch) look(ctx context.Context) {
	reqs, after, err := w.log.Controls(ctx, w.id, w.after)
	if err != nil {
		if !w.failing && ctx.Err() == nil {
			w.logger.Warn("reading the job's control requests failed; tenax pause|continue|stop are not heard until they read", "in", w.log.ControlLocation(), "error", err)
		}
		w.failing = true
		return
	}
	if w.failing {
		w.logger.Info("the job's control requests read again", "in", w.log.ControlLocation())
		w.failing = false
	}
	w.after = after
	for _, r := range reqs {
		if r.Time.Before(w.since) {
			continue
		}
		w.apply(r)
	}
}

// apply does one request; what it did is logged by the engine's events
// (Held, Unheld, Stopping, with who asked), what it could not do here.
func (w *controlWatch) apply(r ControlRequest) {
	by := r.By
	if by == "" {
		by = "an operator"
	}
	switch r.Action {
	case ControlPause, ControlContinue:
		if !w.pausable {
			w.logger.Warn("a batch mode run cannot be paused: its waves run at the provider; tenax stop stops it", "action", string(r.Action), "by", by)
			return
		}
		if r.Action == ControlPause && !w.target.Pause(by) {
			w.logger.Info("pause asked by "+by+": the run is already paused, or stopping", "by", by)
		}
		if r.Action == ControlContinue && !w.target.Continue(by) {
			w.logger.Info("continue asked by "+by+": the run is not paused", "by", by)
		}
	case ControlStop:
		w.target.Stop(engine.StopOperator, StopDetail(by, r.Time))
	}
}

// StopDetail is the reason an operator's stop records: who and when, as
// the page's Stop words it.
func StopDetail(by string, at time.Time) string {
	return fmt.Sprintf("stopped by %s at %s", by, at.UTC().Format(time.RFC3339))
}

// notePause writes the operator's pause in force (or its end) into the
// manifest, where `tenax status` and `tenax pause` in another process
// read it. It runs on every Held and Unheld event: whichever came last,
// the manifest then says what holds now.
func (x *execution) notePause(ctx context.Context, hold func() *engine.Hold) {
	h := hold()
	err := x.j.UpdateManifest(context.WithoutCancel(ctx), func(m *store.Manifest) {
		m.Paused = nil
		if h != nil {
			m.Paused = &store.Pause{By: h.By, Since: h.Since}
		}
	})
	if err != nil {
		x.log.Warn("recording the operator's pause in the manifest failed; tenax status may not show it", "error", err)
	}
}
