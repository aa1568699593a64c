package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// Control is what the page's Pause, Continue and Stop act on: the run
// this process runs. *engine.Engine is one, handed to Monitor.Attach when
// the run starts.
type Control interface {
	// Pause holds dispatch (calls in flight finish and are recorded) and
	// reports false when an operator already paused the run or it stops.
	Pause(by string) bool
	// Continue ends the operator's pause, false when there was none.
	Continue(by string) bool
	// Stop stops the run gracefully: calls in flight finish and are
	// recorded, the job is saved resumable.
	Stop(reason engine.StopReason, detail string)
}

// Attach hands the monitor the run's levers, for the page's Pause,
// Continue and Stop: without it the page offers none.
func (m *Monitor) Attach(c Control) {
	m.mu.Lock()
	m.control = c
	m.mu.Unlock()
	m.notify()
}

func (m *Monitor) controlOf() Control {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.control
}

// control takes the page's Pause, Continue or Stop of a running job: of
// this process's run, or of a job that workers run, as `tenax pause`,
// `tenax continue` and `tenax stop` do. Every action is told to the run's
// log (the engine's Held, Unheld and Stopping events; on workers, each
// worker's) with who asked, and shown on the page.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.formOK(w, r) {
		return
	}
	action := r.PostFormValue("do")
	if action != "pause" && action != "continue" && action != "stop" {
		http.Error(w, "do pause, continue or stop", http.StatusBadRequest)
		return
	}
	by := s.cfg.Operator
	detail := fmt.Sprintf("stopped by %s at %s", by, time.Now().UTC().Format(time.RFC3339))
	if m := s.live(id); m != nil && m.controlOf() != nil && !m.Ended() {
		if err := act(m.controlOf(), action, by, detail); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
		answered(w, r, id)
		return
	}
	if s.cfg.Workers != nil {
		err := actOnWorkers(r.Context(), s.cfg.Workers, id, action, by, detail)
		var pe *workertype.PausedError
		switch {
		case errors.Is(err, workertype.ErrNotQueued):
		case errors.As(err, &pe), errors.Is(err, workertype.ErrNotPaused), errors.Is(err, workertype.ErrStopping):
			http.Error(w, err.Error(), http.StatusConflict)
			return
		case err != nil:
			http.Error(w, action+" job "+id+": "+err.Error(), http.StatusInternalServerError)
			return
		default:
			answered(w, r, id)
			return
		}
	}
	if _, ok := s.cfg.Store.(store.Controls); ok {
		code, err := s.controlStored(r.Context(), id, store.ControlAction(action), by)
		if err != nil {
			http.Error(w, err.Error(), code)
			return
		}
		answered(w, r, id)
		return
	}
	http.Error(w, "job "+id+" is not running in this process nor on workers: nothing to "+action, http.StatusConflict)
}

// controlStored asks the run of another process that holds job id
// (`tenax run` in another terminal, with this page's `tenax ui` over the
// same store) to do action, by the job's control log in the store: the
// request `tenax pause|continue|stop` write (store.RequestControl), with
// who asked and when, applied by the run within half a second. It
// refuses, with the status to answer, what cannot apply now, as the
// commands do.
func (s *Server) controlStored(ctx context.Context, id string, action store.ControlAction, by string) (int, error) {
	sc, err := s.storedControl(ctx, id)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	if sc == nil {
		return http.StatusConflict, fmt.Errorf("job %s is not running (in this process, on workers or in another process): nothing to %s", id, action)
	}
	switch {
	case sc.Stopping:
		return http.StatusConflict, fmt.Errorf("job %s is stopping (asked by %s at %s): nothing to %s", id, sc.Asked.By, sc.Asked.Time.UTC().Format(time.RFC3339), action)
	case action == store.ControlPause && sc.Paused != nil:
		return http.StatusConflict, fmt.Errorf("job %s is already paused, by %s since %s", id, sc.Paused.By, sc.Paused.Since.UTC().Format(time.RFC3339))
	case action == store.ControlContinue && sc.Paused == nil:
		return http.StatusConflict, fmt.Errorf("job %s is not paused: nothing to continue", id)
	}
	if _, err := store.RequestControl(ctx, s.cfg.Store, id, store.ControlRequest{Action: action, By: by}); err != nil {
		return http.StatusInternalServerError, err
	}
	return 0, nil
}

// storedRun is what the page shows of a run of another process, read
// from the store: the manifest's pause, and the latest request the run
// has not taken yet.
type storedRun struct {
	// Paused is the pause the run holds, as it wrote it in the manifest.
	Paused *store.Pause
	// Asked is the latest request the manifest does not show taken yet
	// (store.PendingControl), nil for none.
	Asked *store.ControlRequest
	// Stopping says Asked is a stop: the run drains its calls in flight.
	Stopping bool
	// Where names the control log ("control.jsonl", "tenax_notes").
	Where string
}

// storedControl reads the run of job id that another process runs, nil
// when none does: the job is not running (or its process is gone: a
// stale job), or the store carries no control requests.
func (s *Server) storedControl(ctx context.Context, id string) (*storedRun, error) {
	c, ok := s.cfg.Store.(store.Controls)
	if !ok {
		return nil, nil
	}
	j, err := s.cfg.Store.OpenReadOnly(ctx, id)
	if err != nil {
		return nil, err
	}
	m := j.Manifest()
	j.Close()
	if state, _ := report.CurrentState(ctx, s.cfg.Store, m, ""); state != store.StateRunning {
		return nil, nil
	}
	reqs, _, err := c.Controls(ctx, id, 0)
	if err != nil {
		return nil, err
	}
	sr := &storedRun{Paused: m.Paused, Where: c.ControlLocation()}
	if req, ok := store.PendingControl(m, reqs); ok {
		sr.Asked = &req
		sr.Stopping = req.Action == store.ControlStop
	}
	return sr, nil
}

// actOnWorkers does action on the job that workers run.
func actOnWorkers(ctx context.Context, ws Workers, id, action, by, detail string) error {
	switch action {
	case "pause":
		return ws.Pause(ctx, id, by)
	case "continue":
		return ws.Continue(ctx, id, by)
	}
	return ws.Stop(ctx, id, detail)
}

// act does action on c, or says why it did nothing.
func act(c Control, action, by, detail string) error {
	switch action {
	case "pause":
		if !c.Pause(by) {
			return errors.New("the run is already paused, or stopping")
		}
	case "continue":
		if !c.Continue(by) {
			return errors.New("the run is not paused")
		}
	default:
		c.Stop(engine.StopOperator, detail)
	}
	return nil
}
