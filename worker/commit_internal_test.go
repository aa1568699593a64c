package worker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"

	"github.com/tenaxhq/tenax/internal/pgtest"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
)

// TestAGroupIsWrittenByItsIntervalAtTheLatest: a record waits for others
// to join its group no longer than the group's interval, and not at all
// when the group is full, when no execution is left whose record could
// join it, or when the job stops here. In fake time, so the waits are
// exact.
func TestAGroupIsWrittenByItsIntervalAtTheLatest(t *testing.T) {
	cases := []struct {
		name     string
		records  int
		calling  int  // executions still in the engine
		stopped  bool // the job stopped here
		wantWait time.Duration
		wantSize []int // the groups written, in order
	}{
		{name: "others still calling", records: 1, calling: 3, wantWait: groupWait, wantSize: []int{1}},
		{name: "full", records: 4, calling: 9, wantWait: 0, wantSize: []int{4}},
		{name: "fuller than full", records: 6, calling: 9, wantWait: groupWait, wantSize: []int{4, 2}},
		{name: "nobody else calling", records: 1, calling: 0, wantWait: 0, wantSize: []int{1}},
		{name: "stopped", records: 2, calling: 5, stopped: true, wantWait: 0, wantSize: []int{1, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				stop := make(chan struct{})
				if tc.stopped {
					close(stop)
				}
				var (
					mu      sync.Mutex
					sizes   []int
					longest time.Duration
				)
				start := time.Now()
				c := &committer{max: 4, wait: groupWait, calling: func() int { return tc.calling }, stop: stop,
					write: func(_ context.Context, entries []*pending) error {
						mu.Lock()
						defer mu.Unlock()
						sizes = append(sizes, len(entries))
						longest = max(longest, time.Since(start))
						return nil
					}}
				var wg sync.WaitGroup
				for i := range tc.records {
					wg.Go(func() {
						if err := c.add(context.Background(), &pending{rec: postgres.Encoded{Idx: int64(i)}}); err != nil {
							t.Errorf("record %d: %v", i, err)
						}
					})
					synctest.Wait() // in order: each joins before the next
				}
				wg.Wait()
				if longest != tc.wantWait {
					t.Errorf("the last group was written %s after the first record, want %s", longest, tc.wantWait)
				}
				if fmt.Sprint(sizes) != fmt.Sprint(tc.wantSize) {
					t.Errorf("groups of %v written, want %v", sizes, tc.wantSize)
				}
			})
		})
	}
}

// TestTheLastCallerLeavingWritesTheGroup: a group waiting for records
// still to come is written as soon as the last execution in the engine
// leaves it without one, not at the end of its interval.
func TestTheLastCallerLeavingWritesTheGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calling sync.Mutex
		n := 1
		c := &committer{max: 10, wait: groupWait, stop: make(chan struct{}),
			calling: func() int { calling.Lock(); defer calling.Unlock(); return n },
			write:   func(context.Context, []*pending) error { return nil }}
		start := time.Now()
		var written time.Duration
		go func() {
			_ = c.add(context.Background(), &pending{})
			written = time.Since(start)
		}()
		synctest.Wait()
		time.Sleep(groupWait / 4)
		calling.Lock()
		n = 0
		calling.Unlock()
		c.recheck()
		synctest.Wait()
		if written != groupWait/4 {
			t.Errorf("written %s after the record, want at once when the last caller left (%s)", written, groupWait/4)
		}
	})
}

// TestAGroupsRecordsAndCompletionsCommitTogether: a group's claims,
// records and River job completions are one transaction: all of them
// visible once it is written, none of them when it fails midway (here
// stopped while it waits for a River job's row another transaction
// holds, canceled by the server). A record whose round is claimed already adds nothing, and its
// River job is completed all the same.
func TestAGroupsRecordsAndCompletionsCommitTogether(t *testing.T) {
	dsn := pgtest.AbsentDSN(t, "tenax_wtest_")
	ctx := t.Context()
	c, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, riverJobs := runningItems(t, c, 6)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	count := func(query string) int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, query, r.jobID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const (
		records   = `SELECT count(*) FROM tenax_records WHERE job_id = $1`
		claims    = `SELECT count(*) FROM tenax_finals WHERE job_id = $1`
		completed = `SELECT count(*) FROM river_job WHERE args->>'job' = $1 AND state = 'completed'`
	)

	// Items 0–2, with item 2's River job locked by another transaction:
	// the group waits for it, and fails when the server cancels it.
	lockConn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer lockConn.Close(context.Background())
	lock, err := lockConn.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var holder int32
	if err := lock.QueryRow(ctx, `SELECT pg_backend_pid() FROM river_job WHERE id = $1 FOR UPDATE`, riverJobs[2].ID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	failed := make(chan error, 1)
	go func() { failed <- r.writeGroup(ctx, entriesOf(t, riverJobs[:3], 1)) }()
	blocked := waitForLockWait(t, conn, holder)
	if _, err := conn.Exec(ctx, `SELECT pg_cancel_backend($1)`, blocked); err != nil {
		t.Fatal(err)
	}
	if err := <-failed; err == nil {
		t.Fatal("the group whose transaction was stopped midway reported success")
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if got := [3]int{count(records), count(claims), count(completed)}; got != [3]int{} {
		t.Errorf("after a group failed midway: %d records, %d claims, %d River jobs completed; want none of any", got[0], got[1], got[2])
	}

	// Items 0–3, then a group holding item 3 again (a duplicate
	// execution of its round) with items 4–5.
	first := entriesOf(t, riverJobs[:4], 1)
	if err := r.writeGroup(ctx, first); err != nil {
		t.Fatal(err)
	}
	if got := [3]int{count(records), count(claims), count(completed)}; got != [3]int{4, 4, 4} {
		t.Errorf("after a group of 4: %d records, %d claims, %d River jobs completed; want 4 of each", got[0], got[1], got[2])
	}
	// River job 3 is running again, as a rescued duplicate would be.
	if _, err := conn.Exec(ctx, `UPDATE river_job SET state = 'running', finalized_at = NULL WHERE id = $1`, riverJobs[3].ID); err != nil {
		t.Fatal(err)
	}
	second := entriesOf(t, riverJobs[3:], 1)
	if err := r.writeGroup(ctx, second); err != nil {
		t.Fatal(err)
	}
	for i, p := range append(first, second...) {
		if want := i != len(first); p.added != want {
			t.Errorf("item %d (entry %d): added %v, want %v", p.rec.Idx, i, p.added, want)
		}
	}
	if got := [3]int{count(records), count(claims), count(completed)}; got != [3]int{6, 6, 6} {
		t.Errorf("after the second group: %d records, %d claims, %d River jobs completed; want 6 of each (item 3 once)", got[0], got[1], got[2])
	}
}

// runningItems enqueues a job of n items and marks their River jobs
// running, as a worker's fetch does; it returns a runner of the job with
// no engine, and the River jobs in idx order.
func runningItems(t *testing.T, c *Client, n int) (*runner, []*river.Job[ItemArgs]) {
	t.Helper()
	ctx := t.Context()
	dir := t.TempDir()
	var in strings.Builder
	for i := range n {
		fmt.Fprintf(&in, "{\"id\": \"g%d\", \"word\": \"w%d\"}\n", i, i)
	}
	// A concurrency of one: each River job holds one item, which the
	// tests complete with its record.
	spec := "name: groups\ninput: items.jsonl\nconcurrency: {max: 1}\ntask: {type: llm, provider: mock, model: mock-json, prompt: \"Say {{.word}}\"}\n"
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(in.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cr, err := job.Create(ctx, filepath.Join(dir, "job.yaml"), c.Store(), job.Options{Home: t.TempDir(), Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer cr.Job.Close()
	e, err := c.Enqueue(ctx, cr)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.pool.Query(ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now()
		WHERE queue = $1 RETURNING id, (args->>'items')::bigint`, e.Queue)
	if err != nil {
		t.Fatal(err)
	}
	jobs := make([]*river.Job[ItemArgs], n)
	var id, idx int64
	if _, err := pgx.ForEachRow(rows, []any{&id, &idx}, func() error {
		jobs[idx] = &river.Job[ItemArgs]{Args: ItemArgs{Job: e.JobID, Idx: int(idx), Round: 1}}
		jobs[idx].JobRow = &rivertype.JobRow{ID: id}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sj, err := c.store.Open(ctx, e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	w := &Worker{c: c, log: log, cfg: Config{DBOutageLimit: time.Minute}}
	w.hard, w.stopNow = context.WithCancel(context.Background())
	t.Cleanup(w.stopNow)
	return &runner{w: w, jobID: e.JobID, queue: e.Queue, sj: sj.(*postgres.Job)}, jobs
}

// entriesOf makes the pending records of the items the River jobs run:
// each succeeded, in round.
func entriesOf(t *testing.T, jobs []*river.Job[ItemArgs], round int) []*pending {
	t.Helper()
	out := make([]*pending, len(jobs))
	for i, j := range jobs {
		enc, err := postgres.Encode(store.Record{Idx: j.Args.Idx, Output: []byte(`"ok"`), FinishedAt: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		out[i] = &pending{x: &execution{idx: j.Args.Idx, round: round, riverID: j.ID}, rec: enc}
	}
	return out
}

// waitForLockWait polls until a session waits for a lock the session
// holder holds, and returns its pid.
func waitForLockWait(t *testing.T, conn *pgx.Conn, holder int32) int32 {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; {
		var pid int32
		err := conn.QueryRow(t.Context(), `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) LIMIT 1`, holder).Scan(&pid)
		if err == nil {
			return pid
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the group never waited for the locked River job")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAGroupCommitsDurablyWhenTheSessionTurnedSynchronousCommitOff: with
// synchronous_commit off in the DSN, a group's transaction committed
// without waiting for its WAL, so a crash of PostgreSQL could lose a
// group whose River completions the worker's completer then replayed
// without their records (items lost). The group's statement sets local
// for its own transaction; other settings are kept.
func TestAGroupCommitsDurablyWhenTheSessionTurnedSynchronousCommitOff(t *testing.T) {
	cases := []struct{ session, want string }{
		{"off", "local"},
		{"remote_apply", "remote_apply"},
		{"on", "on"},
	}
	dsn := pgtest.AbsentDSN(t, "tenax_wtest_") + "&options=-c%20synchronous_commit%3Doff"
	ctx := t.Context()
	c, err := Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, riverJobs := runningItems(t, c, len(cases))
	for i, tc := range cases {
		tx, err := c.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var before, after string
		if _, err := tx.Exec(ctx, "SET LOCAL synchronous_commit = "+tc.session); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&before); err != nil {
			t.Fatal(err)
		}
		rows, err := tx.Query(ctx, groupSQL, r.jobID, []int64{int64(i)}, []int32{1}, []bool{false},
			[]string{fmt.Sprintf(`{"_idx":%d}`, i)}, []int64{riverJobs[i].ID})
		if err != nil {
			t.Fatal(err)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRow(ctx, "SHOW synchronous_commit").Scan(&after); err != nil {
			t.Fatal(err)
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if after != tc.want {
			t.Errorf("a group written where synchronous_commit was %s commits with %s, want %s", before, after, tc.want)
		}
	}
	var session string
	if err := c.pool.QueryRow(ctx, "SHOW synchronous_commit").Scan(&session); err != nil {
		t.Fatal(err)
	}
	if session != "off" {
		t.Errorf("the DSN's synchronous_commit reads %s outside a group, want off kept for the session", session)
	}
}

// TestARiverJobOfSeveralItemsCompletesOnlyAfterItsEarlierRecords: the
// last record of a River job of several items joins a later commit group
// than the others; that group is written only once the earlier one is
// done, and completes the River job only if the earlier one committed —
// else the River job stays running, to run its items again, and none is
// left completed without its record. In fake time: "not written yet" is
// every goroutine blocked, not a sleep.
func TestARiverJobOfSeveralItemsCompletesOnlyAfterItsEarlierRecords(t *testing.T) {
	for _, tc := range []struct {
		name         string
		earlierErr   error
		wantComplete int64
	}{
		{name: "earlier group committed", wantComplete: 42},
		{name: "earlier group failed", earlierErr: errors.New("connection lost"), wantComplete: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				release := make(chan struct{})
				var (
					mu        sync.Mutex
					completes []int64 // the River job each write completed
				)
				c := &committer{max: 1, wait: groupWait, calling: func() int { return 1 }, stop: make(chan struct{}),
					write: func(_ context.Context, entries []*pending) error {
						mu.Lock()
						first := len(completes) == 0
						completes = append(completes, entries[0].riverID())
						mu.Unlock()
						if first {
							<-release
							return tc.earlierErr
						}
						return nil
					}}
				g := &groupRun{id: 42, remaining: 2}
				go func() { _ = c.add(context.Background(), &pending{x: &execution{idx: 0, round: 1, group: g}}) }()
				synctest.Wait()
				go func() { _ = c.add(context.Background(), &pending{x: &execution{idx: 1, round: 1, group: g}}) }()
				synctest.Wait()
				mu.Lock()
				if len(completes) != 1 {
					t.Errorf("%d groups written while the first was still being written, want the second to wait for it", len(completes))
				}
				mu.Unlock()
				close(release)
				synctest.Wait()
				mu.Lock()
				defer mu.Unlock()
				if len(completes) != 2 || completes[0] != 0 || completes[1] != tc.wantComplete {
					t.Errorf("the groups completed River jobs %v, want [0 %d]: the River job with its last record, and only if the earlier record committed", completes, tc.wantComplete)
				}
			})
		})
	}
}
