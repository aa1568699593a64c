package job

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
)

// ControlAction is an operator's lever on a running job from another
// process: `tenax pause`, `tenax continue`, `tenax stop`.
type ControlAction string

// The control actions.
const (
	// ControlPause holds dispatch: nothing new starts, calls in flight
	// finish and are recorded, and the run waits (Engine.Pause).
	ControlPause ControlAction = "pause"
	// ControlContinue ends the operator's pause (Engine.Continue).
	ControlContinue ControlAction = "continue"
	// ControlStop stops the run as an operator's abort: calls in flight
	// finish and are recorded, the job is saved resumable, the run exits
	// 3 (Engine.Stop with engine.StopOperator).
	ControlStop ControlAction = "stop"
)

// ControlFile is the job directory's append-only file of control
// requests, one JSON object a line: written by `tenax pause|continue|stop`
// in any process, read by the run that holds the job. It is also the
// audit trail of those requests (who asked what, and when); what the run
// did with each is in its log (the engine's Held, Unheld and Stopping
// events, with who asked).
const ControlFile = "control.jsonl"

// controlPoll is how often a run looks at its control file: a stat of one
// file twice a second costs nothing, and an operator's pause takes effect
// within a blink. A file watcher (inotify) would save the stat at the
// price of a platform-specific dependency, and would still need a poll
// for a directory on NFS, which inotify does not see written elsewhere.
const controlPoll = 500 * time.Millisecond

// ControlRequest is one line of ControlFile.
type ControlRequest struct {
	Time   time.Time     `json:"time"`
	Action ControlAction `json:"action"`
	// By names the operator as they named themselves (--by, the OS user).
	By string `json:"by"`
}

// RequestControl appends req to the control file of the job in dir, in
// one fsynced write of a whole line: the run reads complete lines only,
// so it never applies half of one. The run that holds the job applies it
// within controlPoll; a request made while no run holds the job is never
// applied (a later run heeds only requests made after it started).
func RequestControl(dir string, req ControlRequest) error {
	switch req.Action {
	case ControlPause, ControlContinue, ControlStop:
	default:
		return fmt.Errorf("job: unknown control action %q: pause, continue or stop", req.Action)
	}
	if req.Time.IsZero() {
		req.Time = time.Now()
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, ControlFile), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("job: writing the control request: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("job: writing the control request: %w", err)
	}
	return nil
}

// controlled is what a control request acts on: the run's engine.
type controlled interface {
	Pause(by string) bool
	Continue(by string) bool
	Stop(reason engine.StopReason, detail string)
}

// controlWatch is a run's side of its control file.
type controlWatch struct {
	path string
	// since is when the run started: a request older than that was made
	// for an earlier run (or none) and is history, not an order.
	since  time.Time
	offset int64
	size   int64
	target controlled
	// pausable is false in batch mode, whose waves run at the provider:
	// a pause or continue is refused there (logged).
	pausable bool
	log      *slog.Logger
}

// watchControl applies the requests appended to the job directory's
// control file while the run lasts; it returns a func that ends the watch.
// A job without a directory (another store) has no control file: on
// workers, `tenax pause` goes through the database instead.
func (x *execution) watchControl(ctx context.Context, target controlled, pausable bool) (stop func()) {
	if x.dir == "" {
		return func() {}
	}
	w := &controlWatch{path: filepath.Join(x.dir, ControlFile), since: x.started, target: target, pausable: pausable, log: x.log}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(controlPoll)
		defer t.Stop()
		for {
			w.look()
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

// look applies the complete lines appended since the last look.
func (w *controlWatch) look() {
	fi, err := os.Stat(w.path)
	if err != nil || fi.Size() == w.size {
		return
	}
	w.size = fi.Size()
	reqs, offset, err := readControl(w.path, w.offset)
	if err != nil {
		w.log.Warn("reading the job's control file failed; tenax pause|continue|stop are not heard until it reads", "file", w.path, "error", err)
		return
	}
	w.offset = offset
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
			w.log.Warn("a batch mode run cannot be paused: its waves run at the provider; tenax stop stops it", "action", string(r.Action), "by", by)
			return
		}
		if r.Action == ControlPause && !w.target.Pause(by) {
			w.log.Info("pause asked by "+by+": the run is already paused, or stopping", "by", by)
		}
		if r.Action == ControlContinue && !w.target.Continue(by) {
			w.log.Info("continue asked by "+by+": the run is not paused", "by", by)
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

// readControl reads the complete lines of the control file at path from
// offset on and returns their requests and the offset after the last of
// them. A line being written (no newline yet) is left for the next read;
// a line that does not decode is passed over.
func readControl(path string, offset int64) ([]ControlRequest, int64, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, err
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, offset, err
	}
	var out []ControlRequest
	for {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return out, offset, nil
		}
		offset += int64(len(line)) + 1
		b = rest
		var r ControlRequest
		if json.Unmarshal(line, &r) == nil && r.Action != "" {
			out = append(out, r)
		}
	}
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
