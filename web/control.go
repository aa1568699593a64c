package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tenaxhq/tenax/engine"
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
	http.Error(w, "job "+id+" is not running in this process nor on workers: nothing to "+action, http.StatusConflict)
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
