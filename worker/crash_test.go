package worker_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// crashChildEnv, set, makes TestAWorkerKilledBeforeItsGroupCommitsHasItsItemsRedone
// the worker process it kills: it runs a worker on the job the variable
// names, with the DSN in crashDSNEnv, until killed.
const (
	crashChildEnv = "TENAX_TEST_CRASH_CHILD_JOB"
	crashDSNEnv   = "TENAX_TEST_CRASH_CHILD_DSN"
)

// TestAWorkerKilledBeforeItsGroupCommitsHasItsItemsRedone: a worker
// process killed with -9 while its group's transaction waits (here for a
// lock the test holds; its connection dies with it) leaves no record of
// the group's items and their River jobs running; River rescues them,
// another worker runs them again, and each item ends with exactly one
// record.
func TestAWorkerKilledBeforeItsGroupCommitsHasItsItemsRedone(t *testing.T) {
	if jobID := os.Getenv(crashChildEnv); jobID != "" {
		runCrashChild(t, os.Getenv(crashDSNEnv), jobID)
		return
	}
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 12
	e := enqueue(t, c, writeJob(t, n, "mock:\n  latency: 1ms\n"))
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	// Every group's statement waits to claim its items in tenax_finals.
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
	if err := lock.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	if _, err := lock.Exec(ctx, `LOCK TABLE tenax_finals IN EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}

	child := exec.Command(os.Args[0], "-test.run=^TestAWorkerKilledBeforeItsGroupCommitsHasItsItemsRedone$")
	child.Env = append(os.Environ(), crashChildEnv+"="+e.JobID, crashDSNEnv+"="+dsn)
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	defer func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	}()
	go func() { // drain the child's output
		s := bufio.NewScanner(out)
		for s.Scan() {
			t.Log("child:", s.Text())
		}
	}()
	var blocked []int32
	waitFor(t, "the child's groups to wait for the lock", func() (bool, error) {
		rows, err := conn.Query(ctx, `SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE '%tenax_finals%'`, holder)
		if err != nil {
			return false, err
		}
		blocked, err = pgx.CollectRows(rows, pgx.RowTo[int32])
		return len(blocked) > 0, err
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	// The child's connections die with its machine: its statements end
	// uncommitted.
	for _, pid := range blocked {
		if _, err := conn.Exec(ctx, `SELECT pg_terminate_backend($1)`, pid); err != nil {
			t.Fatal(err)
		}
	}
	if err := lock.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	var records, running int
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM tenax_records WHERE job_id = $1),
		(SELECT count(*) FROM river_job WHERE queue = $2 AND state = 'running')`, e.JobID, e.Queue).Scan(&records, &running); err != nil {
		t.Fatal(err)
	}
	if records != 0 || running == 0 {
		t.Fatalf("after the kill: %d records and %d River jobs running; want none recorded and the killed worker's items running", records, running)
	}
	// As if RescueAfter had passed since the killed worker's last
	// heartbeat.
	if _, err := conn.Exec(ctx, `UPDATE river_job SET attempted_at = now() - interval '1 hour' WHERE queue = $1 AND state = 'running'`, e.Queue); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, RescueAfter: 6 * time.Second})
	waitFor(t, "the killed worker's items to be rescued and finished", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "(redone after the kill)")
	var rescued int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE queue = $1 AND errors::text LIKE '%rescued%'`, e.Queue).Scan(&rescued); err != nil {
		t.Fatal(err)
	}
	if rescued != running {
		t.Errorf("%d River jobs rescued, want the %d the killed worker ran", rescued, running)
	}
}

// runCrashChild runs a worker on the job until the parent kills it.
func runCrashChild(t *testing.T, dsn, jobID string) {
	c, err := worker.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg := worker.Config{Jobs: []string{jobID}, Concurrency: 4}
	cfg.Options.Home = t.TempDir()
	cfg.Options.Logger = quiet()
	w, err := c.NewWorker(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = w.Run(context.Background())
	t.Fatalf("the worker returned (%v) before it was killed", strings.TrimSpace(errString(err)))
}

func errString(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
