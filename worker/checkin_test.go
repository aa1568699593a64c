package worker_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// asked is what a check-in showed, and the job's queue when it was asked.
type asked struct {
	q engine.CheckIn
	p worker.Progress
}

// checkInRecorder answers every check-in with answer and keeps what each
// showed, with the job's progress read while the question was open.
func checkInRecorder(t *testing.T, c *worker.Client, answer func(n int) bool) (*operator, func() []asked) {
	var (
		mu  sync.Mutex
		got []asked
	)
	op := &operator{checkIn: func(ctx context.Context, q engine.CheckIn) bool {
		p, err := c.Progress(ctx, q.JobID)
		if err != nil {
			t.Errorf("progress at a check-in: %v", err)
		}
		mu.Lock()
		got = append(got, asked{q, p})
		n := len(got)
		mu.Unlock()
		return answer(n)
	}}
	return op, func() []asked {
		mu.Lock()
		defer mu.Unlock()
		return append([]asked(nil), got...)
	}
}

// holdingCheckins waits until the attending terminal holds the job's
// check-ins, so that the workers started next count every item.
func holdingCheckins(t *testing.T, dsn, jobID string) {
	t.Helper()
	conn := connect(t, dsn)
	waitFor(t, "the terminal to hold the job's check-ins", func() (bool, error) {
		var n int
		err := conn.QueryRow(t.Context(), `SELECT count(*) FROM tenax_checkins WHERE job_id = $1 AND every > 0`, jobID).Scan(&n)
		return n == 1, err
	})
}

// TestCheckInsPauseEveryWorker is the regression test of checkin_every
// being ignored by workers: a job run by two workers, attended by a
// terminal, now stops after every 20 items with nothing running, shows the
// latest results, goes on when told, and is not asked once its last items
// are done.
func TestCheckInsPauseEveryWorker(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 60, "checkin_every: 20\nmock:\n  latency: 1ms\n"))
	op, seen := checkInRecorder(t, c, func(int) bool { return true })
	attend(t, c, e.JobID, "the test's terminal", op)
	holdingCheckins(t, dsn, e.JobID)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Fatalf("job state %s, want completed", st)
	}
	oneRecordEach(t, dsn, e.JobID, 60, "after two check-ins")
	got := seen()
	if len(got) != 2 {
		t.Fatalf("asked %d check-ins, want 2 (after 20 and 40 items; none once the 60 are done): %+v", len(got), got)
	}
	for i, a := range got {
		at := 20 * (i + 1)
		// The items the workers had taken when the count was reached
		// finish first: at most the two workers' two places each.
		if a.q.Stats.Done < at || a.q.Stats.Done > at+8 {
			t.Errorf("check-in %d after %d items, want %d to %d", i+1, a.q.Stats.Done, at, at+8)
		}
		if a.q.Stats.Total != 60 || a.q.Stats.Failed != 0 || len(a.q.Latest) != 5 {
			t.Errorf("check-in %d showed %d total, %d failed, %d latest records; want 60, 0 and 5", i+1, a.q.Stats.Total, a.q.Stats.Failed, len(a.q.Latest))
		}
		if ci := a.p.CheckIns; ci == nil || !ci.Due || ci.Every != 20 || ci.Next != int64(at) {
			t.Errorf("while check-in %d was asked, Progress.CheckIns = %+v; want due, every 20, next %d", i+1, ci, at)
		}
		if !a.p.Paused || a.p.Running != 0 || a.p.Finished != a.q.Stats.Done {
			t.Errorf("while check-in %d was asked the queue was paused=%v with %d running and %d finished; want paused, 0 running, %d finished", i+1, a.p.Paused, a.p.Running, a.p.Finished, a.q.Stats.Done)
		}
	}
}

// TestAbortAtACheckInStopsTheJobUntilResumed: the operator's abort at a
// check-in stops the job on every worker, aborted with the reason one
// process gives and its items pending; a resume clears the stop and runs
// them, one record each.
func TestAbortAtACheckInStopsTheJobUntilResumed(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 60, "checkin_every: 20\nmock:\n  latency: 1ms\n"))
	op, seen := checkInRecorder(t, c, func(int) bool { return false })
	ctx, cancel := context.WithCancel(context.Background())
	attended := make(chan error, 1)
	go func() { attended <- c.Attend(ctx, e.JobID, "the test's terminal", op) }()
	holdingCheckins(t, dsn, e.JobID)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	cancel()
	if err := <-attended; err != nil {
		t.Fatalf("Attend: %v", err)
	}
	m := manifest(t, c, e.JobID)
	if m.State != store.StateAborted || !strings.Contains(m.StopReason, "aborted by the operator at a check-in") {
		t.Fatalf("job %s (%q), want aborted by the operator at a check-in", m.State, m.StopReason)
	}
	got := seen()
	if len(got) != 1 {
		t.Fatalf("asked %d check-ins, want 1", len(got))
	}
	p, err := c.Progress(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Paused || p.Finished != got[0].q.Stats.Done || p.Waiting != 60-got[0].q.Stats.Done {
		t.Errorf("after the abort: %+v; want the queue paused with the %d items not done waiting", p, 60-got[0].q.Stats.Done)
	}

	resume(t, c, e.JobID, worker.RequeueOptions{})
	waitFor(t, "the resumed job to complete", func() (bool, error) {
		return jobState(t, c, e.JobID) == store.StateCompleted, nil
	})
	oneRecordEach(t, dsn, e.JobID, 60, "after an abort at a check-in and a resume")
}

// TestATerminalLeavingDuringACheckInLeavesTheJobRunning: when the terminal
// that holds the job's check-ins goes away while one is asked (its Attend
// ends, as when tenax run is stopped), the job's queue is resumed and the
// workers finish the job; nobody is left holding it for an answer.
func TestATerminalLeavingDuringACheckInLeavesTheJobRunning(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 60, "checkin_every: 20\nmock:\n  latency: 1ms\n"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	asking := make(chan struct{})
	op := &operator{checkIn: func(ctx context.Context, _ engine.CheckIn) bool {
		close(asking)
		<-ctx.Done()
		return false
	}}
	attended := make(chan error, 1)
	go func() { attended <- c.Attend(ctx, e.JobID, "the test's terminal", op) }()
	holdingCheckins(t, dsn, e.JobID)
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	<-asking
	cancel()
	if err := <-attended; err != nil {
		t.Fatalf("Attend: %v", err)
	}
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Fatalf("job state %s, want completed: the check-in's pause outlived its terminal", st)
	}
	oneRecordEach(t, dsn, e.JobID, 60, "after the terminal left a check-in")
}

// TestWorkersReleaseACheckInWhoseTerminalDied: a terminal killed while a
// check-in is due (no Attend left to end it) stops marking the job
// attended; a worker then resumes the queue, and the job finishes.
func TestWorkersReleaseACheckInWhoseTerminalDied(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	e := enqueue(t, c, writeJob(t, 30, "checkin_every: 10\nmock:\n  latency: 1ms\n"))
	conn := connect(t, dsn)
	// What a killed terminal leaves: a due check-in, the queue paused, and
	// its last mark older than a terminal's mark speaks for.
	for _, q := range []struct {
		sql string
		arg string
	}{
		{`INSERT INTO tenax_checkins (job_id, every, done, next, due) VALUES ($1, 10, 10, 10, true)`, e.JobID},
		{`INSERT INTO tenax_breakers (job_id, attended) VALUES ($1, now() - interval '1 minute')`, e.JobID},
		{`INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at) VALUES ($1, now(), '{}', now(), now())`, e.Queue},
	} {
		if _, err := conn.Exec(t.Context(), q.sql, q.arg); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	startWorkers(t, c, 2, worker.Config{Jobs: []string{e.JobID}, Concurrency: 2})
	waitDone(t, c, e.JobID)
	if st := jobState(t, c, e.JobID); st != store.StateCompleted {
		t.Fatalf("job state %s, want completed", st)
	}
	var every int
	var due bool
	if err := conn.QueryRow(t.Context(), `SELECT every, due FROM tenax_checkins WHERE job_id = $1`, e.JobID).Scan(&every, &due); err != nil {
		t.Fatal(err)
	}
	if every != 0 || due {
		t.Errorf("check-ins every %d, due %v after the terminal died; want 0 and false (nobody holds them)", every, due)
	}
}
