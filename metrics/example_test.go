package metrics_test

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/store"
)

// A job's engine events become its series, labelled with its id; serve
// the registry with metrics.Handler (http.Handle("/metrics", …)).
func Example() {
	reg := prometheus.NewRegistry()
	jobs := metrics.NewJobs(reg)
	j := jobs.Add("job_1", metrics.Route{Provider: "openai", Model: "gpt-4o-mini"}, nil)
	// What engine.Config.OnEvent receives for one item answered at once.
	j.Observe(engine.Event{Kind: engine.ItemStarted})
	j.Observe(engine.Event{Kind: engine.ItemFinished, Record: store.Record{Attempts: 1, DurationMS: 450}})
	j.Observe(engine.Event{Kind: engine.CallEnded, Elapsed: 400 * time.Millisecond})

	fams, _ := reg.Gather()
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			fmt.Print(f.GetName(), "{")
			for _, l := range m.GetLabel() {
				fmt.Printf("%s=%q,", l.GetName(), l.GetValue())
			}
			if h := m.GetHistogram(); h != nil {
				fmt.Printf("} count %d sum %g\n", h.GetSampleCount(), h.GetSampleSum())
			} else {
				fmt.Printf("} %g\n", m.GetCounter().GetValue())
			}
		}
	}
	// Output:
	// tenax_call_duration_seconds{class="none",job_id="job_1",model="gpt-4o-mini",provider="openai",route="",} count 1 sum 0.4
	// tenax_item_duration_seconds{job_id="job_1",} count 1 sum 0.45
	// tenax_items_total{class="none",job_id="job_1",outcome="succeeded",} 1
}
