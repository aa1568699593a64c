package worker_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// testDSN returns a DSN whose search_path is a schema of this test's own,
// dropped at cleanup. The schema does not exist yet: opening creates it.
func testDSN(t *testing.T) string {
	t.Helper()
	return pgtest.AbsentDSN(t, "tenax_wtest_")
}

func open(t *testing.T, dsn string) *worker.Client {
	t.Helper()
	c, err := worker.Open(t.Context(), dsn)
	if err != nil {
		t.Fatalf("opening %s: %v", dsn, err)
	}
	t.Cleanup(c.Close)
	return c
}

// writeJob writes a spec over n items using the in-process mock provider
// with extra YAML appended, and returns the spec's path.
func writeJob(t *testing.T, n int, extra string) string {
	t.Helper()
	dir := t.TempDir()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"id\": \"w%d\", \"word\": \"word%d\"}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `name: workers
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
retry:
  max_attempts: 8
  backoff: {base: 1ms, max: 5ms}
cache: {enabled: false}
` + extra
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func quiet() *slog.Logger {
	if os.Getenv("TENAX_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// enqueue creates and enqueues the job at specPath.
func enqueue(t *testing.T, c *worker.Client, specPath string) worker.Enqueued {
	t.Helper()
	cr, err := job.Create(t.Context(), specPath, c.Store(), job.Options{Home: t.TempDir(), Logger: quiet()})
	if err != nil {
		t.Fatalf("creating the job: %v", err)
	}
	defer cr.Job.Close()
	e, err := c.Enqueue(t.Context(), cr)
	if err != nil {
		t.Fatalf("enqueueing: %v", err)
	}
	return e
}

// startWorkers runs n workers on the job until the test ends.
func startWorkers(t *testing.T, c *worker.Client, n int, cfg worker.Config) []*worker.Worker {
	t.Helper()
	ws, _ := runWorkers(t, c, slices.Repeat([]worker.Config{cfg}, n)...)
	return ws
}

// runWorkers runs one worker per config, each in a home of its own, until
// stop (idempotent, and called at the test's end) cancels their runs and
// waits for them to return.
func runWorkers(t *testing.T, c *worker.Client, cfgs ...worker.Config) (ws []*worker.Worker, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	stop = sync.OnceFunc(func() { cancel(); wg.Wait() })
	t.Cleanup(stop)
	for _, cfg := range cfgs {
		cfg.Options.Home = t.TempDir()
		cfg.Options.Logger = quiet()
		w, err := c.NewWorker(cfg)
		if err != nil {
			t.Fatalf("new worker: %v", err)
		}
		ws = append(ws, w)
		wg.Go(func() {
			if err := w.Run(ctx); err != nil {
				t.Errorf("worker %s: %v", w.ID(), err)
			}
		})
	}
	return ws, stop
}

// waitFor polls cond until it holds; the deadline is only a safety net.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	waitForUpTo(t, what, 3*time.Minute, cond)
}

// waitForUpTo is waitFor with a safety net of limit, for a wait whose
// own length is minutes by design.
func waitForUpTo(t *testing.T, what string, limit time.Duration, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// finals counts the records of every idx of a job.
func finals(t *testing.T, dsn, jobID string) map[int]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT idx, count(*) FROM tenax_records WHERE job_id = $1 GROUP BY idx`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	var idx, n int
	if _, err := pgx.ForEachRow(rows, []any{&idx, &n}, func() error { out[idx] = n; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// oneRecordEach checks that each of a job's n items has exactly one
// record, and no other idx has any: why names what the test did to them.
func oneRecordEach(t *testing.T, dsn, jobID string, n int, why string) {
	t.Helper()
	got := finals(t, dsn, jobID)
	for idx := range n {
		if got[idx] != 1 {
			t.Errorf("idx %d has %d records %s, want exactly 1", idx, got[idx], why)
		}
	}
	if len(got) != n {
		t.Errorf("%d idx have records, want the %d items'", len(got), n)
	}
}

func jobState(t *testing.T, c *worker.Client, id string) store.State {
	t.Helper()
	j, err := c.Store().OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	return j.Manifest().State
}

func TestMigrateCreatesRiverAndTenaxTablesInTheDSNSchema(t *testing.T) {
	dsn := testDSN(t)
	// Two processes migrating at once must not collide.
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { open(t, dsn) })
	}
	wg.Wait()
	c := open(t, dsn)
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, table := range []string{"river_job", "river_queue", "tenax_jobs", "tenax_records", "tenax_queues", "tenax_finals", "tenax_workers", "tenax_limits", "tenax_breakers", "tenax_inputs"} {
		var found bool
		err := conn.QueryRow(t.Context(), `SELECT EXISTS (SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2)`, c.Schema(), table).Scan(&found)
		if err != nil || !found {
			t.Errorf("table %s.%s: found %v, err %v; want it created by Open", c.Schema(), table, found, err)
		}
	}
	if !strings.HasPrefix(c.Schema(), "tenax_wtest_") {
		t.Errorf("schema %q, want the DSN's search_path", c.Schema())
	}
}

func TestWorkersRecordEveryItemExactlyOnce(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 300
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n  errors: {server: 0.2, reset: 0.05, invalid_output: 0.1}\n"))
	if e.Items != n {
		t.Fatalf("enqueued %d items, want %d", e.Items, n)
	}
	startWorkers(t, c, 3, worker.Config{Jobs: []string{e.JobID}, Concurrency: 8})
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "after three workers and faults")
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Finished != n || p.Waiting+p.Running+p.Retrying+p.Discarded != 0 {
		t.Errorf("progress %+v, want all %d River jobs completed", p, n)
	}
}

// riverInsert inserts item jobs directly, as a second enqueuer or a
// rescued duplicate would.
func riverInsert(t *testing.T, dsn, schema, queue string, args []river.JobArgs) {
	t.Helper()
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	rc, err := river.NewClient(riverpgxv5.New(pool), &river.Config{Schema: schema, SkipUnknownJobCheck: true})
	if err != nil {
		t.Fatal(err)
	}
	params := make([]river.InsertManyParams, len(args))
	for i, a := range args {
		params[i] = river.InsertManyParams{Args: a, InsertOpts: &river.InsertOpts{Queue: queue, MaxAttempts: worker.MaxAttempts}}
	}
	if _, err := rc.InsertMany(t.Context(), params); err != nil {
		t.Fatal(err)
	}
}

func TestDuplicateExecutionsAddNoSecondRecord(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 50
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	// Every item a second time, in the same round: as if River had
	// rescued each execution while its first worker was alive after all.
	var dups []river.JobArgs
	for i := range n {
		dups = append(dups, worker.ItemArgs{Job: e.JobID, Idx: i, Round: 1})
	}
	riverInsert(t, dsn, c.Schema(), e.Queue, dups)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 4})
	waitFor(t, "every River job to complete", func() (bool, error) {
		p, err := c.Progress(t.Context(), e.JobID)
		return p.Finished == 2*n, err
	})
	oneRecordEach(t, dsn, e.JobID, n, "after two executions")
}

func TestDeadWorkersItemsAreRescuedAndFinished(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 40
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	// A worker took the first ten items and died: running, attempted long
	// ago, its heartbeat gone.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tag, err := conn.Exec(t.Context(), `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour',
		attempted_by = ARRAY['dead-worker'] WHERE queue = $1 AND id IN (SELECT id FROM river_job WHERE queue = $1 ORDER BY id LIMIT 2)`, e.Queue)
	if err != nil || tag.RowsAffected() != 2 {
		t.Fatalf("faking a dead worker's jobs: %v (%d rows)", err, tag.RowsAffected())
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, RescueAfter: 6 * time.Second})
	waitFor(t, "the dead worker's items to be rescued and finished", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "(rescued from the dead worker)")
}

func TestBreakerTripOnOneWorkerAbortsTheJobOnAll(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 200
	// Every call fails with a fatal 401: the first worker to count three
	// trips the breaker; on_trip abort stops every worker.
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n  errors: {auth: 1}\nbreaker: {threshold: 3, on_trip: abort}\n"))
	startWorkers(t, c, 3, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the job to be aborted", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Breaker.Open || p.Breaker.Action != "abort" {
		t.Errorf("shared breaker %+v, want open with action abort", p.Breaker)
	}
	// Let every worker see the trip and stop; then nothing may run. The
	// items waiting are counted then, not at the trip: at the trip the
	// workers may hold nearly every item (193 running, 0 waiting in one
	// CI run), which they give back as they stop.
	waitFor(t, "every worker to stop running items", func() (bool, error) {
		var err error
		p, err = c.Progress(t.Context(), e.JobID)
		return p.Running == 0 && p.Paused, err
	})
	recorded := len(finals(t, dsn, e.JobID))
	if recorded >= n/2 {
		t.Errorf("%d of %d items recorded after the trip, want the job stopped early (a few in flight per worker)", recorded, n)
	}
	if p.Waiting == 0 {
		t.Errorf("no item left waiting in the paused queue: %+v", p)
	}
}

// operator is an attached operator whose answers come from answer, and
// from checkIn at check-ins (go on when nil).
type operator struct {
	answer  func(ctx context.Context, q engine.SharedTrip) engine.TripDecision
	checkIn func(ctx context.Context, c engine.CheckIn) bool

	mu      sync.Mutex
	asked   []engine.SharedTrip
	settled []engine.TripSettled
}

func (o *operator) Trip(ctx context.Context, r engine.TripReport) engine.TripDecision {
	if r.Shared == nil {
		panic("an attending operator was asked a trip that is not a job's shared breaker's")
	}
	o.mu.Lock()
	o.asked = append(o.asked, *r.Shared)
	o.mu.Unlock()
	return o.answer(ctx, *r.Shared)
}

func (o *operator) Settled(_ engine.SharedTrip, a engine.TripSettled) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.settled = append(o.settled, a)
}

func (o *operator) CheckIn(ctx context.Context, c engine.CheckIn) bool {
	if o.checkIn == nil {
		return true
	}
	return o.checkIn(ctx, c)
}

func (o *operator) seen() ([]engine.SharedTrip, []engine.TripSettled) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]engine.SharedTrip(nil), o.asked...), append([]engine.TripSettled(nil), o.settled...)
}

// attend runs c.Attend for op until the test ends.
func attend(t *testing.T, c *worker.Client, jobID, by string, op engine.Operator) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Attend(ctx, jobID, by, op) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Attend: %v", err)
		}
	})
}

// promptJob enqueues a job whose every call fails with a fatal 401 and
// whose breaker, after three, waits for the operator (on_trip: prompt).
func promptJob(t *testing.T, c *worker.Client) worker.Enqueued {
	t.Helper()
	return enqueue(t, c, writeJob(t, 200, "mock:\n  latency: 1ms\n  errors: {auth: 1}\nbreaker: {threshold: 3, on_trip: prompt}\n"))
}

// consecutiveFailures finds the count in a trip's summary.
var consecutiveFailures = regexp.MustCompile(`Circuit breaker open: (\d+) consecutive failures`)

func TestAttendedOperatorsAnswersReachEveryWorker(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	// Continue at the first trip, abort at the second.
	op := &operator{answer: func(_ context.Context, q engine.SharedTrip) engine.TripDecision {
		if q.Trip == 1 {
			return engine.TripContinue
		}
		return engine.TripAbortRun
	}}
	attend(t, c, e.JobID, "the test's terminal", op)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the job to be aborted by the operator's second answer", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
	asked, settled := op.seen()
	if len(asked) != 2 || asked[0].Trip != 1 || asked[1].Trip != 2 {
		t.Fatalf("asked %+v, want the first and the second trip, once each", asked)
	}
	for _, q := range asked {
		// 3 is the threshold; a failure of the worker's other call in
		// flight can land before the trip's counts are read (4 seen
		// under load).
		m := consecutiveFailures.FindStringSubmatch(q.Summary)
		n := 0
		if m != nil {
			n, _ = strconv.Atoi(m[1])
		}
		if n < 3 || len(q.Failures) == 0 || !strings.Contains(q.Failures[0], "Status:     401") {
			t.Errorf("question %+v, want the breaker's summary (3 or more consecutive failures) and the 401 in full, as the terminal prompt shows them", q)
		}
	}
	if len(settled) != 0 {
		t.Errorf("told %+v was settled elsewhere, want both answers to be the operator's own", settled)
	}
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if p.Breaker.Decision != "abort" || p.Breaker.DecidedBy != "the test's terminal" || p.Breaker.Trips != 2 {
		t.Errorf("breaker %+v, want trip 2 aborted by the test's terminal", p.Breaker)
	}
}

// TestTheSharedBreakersQuestionCountsTheJobsItems: the question a worker
// wrote at a trip counted its own engine's items out of none, "Processed:
// 8/0", for a job of 200 items on two workers (seen on the page of a job
// on workers); it counts the job's records out of the job's items now.
func TestTheSharedBreakersQuestionCountsTheJobsItems(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	var summary string
	waitFor(t, "the trip's question", func() (bool, error) {
		p, err := c.Progress(t.Context(), e.JobID)
		summary = p.Breaker.Summary
		return summary != "", err
	})
	m := regexp.MustCompile(`Processed: (\d+)/200 \| Failed: (\d+) \|`).FindStringSubmatch(summary)
	// Every call fails: what the job recorded by then all failed (the
	// failures that tripped it may still be on their way to the records).
	if m == nil || m[1] != m[2] {
		t.Errorf("the question counts %q, want the job's failed records out of its 200 items:\n%s", m, summary)
	}
	if err := c.Decide(t.Context(), e.JobID, worker.Abort, "the test"); err != nil {
		t.Fatal(err)
	}
}

func TestFirstAnswerWinsAndTheOtherOperatorIsTold(t *testing.T) {
	c := open(t, testDSN(t))
	e := promptJob(t, c)
	// This operator never answers: another does first.
	op := &operator{answer: func(ctx context.Context, _ engine.SharedTrip) engine.TripDecision {
		<-ctx.Done()
		return engine.TripNoAnswer
	}}
	attend(t, c, e.JobID, "a slow terminal", op)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitFor(t, "the operator to be asked", func() (bool, error) {
		asked, _ := op.seen()
		return len(asked) == 1, nil
	})
	if err := c.Decide(t.Context(), e.JobID, worker.Abort, "tenax breaker elsewhere"); err != nil {
		t.Fatalf("the first answer: %v", err)
	}
	waitFor(t, "the slow terminal to be told who answered", func() (bool, error) {
		_, settled := op.seen()
		return len(settled) == 1, nil
	})
	if _, settled := op.seen(); settled[0] != (engine.TripSettled{Answered: true, Decision: engine.TripAbortRun, By: "tenax breaker elsewhere"}) {
		t.Errorf("told %+v, want abort by tenax breaker elsewhere", settled[0])
	}
	err := c.Decide(t.Context(), e.JobID, worker.Continue, "a late terminal")
	var ae *worker.AnsweredError
	if !errors.As(err, &ae) || ae.Decision != worker.Abort || ae.By != "tenax breaker elsewhere" {
		t.Errorf("a second answer: %v, want it refused as answered already with abort by tenax breaker elsewhere", err)
	}
	waitFor(t, "the job to be aborted by the first answer", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateAborted, nil
	})
	if asked, _ := op.seen(); len(asked) != 1 {
		t.Errorf("asked %d times, want once: an answered trip is not asked again", len(asked))
	}
}

// TestUnsetOnTripAsksAnAttendingTerminalElseAborts is the regression test
// of on_trip unset meaning abort on workers even when an attached run's
// terminal could ask, where one process on a terminal asks.
func TestUnsetOnTripAsksAnAttendingTerminalElseAborts(t *testing.T) {
	unsetJob := func(t *testing.T, c *worker.Client) worker.Enqueued {
		return enqueue(t, c, writeJob(t, 200, "mock:\n  latency: 1ms\n  errors: {auth: 1}\nbreaker: {threshold: 3}\n"))
	}
	t.Run("attended", func(t *testing.T) {
		c := open(t, testDSN(t))
		e := unsetJob(t, c)
		op := &operator{answer: func(context.Context, engine.SharedTrip) engine.TripDecision { return engine.TripAbortRun }}
		attend(t, c, e.JobID, "the test's terminal", op)
		startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
		waitFor(t, "the job to be aborted by the terminal's answer", func() (bool, error) {
			return jobState(t, c, e.JobID) == store.StateAborted, nil
		})
		if asked, _ := op.seen(); len(asked) != 1 {
			t.Errorf("the attending terminal was asked %d times, want once", len(asked))
		}
		p, err := c.Progress(t.Context(), e.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Breaker.DecidedBy != "the test's terminal" {
			t.Errorf("breaker %+v, want it answered by the test's terminal", p.Breaker)
		}
	})
	t.Run("unattended", func(t *testing.T) {
		c := open(t, testDSN(t))
		e := unsetJob(t, c)
		startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
		waitFor(t, "the job to be aborted with nobody to ask", func() (bool, error) {
			return jobState(t, c, e.JobID) == store.StateAborted, nil
		})
		p, err := c.Progress(t.Context(), e.JobID)
		if err != nil {
			t.Fatal(err)
		}
		if p.Breaker.Decision != "abort" || !strings.Contains(p.Breaker.DecidedBy, "no terminal attends") {
			t.Errorf("breaker %+v, want abort decided because no terminal attends", p.Breaker)
		}
		waitFor(t, "every worker to stop running items", func() (bool, error) {
			p, err := c.Progress(t.Context(), e.JobID)
			return p.Running == 0 && p.Paused, err
		})
	})
}

func TestEnqueueInsertsEveryItemOnceAcrossParallelBatches(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	// More than two batches of 10,000, inserted by the two COPYs at once.
	const n = 25_001
	e := enqueue(t, c, writeJob(t, n, ""))
	if e.Items != n {
		t.Fatalf("enqueued %d items, want %d", e.Items, n)
	}
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT args->>'items' FROM river_job WHERE queue = $1`, e.Queue)
	if err != nil {
		t.Fatal(err)
	}
	sets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]int, n)
	for _, set := range sets {
		idxs, err := worker.ParseItemSet(set)
		if err != nil {
			t.Fatalf("River job of items %q: %v", set, err)
		}
		if len(idxs) > worker.GroupItems(&spec.Spec{Concurrency: spec.Concurrency{Max: 32}}) {
			t.Errorf("River job of items %q holds %d items, more than a group", set, len(idxs))
		}
		for _, idx := range idxs {
			if idx < 0 || idx >= n {
				t.Fatalf("River job of items %q names idx %d of %d items", set, idx, n)
			}
			seen[idx]++
		}
	}
	for idx, k := range seen {
		if k != 1 {
			t.Errorf("idx %d is in %d River jobs, want exactly one", idx, k)
		}
	}
	// Groups never span the insert's batches of 10,000 items: 1,250 of 8,
	// and the last one item alone.
	if len(sets) > n/8+3 {
		t.Errorf("%d River jobs for %d items, want about one per 8", len(sets), n)
	}
}

func TestWorkersShareOneRequestRate(t *testing.T) {
	// rate_limit.requests_per_minute is the job's, not each worker's: two
	// workers at 120 rpm make their 12 calls over at least 5 s (one
	// schedule, a second's burst), where each pacing on its own would take
	// about 2.5 s. Elapsed time is only a lower bound here: a loaded
	// machine makes the job slower, never faster.
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 12
	e := enqueue(t, c, writeJob(t, n, "mock: {latency: 1ms}\nrate_limit: {requests_per_minute: 120}\n"))
	start := time.Now()
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 4})
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	if got := len(finals(t, dsn, e.JobID)); got != n {
		t.Fatalf("%d items recorded, want %d", got, n)
	}
	if elapsed := time.Since(start); elapsed < 4500*time.Millisecond {
		t.Errorf("12 calls at a shared 120 rpm took %v, want at least 4.5s: the workers did not share one schedule", elapsed.Round(time.Millisecond))
	}
}

func TestWorkersToldNoLimitShareTheQuotaTheHeadersName(t *testing.T) {
	// Told no rate_limit, each worker's engine learned the provider's
	// quota from its headers as if it were alone: four workers spent a
	// rested quota four times over where it ran out, and paced at four
	// times the limit after, meeting 429s (5.8–6.5% of the calls in
	// bench/workers/limit.sh). Now each learns a fourth of it.
	dsn := testDSN(t)
	c := open(t, dsn)
	const rpm, n = 1200, 1500
	m := mock.New(mock.Config{RPM: rpm})
	srv := httptest.NewServer(m)
	t.Cleanup(srv.Close)
	t.Setenv("MOCK_KEY", "k")
	spec := writeJob(t, n, "")
	data, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	openai := strings.Replace(string(data), "  provider: mock\n  model: mock-json\n  output: json\n",
		"  provider: openai\n  base_url: "+srv.URL+"/v1\n  api_key: ${MOCK_KEY}\n  model: mock-echo\n", 1)
	if err := os.WriteFile(spec, []byte(openai), 0o644); err != nil {
		t.Fatal(err)
	}
	e := enqueue(t, c, spec)
	startWorkers(t, c, 4, worker.Config{Jobs: []string{e.JobID}, Concurrency: 16})
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	if got := len(finals(t, dsn, e.JobID)); got != n {
		t.Fatalf("%d items recorded, want %d", got, n)
	}
	st := m.Stats()
	t.Logf("%d calls, %d answered 429", st.Requests, st.RateLimited)
	if st.RateLimited*100 > st.Requests {
		t.Errorf("%d of %d calls answered 429, want at most 1%%: four workers must share the quota the headers name, not each learn all of it", st.RateLimited, st.Requests)
	}
}
