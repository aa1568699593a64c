package web

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/worker"
)

// The page of a job that workers run on PostgreSQL (tenax ui, with no
// run of its own) reads its throughput, ETA and charts from the records
// the workers write, and offers no re-run from the page.
func TestPageOfAJobOnWorkersChartsItsRecordsWithThroughputAndETA(t *testing.T) {
	dsn := pgtest.AbsentDSN(t, "tenax_web_")
	c, err := worker.Open(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	const n = 80
	id := enqueueSpecOnWorkers(t, c, n, `name: charted-on-workers
input: items.jsonl
task: {type: llm, provider: mock, model: mock-json, output: json, prompt: "Describe {{.word}}"}
mock: {latency: {min: 40ms, max: 60ms}}
concurrency: {max: 2}
`)
	s := New(Config{Store: c.Store(), Workers: c, Resume: (&fakeResumer{}).resume})
	runWorker(t, c, id)

	// While it runs: the rate over the last minute, every process's, and
	// the ETA of the items left at that rate.
	rate := regexp.MustCompile(`<b id="job-rate">([0-9.]+)</b>`)
	eta := regexp.MustCompile(`<b id="job-eta">[0-9hms.]+</b>`)
	for seen := false; !seen; {
		p := page(t, s, id)
		if m := rate.FindStringSubmatch(p); m != nil && m[1] != "0" && eta.MatchString(p) {
			seen = true
		} else if strings.Contains(p, `<b id="job-succeeded">80</b>`) {
			t.Fatalf("the job ended before its page showed a throughput and an ETA:\n%s", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Once every item is recorded, the charts hold them all.
	p := pollPage(t, s, id, "every item to be recorded", `<b id="job-succeeded">80</b>`)
	for _, want := range []string{`id="chart-rate"`, `id="chart-latency"`, ">p50 ", `id="chart-tokens"`, ">concurrency.max 2<"} {
		if !strings.Contains(p, want) {
			t.Errorf("the charts of a job on workers lack %s", want)
		}
	}
	if a := s.retryAbility(t.Context(), id); a.OK || !strings.Contains(a.Why, "workers run this job") {
		t.Errorf("re-running a job on workers from the page: %+v; want it refused, naming tenax resume --workers", a)
	}
}
