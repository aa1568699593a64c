package web

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
)

// countedJobs is how many of the newest jobs the list counts by outcome
// at each refresh: counting reads each job's outcomes, so a store of
// thousands of jobs lists the older ones by their manifest alone.
const countedJobs = 50

// jobRow is one job of the list.
type jobRow struct {
	store.Manifest
	// State is the job's state as status shows it (stale for a killed
	// run's job) for the counted jobs, the manifest's for the others.
	State store.State
	// Counted says the counts below were read.
	Counted                    bool
	Succeeded, Failed, Pending int
	Done                       int // succeeded + failed
	CountErr                   string
}

// jobsData is what the job list renders.
type jobsData struct {
	Jobs       []jobRow
	Unreadable string
	// FixRuns are listed beside the jobs (see fix.go).
	FixRuns []fixRunRow
}

func (s *Server) jobsData(ctx context.Context) (*jobsData, error) {
	jobs, err := s.cfg.Store.List(ctx)
	// A job whose manifest cannot be read hides no other: the page lists
	// the rest.
	d := &jobsData{}
	var unreadable *store.UnreadableJobsError
	if errors.As(err, &unreadable) {
		d.Unreadable, err = unreadable.Error(), nil
	}
	if err != nil {
		return nil, err
	}
	slices.Reverse(jobs) // newest first
	for i, m := range jobs {
		row := jobRow{Manifest: m, State: m.State}
		if i < countedJobs {
			row.State, _ = report.CurrentState(ctx, s.cfg.Store, m, "")
			row.Counted = true
			if err := countJob(ctx, s.cfg.Store, &row); err != nil {
				row.CountErr = err.Error()
			}
		}
		d.Jobs = append(d.Jobs, row)
	}
	return d, nil
}

// countJob reads the job's outcomes: its items by latest record.
func countJob(ctx context.Context, st store.Store, row *jobRow) error {
	j, err := st.OpenReadOnly(ctx, row.ID)
	if err != nil {
		return err
	}
	defer j.Close()
	o, err := j.Outcomes(ctx)
	if err != nil {
		return err
	}
	row.Succeeded, row.Failed, row.Pending = o.Count(row.Items)
	row.Done = row.Succeeded + row.Failed
	return nil
}

func (s *Server) jobsPage(w http.ResponseWriter, r *http.Request) {
	d, err := s.jobsData(r.Context())
	if err != nil {
		http.Error(w, "listing jobs: "+err.Error(), http.StatusInternalServerError)
		return
	}
	d.FixRuns = s.fixRuns()
	s.render(w, "jobs.html", d)
}

// jobsEvents pushes the job list as it changes: new jobs, their counts and
// states.
func (s *Server) jobsEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "", func(ctx context.Context) (map[string][]byte, error) {
		d, err := s.jobsData(ctx)
		if err != nil {
			return nil, err
		}
		return s.fragments(d, "jobs")
	})
}
