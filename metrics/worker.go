package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/worker/workertype"
)

// Worker is what RegisterWorker reads of a worker: *worker.Worker is one,
// which cmd/tenax hands it (metrics links no River nor pgx).
type Worker interface {
	ID() string
	Status() workertype.Status
}

// RegisterWorker registers the series of worker w on reg, read from
// w.Status at scrape time: what it runs now, over all its jobs. Its jobs'
// own series come from a Jobs fed through worker.Config.OnJob.
func RegisterWorker(reg prometheus.Registerer, w Worker) error {
	labels := prometheus.Labels{"worker": w.ID()}
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenax_worker_jobs", ConstLabels: labels,
			Help: "Jobs this worker has taken up.",
		}, func() float64 { return float64(len(w.Status().Jobs)) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "tenax_worker_in_flight", ConstLabels: labels,
			Help: "Items under way on this worker, over all its jobs.",
		}, func() float64 { return float64(w.Status().InFlight) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "tenax_worker_items_finished_total", ConstLabels: labels,
			Help: "Items this worker recorded since it started, over all its jobs.",
		}, func() float64 { return float64(w.Status().Finished) }),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// ObserveJobs returns the worker.Config.OnJob that counts each job a
// worker takes up in js.
func ObserveJobs(js *Jobs) func(workertype.JobRun) func(ev engine.Event) {
	return func(r workertype.JobRun) func(engine.Event) {
		return js.Add(r.ID, RouteOf(r.Spec), r.Stats).Observe
	}
}
