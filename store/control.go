package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ControlAction is an operator's lever on a running job from any
// process: `tenax pause`, `tenax continue`, `tenax stop`, the page's
// Pause, Continue and Stop.
type ControlAction string

// The control actions.
const (
	// ControlPause holds dispatch: nothing new starts, calls in flight
	// finish and are recorded, and the run waits.
	ControlPause ControlAction = "pause"
	// ControlContinue ends the operator's pause.
	ControlContinue ControlAction = "continue"
	// ControlStop stops the run as an operator's abort: calls in flight
	// finish and are recorded, the job is saved resumable.
	ControlStop ControlAction = "stop"
)

// ControlRequest is one operator's request to the run that holds a job.
type ControlRequest struct {
	// Time is when it was asked, by the asker's clock.
	Time   time.Time     `json:"time"`
	Action ControlAction `json:"action"`
	// By names the operator as they named themselves (--by, the OS user,
	// the page's operator).
	By string `json:"by"`
}

// ErrNoControls is returned by RequestControl for a store that carries
// no control requests.
var ErrNoControls = errors.New("store: this store carries no control requests")

// Controls is a Store that carries operators' control requests to the
// process that runs a job, wherever they are made: an append-only log
// per job, which is also the audit of who asked what, and when. The
// JSONL store keeps it in the job directory's control.jsonl, PostgreSQL
// in tenax_notes rows, the in-memory store in memory. The run reads it
// twice a second (package job).
type Controls interface {
	// AppendControl makes req durable in job id's log before it returns
	// (an fsynced line, a committed row), whoever holds the job: it is
	// how a process that does not run the job reaches the one that does.
	// ErrNotFound (wrapped) for no such job.
	AppendControl(ctx context.Context, id string, req ControlRequest) error
	// Controls returns job id's requests appended after the position
	// after (0: from the first), oldest first, and the position after the
	// last of them, for the next call. A request being written is left
	// for the next call; no new request costs one stat or one indexed
	// query.
	Controls(ctx context.Context, id string, after int64) (reqs []ControlRequest, next int64, err error)
	// ControlLocation names where the log lives, for messages:
	// "control.jsonl" (in the job's directory), "tenax_notes", "memory".
	ControlLocation() string
}

// Check returns an error when the request's action is not one of the
// three.
func (r ControlRequest) Check() error {
	switch r.Action {
	case ControlPause, ControlContinue, ControlStop:
		return nil
	}
	return fmt.Errorf("store: unknown control action %q: pause, continue or stop", r.Action)
}

// RequestControl asks the run that holds job id of st to do req, by
// appending req to the job's control log (Controls), and returns the
// request as made (its Time set to now when zero). The run applies it
// within half a second; a request made while no run holds the job is
// never applied (a later run heeds only requests made after it started).
// It is the one way `tenax pause|continue|stop` and the page reach a run
// of another process.
func RequestControl(ctx context.Context, st Store, id string, req ControlRequest) (ControlRequest, error) {
	if err := req.Check(); err != nil {
		return req, err
	}
	c, ok := st.(Controls)
	if !ok {
		return req, ErrNoControls
	}
	if req.Time.IsZero() {
		req.Time = time.Now()
	}
	if err := c.AppendControl(ctx, id, req); err != nil {
		return req, fmt.Errorf("writing the %s request of job %s to %s: %w", req.Action, id, c.ControlLocation(), err)
	}
	return req, nil
}

// PendingControl returns the latest of reqs when the manifest m does not
// show it taken yet: what a page or a command shows between the request
// and the run's answer. A pause is pending while m says no pause, a
// continue while m says paused, a stop while m says running (the run
// drains, then saves the job aborted). A request older than m's last
// update is not pending: the run wrote the manifest since (it took the
// request, or started after it, and a request made before a run started
// is never applied). The two times are the asker's clock and the run's.
func PendingControl(m Manifest, reqs []ControlRequest) (ControlRequest, bool) {
	if len(reqs) == 0 || m.State != StateRunning {
		return ControlRequest{}, false
	}
	last := reqs[len(reqs)-1]
	if !last.Time.After(m.Updated) {
		return ControlRequest{}, false
	}
	switch last.Action {
	case ControlPause:
		return last, m.Paused == nil
	case ControlContinue:
		return last, m.Paused != nil
	case ControlStop:
		return last, true
	}
	return ControlRequest{}, false
}
