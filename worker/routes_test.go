package worker_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// keyCounter counts the requests a server gets by API key: each worker
// of a test reads its own key from its environment, so the calls of each
// worker can be told apart.
type keyCounter struct {
	mu sync.Mutex
	by map[string]int
}

func (k *keyCounter) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k.mu.Lock()
		if k.by == nil {
			k.by = map[string]int{}
		}
		k.by[strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")]++
		k.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// holdingFirst is route b: the mock, except that once hold is set the
// first worker's calls wait until the second worker's first call, so
// that the first cannot finish the job alone before the second starts.
func holdingFirst(calls *keyCounter, hold *atomic.Bool) *httptest.Server {
	m := mock.New(mock.Config{Latency: 20 * time.Millisecond})
	second := make(chan struct{})
	var once sync.Once
	return httptest.NewServer(calls.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") {
		case "second":
			once.Do(func() { close(second) })
		case "first":
			if hold.Load() {
				select {
				case <-second:
				case <-r.Context().Done():
				}
			}
		}
		m.ServeHTTP(w, r)
	})))
}

func (k *keyCounter) calls(key string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.by[key]
}

// answering answers every request with status and an OpenAI error body,
// with headers.
func answering(status int, headers map[string]string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range headers {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"route a says %d","type":"server_error","code":null}}`, status)
	})
}

// routedJob writes a spec of n items over two OpenAI routes, a at aURL
// and b at bURL, both keyed by ${ROUTE_KEY}, and enqueues it.
func routedJob(t *testing.T, c *worker.Client, n int, aURL, bURL string) worker.Enqueued {
	t.Helper()
	path := writeJob(t, n, "")
	spec := fmt.Sprintf(`name: routed
input: items.jsonl
task:
  type: llm
  output: json
  prompt: "Describe {{.word}}"
routes:
  - {name: a, provider: openai, base_url: %q, api_key: "${ROUTE_KEY}", model: mock-json}
  - {name: b, provider: openai, base_url: %q, api_key: "${ROUTE_KEY}", model: mock-json}
fallbacks: {outage: true}
retry:
  max_attempts: 4
  backoff: {base: 1ms, max: 5ms}
breaker: {threshold: 3, reset_timeout: 10m, on_trip: abort}
cache: {enabled: false}
`, aURL+"/v1", bURL+"/v1")
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("ROUTE_KEY", "creator")
	return enqueue(t, c, path)
}

// keyed is a worker config whose environment gives ROUTE_KEY key.
func keyed(jobID, key string) worker.Config {
	cfg := worker.Config{Jobs: []string{jobID}, Concurrency: 2}
	cfg.Options.Env = func(name string) (string, bool) {
		if name == "ROUTE_KEY" {
			return key, true
		}
		return os.LookupEnv(name)
	}
	return cfg
}

func routeState(t *testing.T, c *worker.Client, jobID, route string) worker.RouteState {
	t.Helper()
	states, err := c.Routes(t.Context(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if s.Route == route {
			return s
		}
	}
	return worker.RouteState{}
}

// routesOfRecords counts a job's latest records by the route that
// produced them, failed ones under "failed".
func routesOfRecords(t *testing.T, dsn, jobID string) map[string]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT CASE WHEN failed THEN 'failed' ELSE coalesce(record->>'route', '') END, count(*)
		FROM tenax_records WHERE job_id = $1 GROUP BY 1`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	var route string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&route, &n}, func() error { out[route] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestARouteOpenedByOneWorkerIsOpenForTheOther: each worker kept its own
// route state, so every worker of a job found a route's outage again by
// itself, its breaker's threshold of calls each. Now the first worker's
// breaker of route a opens it for the job: a second worker started after
// it sends a no call (reset_timeout is long: no probe is due), every item
// succeeds on b, a opened once, and the run's breaker never tripped.
func TestARouteOpenedByOneWorkerIsOpenForTheOther(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	var aCalls, bCalls keyCounter
	a := httptest.NewServer(aCalls.wrap(answering(http.StatusServiceUnavailable, nil)))
	t.Cleanup(a.Close)
	var hold atomic.Bool
	b := holdingFirst(&bCalls, &hold)
	t.Cleanup(b.Close)
	const n = 200
	e := routedJob(t, c, n, a.URL, b.URL)

	startWorkers(t, c, 1, keyed(e.JobID, "first"))
	waitFor(t, "the first worker to open route a", func() (bool, error) {
		return routeState(t, c, e.JobID, "a").Open, nil
	})
	hold.Store(true)
	startWorkers(t, c, 1, keyed(e.JobID, "second"))
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})

	if got := routesOfRecords(t, dsn, e.JobID); got["b"] != n {
		t.Errorf("records by route %v, want all %d on b", got, n)
	}
	oneRecordEach(t, dsn, e.JobID, n, "")
	if bCalls.calls("second") == 0 {
		t.Fatalf("the second worker made no call at all (b: %d): the first finished the job alone, the test proves nothing", bCalls.calls("second"))
	}
	if got := aCalls.calls("second"); got != 0 {
		t.Errorf("the second worker sent %d calls to route a after the first had opened its breaker, want 0", got)
	}
	if got := aCalls.calls("first"); got < 3 {
		t.Errorf("the first worker sent %d calls to a, want at least the breaker's threshold of 3", got)
	}
	if st := routeState(t, c, e.JobID, "a"); !st.Open || st.Trips != 1 {
		t.Errorf("route a shared as %+v, want open, opened once for the job", st)
	}
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Breaker.Open || p.Breaker.Trips != 0 {
		t.Errorf("the run's breaker %+v, want never tripped: b could serve every item, nobody is asked", p.Breaker)
	}
	if s := jobState(t, c, e.JobID); s != store.StateCompleted {
		t.Errorf("job %s, want completed", s)
	}
}

// TestARouteCooldownMetByOneWorkerHoldsTheOther: a 429's retry hint on
// route a met by one worker pauses a on every worker of the job: the
// second worker, started during it, sends a nothing; every item succeeds
// on b.
func TestARouteCooldownMetByOneWorkerHoldsTheOther(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	var aCalls, bCalls keyCounter
	// An item that had picked a before the cooldown began waits it out at
	// a's gate and may meet another there, once per attempt: the job
	// lasts one to max_attempts (4) cooldowns — 45 s to 3 minutes, and
	// 135 s was seen on an idle machine — so the wait for its end has a
	// safety net of 8 minutes; and one cooldown must outlast the second
	// worker's items on b.
	a := httptest.NewServer(aCalls.wrap(answering(http.StatusTooManyRequests, map[string]string{"Retry-After": "45"})))
	t.Cleanup(a.Close)
	var hold atomic.Bool
	b := holdingFirst(&bCalls, &hold)
	t.Cleanup(b.Close)
	const n = 200
	e := routedJob(t, c, n, a.URL, b.URL)

	startWorkers(t, c, 1, keyed(e.JobID, "first"))
	waitFor(t, "the first worker to share a cooldown of route a", func() (bool, error) {
		return !routeState(t, c, e.JobID, "a").Cooldown.IsZero(), nil
	})
	hold.Store(true)
	startWorkers(t, c, 1, keyed(e.JobID, "second"))
	waitForUpTo(t, "the job to finish", 8*time.Minute, func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})

	if got := routesOfRecords(t, dsn, e.JobID); got["b"] != n {
		t.Errorf("records by route %v, want all %d on b", got, n)
	}
	if bCalls.calls("second") == 0 {
		t.Fatalf("the second worker made no call at all: the first finished the job alone, the test proves nothing")
	}
	if got := aCalls.calls("second"); got != 0 {
		t.Errorf("the second worker sent %d calls to route a during the cooldown the first met, want 0", got)
	}
	if st := routeState(t, c, e.JobID, "a"); st.Open {
		t.Errorf("route a shared as %+v, want its breaker closed: a 429 is a cooldown, not an outage", st)
	}
}

// faultingRouteJob is a routed job of n items whose route a answers 503
// to every call, counted by the calling worker's ROUTE_KEY, and whose
// route b is the mock, which answers them all.
func faultingRouteJob(t *testing.T, c *worker.Client, n int) (worker.Enqueued, *keyCounter) {
	t.Helper()
	aCalls := new(keyCounter)
	a := httptest.NewServer(aCalls.wrap(answering(http.StatusServiceUnavailable, nil)))
	t.Cleanup(a.Close)
	b := httptest.NewServer(mock.New(mock.Config{}))
	t.Cleanup(b.Close)
	return routedJob(t, c, n, a.URL, b.URL), aCalls
}

// TestAWorkersRouteFaultsJoinTheJobsManifest: two workers run a job whose
// route a answers 503 to every call. Each worker adds its run's breaker
// counts of a to the job's manifest as its run ends, so status (which
// reads the manifest, a refused call leaving no record) shows the faults
// of both: every call a got, and nothing for b, which answered them all.
func TestAWorkersRouteFaultsJoinTheJobsManifest(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 60
	e, aCalls := faultingRouteJob(t, c, n)
	_, stop := runWorkers(t, c, keyed(e.JobID, "first"), keyed(e.JobID, "second"))
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	stop() // the workers' runs end, each keeping its counts

	oneRecordEach(t, dsn, e.JobID, n, "")
	m := manifest(t, c, e.JobID)
	total := aCalls.calls("first") + aCalls.calls("second")
	if got := m.RouteBreakers["a"]; got.Faults != total || total < 3 {
		t.Errorf("manifest keeps route a's breaker as %+v, want the %d faults its server answered 503 to the workers (first %d, second %d), at least the threshold's 3",
			got, total, aCalls.calls("first"), aCalls.calls("second"))
	}
	if got, ok := m.RouteBreakers["b"]; ok {
		t.Errorf("manifest keeps route b's breaker as %+v, want nothing: b answered every call", got)
	}
}

// TestAFinishedJobsRouteFaultsReachTheManifestWhileItsWorkerRuns: a
// worker kept its runs' breaker counts only as the run ended, when the
// worker stopped, so a job finished on a worker that ran on had no
// route_breakers at all: status said nothing of route a's faults (and
// refusals) until the worker was stopped, and never if it died. The
// counts now go in before the worker writes the job's end.
func TestAFinishedJobsRouteFaultsReachTheManifestWhileItsWorkerRuns(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e, aCalls := faultingRouteJob(t, c, 60)
	_, stop := runWorkers(t, c, keyed(e.JobID, "only"))
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	running := manifest(t, c, e.JobID) // read with the worker still up
	calls := aCalls.calls("only")
	if got := running.RouteBreakers["a"]; got.Faults != calls || calls < 3 {
		t.Errorf("the finished job's manifest keeps route a's breaker as %+v while its worker runs, want the %d faults its server answered 503, at least the threshold's 3",
			got, calls)
	}
	stop()
	// The run's end adds nothing kept already.
	if got := manifest(t, c, e.JobID).RouteBreakers["a"]; got.Faults != calls {
		t.Errorf("after the worker stopped, the manifest keeps route a's breaker as %+v, want the %d faults counted once", got, calls)
	}
}
