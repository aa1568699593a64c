package web

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/tenaxhq/tenax/worker/workertype"
)

// workersData is the section of the page of a job run by workers: where
// its River queue stands, its shared breaker and budget, and the workers
// running it, from the database they share. Nothing of it needs the
// process that enqueued the job.
type workersData struct {
	Progress workertype.Progress
	Workers  []workerRow
	// Err says why the workers' tables could not be read.
	Err string
}

// workerRow is a worker of the job.
type workerRow struct {
	workertype.Info
	// Since is the time since its last heartbeat.
	Since time.Duration
}

// workersOf reads the workers section of job id; nil when the page has
// no workers' database or no worker runs the job (one process ran it).
func (s *Server) workersOf(ctx context.Context, id string) *workersData {
	if s.cfg.Workers == nil {
		return nil
	}
	p, err := s.cfg.Workers.Progress(ctx, id)
	if errors.Is(err, workertype.ErrNotQueued) {
		return nil
	}
	d := &workersData{Progress: p}
	if err != nil {
		d.Err = err.Error()
		return d
	}
	list, err := s.cfg.Workers.Workers(ctx)
	if err != nil {
		d.Err = err.Error()
		return d
	}
	now := time.Now()
	for _, i := range list {
		if slices.Contains(i.Jobs, id) {
			d.Workers = append(d.Workers, workerRow{Info: i, Since: now.Sub(i.Heartbeat)})
		}
	}
	return d
}

// decide answers the open shared breaker of a job run by workers, as
// `tenax breaker` does: the first answer wins, from here, a terminal that
// attends the job, or the command.
func (s *Server) decide(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if !s.formOK(w, r) {
		return
	}
	if s.cfg.Workers == nil {
		http.Error(w, "this page does not read a workers' database: start it with tenax ui --store postgres://…", http.StatusConflict)
		return
	}
	d := workertype.Decision(r.PostFormValue("decision"))
	if d != workertype.Continue && d != workertype.Abort {
		http.Error(w, "answer continue or abort", http.StatusBadRequest)
		return
	}
	// The form names the trip it was shown for, so that a page left open
	// (or a click as the breaker trips again) does not answer a question
	// its operator never saw.
	trip, err := strconv.Atoi(r.PostFormValue("trip"))
	if err != nil || trip < 1 {
		http.Error(w, "which trip? (the form has no trip number)", http.StatusBadRequest)
		return
	}
	var answeredErr *workertype.AnsweredError
	switch err := s.cfg.Workers.DecideTrip(r.Context(), id, trip, d, s.cfg.Operator); {
	case errors.Is(err, workertype.ErrBreakerClosed), errors.Is(err, workertype.ErrTripSettled), errors.As(err, &answeredErr):
		http.Error(w, err.Error(), http.StatusConflict)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	answered(w, r, id)
}

// workersLimit is the sum of the live workers' limits of the job's items
// in flight: a worker's --concurrency, else the spec's concurrency.max,
// else a worker's default of 8; 0 when no worker of the job is live.
func workersLimit(d *workersData, specMax int) (limit, live int) {
	if d == nil {
		return 0, 0
	}
	for _, w := range d.Workers {
		if w.Stopped != nil || w.Lost {
			continue
		}
		live++
		switch {
		case w.Concurrency > 0:
			limit += w.Concurrency
		case specMax > 0:
			limit += specMax
		default:
			limit += 8
		}
	}
	return limit, live
}

// withWorkersLimit returns the charts with the in-flight chart's limit
// the sum over the job's live workers, which run up to that many at once.
func withWorkersLimit(cs []chart, d *workersData, specMax int) []chart {
	limit, live := workersLimit(d, specMax)
	if limit == 0 {
		return cs
	}
	cs = slices.Clone(cs)
	for i := range cs {
		if cs[i].ID == "chart-inflight" {
			label := fmt.Sprintf("concurrency.max %d", limit)
			if live > 1 || limit != specMax {
				label = fmt.Sprintf("limit %d, %d worker(s)", limit, live)
			}
			cs[i].Ref = &chartRef{Label: label, Value: float64(limit)}
		}
	}
	return cs
}
