package web

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// The page of a job that workers run on PostgreSQL (tenax ui, with no
// run of its own) reads its throughput, ETA and charts from the records
// the workers write, and once they are done re-runs every failure on them,
// as tenax resume --retry-failures --workers 0 does.
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
mock: {latency: {min: 40ms, max: 60ms}, seed: 3, errors: {server: 0.2}}
retry: {max_attempts: 1}
breaker: {threshold: 1000}
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
		} else if !strings.Contains(p, `id="state">running<`) {
			t.Fatalf("the job ended before its page showed a throughput and an ETA:\n%s", p)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// Once every item is recorded, the charts hold them all.
	p := pollPage(t, s, id, "every item to be recorded", `id="state">failed<`)
	for _, want := range []string{`id="chart-rate"`, `id="chart-latency"`, ">p50 ", `id="chart-failures"`, ">retryable ", ">concurrency.max 2<"} {
		if !strings.Contains(p, want) {
			t.Errorf("the charts of a job on workers lack %s", want)
		}
	}
	failed := failedIdx(t, c.Store(), id)
	if len(failed) == 0 {
		t.Fatal("no item failed: the test needs failures to re-run")
	}

	// Its workers re-run every failure together: a group alone is refused.
	if !strings.Contains(p, `id="retry-all"`) || strings.Contains(p, `class="retry-group"`) {
		t.Errorf("the page of a finished job on workers should offer 'retry every failure', not a group:\n%s", p)
	}
	if code, body := post(s, "/jobs/"+id+"/retry", url.Values{"csrf": {s.csrf}, "confirm": {"yes"}, "class": {"retryable"}}); code != http.StatusConflict {
		t.Errorf("re-running one class on workers: %d %s, want 409", code, body)
	}
	asked := time.Now()
	if code, body := post(s, "/jobs/"+id+"/retry", url.Values{"csrf": {s.csrf}, "confirm": {"yes"}}); code != http.StatusSeeOther {
		t.Fatalf("re-running every failure on workers: %d %s, want 303", code, body)
	}
	pollPage(t, s, id, "the page to say the failures were enqueued", fmt.Sprintf("%d items enqueued again (round 2)", len(failed)),
		"tenax resume "+id+" --retry-failures --workers 0")
	// The worker runs them: each failed item has a new latest record.
	pollPage(t, s, id, "the worker to run the round", fmt.Sprintf(`<b id="queue-finished">%d</b>`, n+len(failed)))
	latest := map[int]time.Time{}
	j, err := c.Store().OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if err := j.Scan(t.Context(), func(r store.Record) error { latest[r.Idx] = r.FinishedAt; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, idx := range failed {
		if !latest[idx].After(asked) {
			t.Errorf("item #%d failed and was not run again: its latest record finished %v, the re-run was asked at %v", idx, latest[idx], asked)
		}
	}
}

// failedIdx returns the items of job id whose latest record failed.
func failedIdx(t *testing.T, st store.Store, id string) []int {
	t.Helper()
	j, err := st.OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	o, err := j.Outcomes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var idx []int
	for i := range j.Manifest().Items {
		if o.Get(i) == store.Failed {
			idx = append(idx, i)
		}
	}
	return idx
}
