package metrics

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// scrapeTimeout bounds the reads of one scrape of a Stored.
const scrapeTimeout = 10 * time.Second

var (
	jobItemsDesc = prometheus.NewDesc("tenax_job_items",
		"A job's items by their latest recorded outcome (succeeded, failed, pending), over every run of the job, as tenax status counts them.",
		[]string{"job_id", "outcome"}, nil)
	queueDesc = prometheus.NewDesc("tenax_queue_items",
		"A job's River jobs on workers this round, by state (waiting, running, retrying, discarded, finished).",
		[]string{"job_id", "state"}, nil)
	workersDesc = prometheus.NewDesc("tenax_workers",
		"Workers in the database, by state: alive, lost (no heartbeat within their rescue-after) or stopped.",
		[]string{"state"}, nil)
)

// Stored is what `tenax ui` serves at /metrics: what the store records of
// its jobs and, with a workers' database, their queues and the workers,
// read at each scrape. It knows no rates nor calls in flight (a store
// holds records): those are the running processes' (Jobs).
//
// Its jobs are Job when set, else every job whose state is running, so
// that finished jobs leave the scrape (bounded cardinality).
type Stored struct {
	Store store.Store
	// Job, when set, is the one job exposed.
	Job string
	// Workers, when set, adds the queues of jobs run by workers and the
	// workers.
	Workers Workers
}

// Workers is what a Stored reads of a workers' database: *worker.Client
// is one, which cmd/tenax hands it, so that metrics links no River nor
// pgx.
type Workers interface {
	// Workers lists every worker that has run on the database.
	Workers(ctx context.Context) ([]workertype.Info, error)
	// Progress reads where a job run by workers stands, or
	// workertype.ErrNotQueued for a job one process runs.
	Progress(ctx context.Context, jobID string) (workertype.Progress, error)
}

// Describe sends the descriptions of the series Collect may send (the
// workers' only with Workers).
func (s *Stored) Describe(ch chan<- *prometheus.Desc) {
	ch <- jobItemsDesc
	ch <- queueDesc
	ch <- workersDesc
}

// Collect reads the store (and the workers' database) and sends the
// series; a job that cannot be read is reported as an error of the
// scrape, the others are still sent.
func (s *Stored) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	ids, err := s.jobs(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(jobItemsDesc, err)
	}
	for _, id := range ids {
		if err := s.collectJob(ctx, ch, id); err != nil {
			ch <- prometheus.NewInvalidMetric(jobItemsDesc, err)
		}
	}
	if s.Workers == nil {
		return
	}
	list, err := s.Workers.Workers(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(workersDesc, err)
		return
	}
	counts := map[string]int{"alive": 0, "lost": 0, "stopped": 0}
	for _, i := range list {
		switch {
		case i.Stopped != nil:
			counts["stopped"]++
		case i.Lost:
			counts["lost"]++
		default:
			counts["alive"]++
		}
	}
	for state, n := range counts {
		ch <- prometheus.MustNewConstMetric(workersDesc, prometheus.GaugeValue, float64(n), state)
	}
}

// jobs returns the ids of the jobs to expose.
func (s *Stored) jobs(ctx context.Context) ([]string, error) {
	if s.Job != "" {
		return []string{s.Job}, nil
	}
	list, err := s.Store.List(ctx)
	// A job whose manifest cannot be read hides no other.
	var unreadable *store.UnreadableJobsError
	if errors.As(err, &unreadable) {
		err = nil
	}
	var ids []string
	for _, m := range list {
		if m.State == store.StateRunning {
			ids = append(ids, m.ID)
		}
	}
	return ids, err
}

func (s *Stored) collectJob(ctx context.Context, ch chan<- prometheus.Metric, id string) error {
	j, err := s.Store.OpenReadOnly(ctx, id)
	if err != nil {
		return err
	}
	defer j.Close()
	o, err := j.Outcomes(ctx)
	if err != nil {
		return err
	}
	ok, failed, pending := o.Count(j.Manifest().Items)
	for outcome, n := range map[string]int{"succeeded": ok, "failed": failed, "pending": pending} {
		ch <- prometheus.MustNewConstMetric(jobItemsDesc, prometheus.GaugeValue, float64(n), id, outcome)
	}
	if s.Workers == nil {
		return nil
	}
	p, err := s.Workers.Progress(ctx, id)
	if errors.Is(err, workertype.ErrNotQueued) {
		return nil // one process runs it
	}
	if err != nil {
		return err
	}
	for state, n := range map[string]int{"waiting": p.Waiting, "running": p.Running, "retrying": p.Retrying, "discarded": p.Discarded, "finished": p.Finished} {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), id, state)
	}
	return nil
}
