package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// writeLines writes a spec over the given input lines, bad ones recorded
// as item failures, and returns the spec's path.
func writeLines(t *testing.T, lines []string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	spec := `name: inputs
input: {path: items.jsonl, on_bad_line: record}
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
mock: {latency: 1ms}
cache: {enabled: false}
`
	path := filepath.Join(dir, "job.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// latestRecords returns each idx's latest record.
func latestRecords(t *testing.T, c *worker.Client, jobID string) map[int]store.Record {
	t.Helper()
	j, err := c.Store().OpenReadOnly(t.Context(), jobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	out := map[int]store.Record{}
	if err := j.Scan(t.Context(), func(r store.Record) error { out[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return out
}

// resume is `tenax resume JOB --workers 0`.
func resume(t *testing.T, c *worker.Client, jobID string, opts worker.RequeueOptions) worker.Enqueued {
	t.Helper()
	e, err := c.Requeue(t.Context(), jobID, opts)
	if err != nil {
		t.Fatalf("requeueing: %v", err)
	}
	return e
}

// waitDone waits until the job's queue holds nothing that could run and
// the job's state is no longer running.
func waitDone(t *testing.T, c *worker.Client, jobID string) {
	t.Helper()
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, jobID) != store.StateRunning, nil
	})
}

func TestEnqueueKeepsInputsOutOfRiverArguments(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	lines := []string{
		`{"word": "a", "id": "w0"}`,
		`{"id": "w1", "word": "b"}`,
		`{"id": "w2", "word": `, // bad: recorded as an item failure
	}
	e := enqueue(t, c, writeLines(t, lines))
	conn := connect(t, dsn)
	type riverJob struct {
		Kind string
		Args map[string]any
		Tags []string
	}
	rows, err := conn.Query(t.Context(), `SELECT kind, args, tags FROM river_job WHERE queue = $1 ORDER BY id`, e.Queue)
	if err != nil {
		t.Fatal(err)
	}
	jobs, err := pgx.CollectRows(rows, pgx.RowToStructByPos[riverJob])
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("%d River jobs, want the %d items in one", len(jobs), len(lines))
	}
	if j := jobs[0]; j.Kind != worker.ItemsKind || len(j.Args) != 4 || j.Args["job"] != e.JobID || j.Args["round"] != float64(1) ||
		j.Args["items"] != "0-2" || j.Args["n"] != float64(3) || len(j.Tags) != 0 {
		t.Errorf("River job %s %v tagged %v, want %s with only {job, round, items: 0-2, n: 3}: River indexes every key and value of the arguments", j.Kind, j.Args, j.Tags, worker.ItemsKind)
	}
	for idx, line := range lines {
		var id, bad *string
		var in []byte
		err := conn.QueryRow(t.Context(), `SELECT id, input, bad FROM tenax_inputs WHERE job_id = $1 AND idx = $2`, e.JobID, idx).Scan(&id, &in, &bad)
		if err != nil {
			t.Fatalf("tenax_inputs of idx %d: %v", idx, err)
		}
		if idx < 2 && (!bytes.Equal(in, []byte(line)) || id == nil || *id != fmt.Sprintf("w%d", idx) || bad != nil) {
			t.Errorf("idx %d stored as id %v, input %q, bad %v; want id w%d and the line %q byte for byte", idx, id, in, bad, idx, line)
		}
		if idx == 2 && (bad == nil || !strings.Contains(*bad, "items.jsonl:3")) {
			t.Errorf("bad line stored with error %v, want its line number", bad)
		}
	}
}

func TestWorkersRunItemsFromTheirStoredInputs(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	// Keys out of jsonb's order: the record keeps the line's, as one
	// process does (arguments in jsonb reordered them).
	lines := []string{`{"word": "a", "id": "w0"}`, `{"word": "b", "id": "w1", "n": 1.50}`, `{"id": "w2", "word": `}
	e := enqueue(t, c, writeLines(t, lines))
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 4})
	waitDone(t, c, e.JobID)
	recs := latestRecords(t, c, e.JobID)
	for idx, want := range []string{`{"word":"a","id":"w0"}`, `{"word":"b","id":"w1","n":1.50}`} {
		r := recs[idx]
		if string(r.Input) != want || r.ID != fmt.Sprintf("w%d", idx) || r.Class != classify.Unknown {
			t.Errorf("record of idx %d: input %s, id %q, class %q; want input %s, id w%d, succeeded", idx, r.Input, r.ID, r.Class, want, idx)
		}
	}
	if r := recs[2]; r.Class != classify.Item || !strings.Contains(r.Error, "items.jsonl:3") {
		t.Errorf("record of the bad line: class %q, error %q; want an item failure naming items.jsonl:3", r.Class, r.Error)
	}
}

func TestRiverJobsWithTheirInputInTheirArgumentsStillRun(t *testing.T) {
	// River jobs that tenax enqueued before inputs moved to tenax_inputs.
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeLines(t, []string{`{"id": "w0", "word": "a"}`, `{"id": "w1", "word": "b"}`}))
	conn := connect(t, dsn)
	if _, err := conn.Exec(t.Context(), `DELETE FROM river_job WHERE queue = $1`, e.Queue); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `DELETE FROM tenax_inputs WHERE job_id = $1`, e.JobID); err != nil {
		t.Fatal(err)
	}
	riverInsert(t, dsn, c.Schema(), e.Queue, []river.JobArgs{
		worker.LegacyItemArgs{Job: e.JobID, Idx: 0, Round: 1, ID: "old0", Input: json.RawMessage(`{"id": "old0", "word": "a"}`)},
		worker.LegacyItemArgs{Job: e.JobID, Idx: 1, Round: 1, ID: "old1", Input: json.RawMessage(`null`), Bad: "items.jsonl:2: an old bad line"},
	})
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	recs := latestRecords(t, c, e.JobID)
	if r := recs[0]; r.ID != "old0" || r.Class != classify.Unknown {
		t.Errorf("record of idx 0: id %q, class %q; want old0 succeeded from its arguments", r.ID, r.Class)
	}
	if r := recs[1]; r.Class != classify.Item || r.Error != "items.jsonl:2: an old bad line" {
		t.Errorf("record of idx 1: class %q, error %q; want the bad line of its arguments", r.Class, r.Error)
	}
}

func TestResumeAfterAnInterruptedEnqueueStoresTheMissingInputs(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 30
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	kept := stopEnqueueAfterFirst(t, dsn, e)
	r := resume(t, c, e.JobID, worker.RequeueOptions{})
	if r.Items != n-kept {
		t.Errorf("resume enqueued %d items, want the %d missing", r.Items, n-kept)
	}
	var inputs int
	if err := connect(t, dsn).QueryRow(t.Context(), `SELECT count(*) FROM tenax_inputs WHERE job_id = $1`, e.JobID).Scan(&inputs); err != nil {
		t.Fatal(err)
	}
	if inputs != n {
		t.Errorf("%d inputs stored after the resume, want %d", inputs, n)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 8})
	waitDone(t, c, e.JobID)
	recs := latestRecords(t, c, e.JobID)
	for idx := range n {
		if r, ok := recs[idx]; !ok || r.Class != classify.Unknown || r.ID != fmt.Sprintf("w%d", idx) {
			t.Errorf("idx %d: record %v (id %q, class %q), want w%d succeeded", idx, ok, r.ID, r.Class, idx)
		}
	}
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Errorf("job state %s, want completed", st)
	}
}

func TestRetryFailuresRoundReusesTheStoredInputs(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	lines := []string{`{"id": "w0", "word": "a"}`, `{"id": "w1", "word": `, `{"id": "w2", "word": "c"}`}
	spec := writeLines(t, lines)
	e := enqueue(t, c, spec)
	ws := startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	_ = ws
	conn := connect(t, dsn)
	rowVersions := func() string {
		t.Helper()
		var s string
		if err := conn.QueryRow(t.Context(), `SELECT string_agg(idx || ':' || ctid::text || ':' || xmin::text, ',' ORDER BY idx) FROM tenax_inputs WHERE job_id = $1`, e.JobID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := rowVersions()
	r := resume(t, c, e.JobID, worker.RequeueOptions{RetryFailures: true})
	if r.Round != 2 || r.Items != 1 {
		t.Errorf("resume --retry-failures: round %d, %d items; want round 2 with the one failed item", r.Round, r.Items)
	}
	if after := rowVersions(); after != before {
		t.Errorf("tenax_inputs rows %s after the new round, want them untouched: %s", after, before)
	}
	waitDone(t, c, e.JobID)
	if got := finals(t, dsn, e.JobID)[1]; got != 2 {
		t.Errorf("idx 1 has %d records, want 2: one per round", got)
	}

	// The bad line fixed, a forced resume runs the fixed line: the
	// changed input replaces the stored one.
	fixed := strings.Replace(strings.Join(lines, "\n"), `"word": `+"\n", `"word": "b"}`+"\n", 1) + "\n"
	if err := os.WriteFile(filepath.Join(filepath.Dir(spec), "items.jsonl"), []byte(fixed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Requeue(t.Context(), e.JobID, worker.RequeueOptions{RetryFailures: true}); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Errorf("resume of a changed input: %v, want it refused without --force", err)
	}
	resume(t, c, e.JobID, worker.RequeueOptions{RetryFailures: true, Force: true})
	waitDone(t, c, e.JobID)
	if rec := latestRecords(t, c, e.JobID)[1]; rec.Class != classify.Unknown || string(rec.Input) != `{"id":"w1","word":"b"}` {
		t.Errorf("idx 1 after the forced resume: class %q, input %s; want the fixed line succeeded", rec.Class, rec.Input)
	}
}

func TestAnItemWithoutItsInputIsCanceledAndAResumeRunsIt(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeLines(t, []string{`{"id": "w0", "word": "a"}`, `{"id": "w1", "word": "b"}`}))
	conn := connect(t, dsn)
	if _, err := conn.Exec(t.Context(), `DELETE FROM tenax_inputs WHERE job_id = $1 AND idx = 1`, e.JobID); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateIncomplete {
		t.Errorf("job state %s, want incomplete: the item without its input is pending, not failed", st)
	}
	var state string
	var errs []byte
	if err := conn.QueryRow(t.Context(), `SELECT state, errors::text FROM river_job WHERE queue = $1`, e.Queue).Scan(&state, &errs); err != nil {
		t.Fatal(err)
	}
	if state != "cancelled" || !bytes.Contains(errs, []byte("item 1 of job")) || !bytes.Contains(errs, []byte("tenax resume "+e.JobID)) {
		t.Errorf("River job of idx 0 and 1: %s with errors %s, want cancelled naming item 1 and saying to resume", state, errs)
	}
	if recs := latestRecords(t, c, e.JobID); len(recs) != 1 || recs[0].Class != classify.Unknown {
		t.Errorf("records %v before the resume, want item 0's alone, succeeded beside the item without its input", recs)
	}
	resume(t, c, e.JobID, worker.RequeueOptions{})
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Errorf("job state %s after the resume, want completed", st)
	}
}

func TestDeletingAJobDeletesItsInputs(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	keep := enqueue(t, c, writeLines(t, []string{`{"id": "k", "word": "a"}`}))
	gone := enqueue(t, c, writeLines(t, []string{`{"id": "g", "word": "a"}`, `{"id": "h", "word": "b"}`}))
	conn := connect(t, dsn)
	// From a session with another search_path, as an operator's psql.
	if _, err := conn.Exec(t.Context(), `SET search_path = public`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `DELETE FROM `+pgx.Identifier{c.Schema(), "tenax_jobs"}.Sanitize()+` WHERE id = $1`, gone.JobID); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `SET search_path = `+pgx.Identifier{c.Schema()}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	var left map[string]int
	rows, err := conn.Query(t.Context(), `SELECT job_id, count(*) FROM tenax_inputs GROUP BY job_id`)
	if err != nil {
		t.Fatal(err)
	}
	left = map[string]int{}
	var id string
	var k int
	if _, err := pgx.ForEachRow(rows, []any{&id, &k}, func() error { left[id] = k; return nil }); err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[keep.JobID] != 1 {
		t.Errorf("inputs left %v, want only job %s's one", left, keep.JobID)
	}
}

// stopEnqueueAfterFirst makes e's job look as if its enqueue stopped
// after its first River job: the others have neither a River job nor an
// input. It returns how many items that River job holds.
func stopEnqueueAfterFirst(t *testing.T, dsn string, e worker.Enqueued) int {
	t.Helper()
	conn := connect(t, dsn)
	var kept int
	if err := conn.QueryRow(t.Context(), `DELETE FROM river_job WHERE queue = $1 AND id <> (SELECT min(id) FROM river_job WHERE queue = $1)
		RETURNING (SELECT (args->>'n')::int FROM river_job WHERE queue = $1 ORDER BY id LIMIT 1)`, e.Queue).Scan(&kept); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(t.Context(), `DELETE FROM tenax_inputs WHERE job_id = $1 AND idx >= $2`, e.JobID, kept); err != nil {
		t.Fatal(err)
	}
	return kept
}

// olderWorker is a worker from before ItemKind: it knows only
// LegacyItemKind.
type olderWorker struct {
	river.WorkerDefaults[worker.LegacyItemArgs]
	t *testing.T
}

func (o *olderWorker) Work(context.Context, *river.Job[worker.LegacyItemArgs]) error {
	o.t.Errorf("an older worker ran an item enqueued with its input in tenax_inputs, which it cannot read")
	return nil
}

// retryAtOnce is the older worker's retry policy, shortened.
type retryAtOnce struct{}

func (retryAtOnce) NextRetry(*rivertype.JobRow) time.Time { return time.Now() }

func TestAnOlderWorkerLeavesNewItemsToCurrentWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 20
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	ws := river.NewWorkers()
	river.AddWorker(ws, &olderWorker{t: t})
	old, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Schema: c.Schema(), Queues: map[string]river.QueueConfig{e.Queue: {MaxWorkers: 4}}, Workers: ws,
		RetryPolicy: retryAtOnce{}, FetchPollInterval: 50 * time.Millisecond, FetchCooldown: 10 * time.Millisecond, Logger: quiet(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn := connect(t, dsn)
	waitFor(t, "the older worker to try every River job", func() (bool, error) {
		var tried, all int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FILTER (WHERE errors IS NOT NULL), count(*) FROM river_job WHERE queue = $1`, e.Queue).Scan(&tried, &all)
		return tried == all, err
	})
	if err := old.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 8})
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Errorf("job state %s, want completed by the current worker", st)
	}
	oneRecordEach(t, dsn, e.JobID, n, "after an older worker tried them")
}

func TestTwoResumesAtOnceStoreTheMissingInputsWithoutFailing(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 30
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	stopEnqueueAfterFirst(t, dsn, e)
	// Both find the same inputs missing and store them.
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			_, err := c.Requeue(t.Context(), e.JobID, worker.RequeueOptions{})
			errs <- err
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("a resume beside another: %v, want both to succeed", err)
		}
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, Concurrency: 8})
	waitDone(t, c, e.JobID)
	oneRecordEach(t, dsn, e.JobID, n, "after two resumes at once")
}

// TestEnqueueStoresIDsThatTextCannotHold enqueues items whose id holds
// what PostgreSQL's text refuses (a NUL, an unpaired surrogate) or is a
// number or no string at all: the binary COPY stores each id as the
// resumes' INSERT would, NUL and invalid UTF-8 replaced, a number as its
// text, anything else NULL, and the line itself byte for byte.
func TestEnqueueStoresIDsThatTextCannotHold(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	cases := []struct {
		line string
		id   *string
	}{
		{`{"id": "a\u0000b", "word": "x"}`, ptr("a\uFFFDb")},
		{`{"id": "\ud800z", "word": "x"}`, ptr("\uFFFDz")},
		{`{"word": "x", "id": -1.5e3}`, ptr("-1.5e3")},
		{`{"id": ["n"], "word": "x"}`, nil},
		{`{"word": "x"}`, nil},
	}
	lines := make([]string, len(cases))
	for i, tc := range cases {
		lines[i] = tc.line
	}
	e := enqueue(t, c, writeLines(t, lines))
	conn := connect(t, dsn)
	for idx, tc := range cases {
		var id *string
		var in []byte
		if err := conn.QueryRow(t.Context(), `SELECT id, input FROM tenax_inputs WHERE job_id = $1 AND idx = $2`, e.JobID, idx).Scan(&id, &in); err != nil {
			t.Fatalf("tenax_inputs of idx %d: %v", idx, err)
		}
		if (id == nil) != (tc.id == nil) || (id != nil && *id != *tc.id) || string(in) != tc.line {
			t.Errorf("line %s stored as id %v, input %q; want id %v and the line byte for byte", tc.line, deref(id), in, deref(tc.id))
		}
	}
}

func ptr(s string) *string { return &s }

// deref shows an id that may be NULL.
func deref(s *string) string {
	if s == nil {
		return "NULL"
	}
	return fmt.Sprintf("%q", *s)
}
