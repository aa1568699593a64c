package worker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// groupsChildEnv, set, makes TestAWorkerTakingUpAKilledWorkersItemEndsItsToolsProcesses
// the worker process it kills, on the job the variable names.
const groupsChildEnv = "TENAX_TEST_GROUPS_CHILD_JOB"

// groupsKillSpec is agentKillSpec with a tool whose first run for an
// item starts `sleep 300` in the background — in the tool's process
// group, with no death signal of its own — and notes its pid in
// sleep.<word>.
const groupsKillSpec = `name: agent-groups
input: words.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  prompt: "Tell me about the word '{{.word}}'."
  max_steps: 8
  max_consecutive_errors: 4
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}", env: {WORD: "{{.word}}"}}
      idempotent: true
retry: {max_attempts: 5, backoff: {base: 5ms, max: 20ms}}
breaker: {threshold: 100}
cache: {enabled: false}
mock:
  seed: 7
  latency: 1ms
`

// TestAWorkerTakingUpAKilledWorkersItemEndsItsToolsProcesses: a worker
// is killed with -9 while its agent items wait in an exec tool that
// started `sleep 300` in its process group. The tool's command dies with
// the worker; the sleep does not. When another worker of the same host
// takes the rescued items up, it ends the groups the killed one left
// (recorded in tenax_notes) before the tool runs again: every sleep is
// gone, and each such item's record says its group was ended.
func TestAWorkerTakingUpAKilledWorkersItemEndsItsToolsProcesses(t *testing.T) {
	if jobID := os.Getenv(groupsChildEnv); jobID != "" {
		runCrashChild(t, os.Getenv(crashDSNEnv), jobID)
		return
	}
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 4 // the child's Concurrency: every item is in its tool at once
	dir, path := writeJobDir(t, groupsKillSpec, map[string]string{
		"words.jsonl": words(n),
		"tool.sh": "#!/bin/sh\n" +
			"if [ ! -e sleep.$WORD ]; then sleep 300 </dev/null >/dev/null 2>&1 & echo $! > sleep.$WORD.tmp; mv sleep.$WORD.tmp sleep.$WORD; fi\n" +
			"while [ -e hold ]; do sleep 0.01; done\nwc -c\n",
		"hold": "",
	})
	hold := filepath.Join(dir, "hold")
	sleeps := func() map[string]int {
		out := map[string]int{}
		paths, _ := filepath.Glob(filepath.Join(dir, "sleep.word*"))
		for _, p := range paths {
			if strings.HasSuffix(p, ".tmp") {
				continue
			}
			b, err := os.ReadFile(p)
			pid, perr := strconv.Atoi(strings.TrimSpace(string(b)))
			if err == nil && perr == nil {
				out[filepath.Base(p)] = pid
			}
		}
		return out
	}
	t.Cleanup(func() {
		_ = os.Remove(hold)
		for _, pid := range sleeps() {
			_ = syscall.Kill(pid, syscall.SIGKILL) // whatever the test left
		}
	})
	e := enqueue(t, c, path)

	child := exec.Command(os.Args[0], "-test.run=^TestAWorkerTakingUpAKilledWorkersItemEndsItsToolsProcesses$")
	child.Env = append(os.Environ(), groupsChildEnv+"="+e.JobID, crashDSNEnv+"="+dsn)
	child.Stderr = os.Stderr
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
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	// Until every item has a record, or waits in its tool with its
	// sleep started and its group's note committed.
	waitFor(t, "every item of the child to wait in its tool, its group recorded", func() (bool, error) {
		var recorded, grouped int
		err := conn.QueryRow(t.Context(), `SELECT (SELECT count(DISTINCT idx) FROM tenax_records WHERE job_id = $1),
			(SELECT count(DISTINCT kind) FROM tenax_notes WHERE job_id = $1 AND kind LIKE 'process-groups:%')`, e.JobID).Scan(&recorded, &grouped)
		inTool := len(itemsInTool(t, dsn, e.JobID))
		return err == nil && inTool > 0 && inTool+recorded >= n && grouped >= inTool && len(sleeps()) >= inTool, err
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	left := sleeps()
	for name, pid := range left {
		if !running(pid) {
			t.Fatalf("%s's sleep (pid %d) died with the worker: the test shows nothing", name, pid)
		}
	}
	inTool := itemsInTool(t, dsn, e.JobID)
	if _, err := conn.Exec(t.Context(), `UPDATE river_job SET attempted_at = now() - interval '1 hour' WHERE queue = $1 AND state = 'running'`, e.Queue); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hold); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, RescueAfter: 6 * time.Second, Concurrency: 4})
	waitFor(t, "the killed worker's items to be rescued and finished", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "(taken up after the kill)")
	for name, pid := range left {
		if running(pid) {
			t.Errorf("%s's sleep (pid %d), left by the killed worker's tool, still runs after its item was taken up", name, pid)
		}
	}
	j, err := c.Store().OpenReadOnly(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	err = j.Scan(t.Context(), func(r store.Record) error {
		if _, ok := inTool[r.Idx]; !ok {
			return nil
		}
		if r.Agent == nil || len(r.Agent.LeftProcesses) != 1 || !strings.Contains(r.Agent.LeftProcesses[0], "ended (SIGKILL)") {
			t.Errorf("item %d, killed in its tool, has left_processes %q: want its one group, ended", r.Idx, r.Agent.LeftProcesses)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d sleeps left by the killed worker, all ended", len(left))
}

// running reports whether pid is a live process (not gone, not a zombie
// left for its new parent to reap).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && len(b) > i+2 && b[i+2] != 'Z' && b[i+2] != 'X'
}

// TestAnItemTakenUpOnAnotherHostSaysItsLeftProcessesMayRun: the groups a
// worker of another host left for an item cannot be ended from here; the
// worker that takes the rescued item up runs it and its record says so.
func TestAnItemTakenUpOnAnotherHostSaysItsLeftProcessesMayRun(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	_, path := writeJobDir(t, strings.Replace(groupsKillSpec, "./tool.sh", "cat", 1), map[string]string{"words.jsonl": `{"word": "far"}` + "\n"})
	e := enqueue(t, c, path)
	j, err := c.Store().Open(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	notes, ok := store.Notes(j)
	if !ok {
		t.Fatal("the PostgreSQL job keeps no notes")
	}
	far := `{"host":"far-away","boot":"b","pid":4242,"pid_start":"1","token":"t","pgid":4242,"started":true}`
	if err := notes.AppendNote(t.Context(), "process-groups:0", []byte(far)); err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	// As if its first execution had been on far-away's worker, rescued.
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(t.Context(), `UPDATE river_job SET attempt = 1 WHERE queue = $1`, e.Queue); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}})
	waitFor(t, "the item to finish", func() (bool, error) { return jobState(t, c, e.JobID) != store.StateRunning, nil })
	r, err := c.Store().OpenReadOnly(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var left []string
	if err := r.Scan(t.Context(), func(rec store.Record) error { left = rec.Agent.LeftProcesses; return nil }); err != nil {
		t.Fatal(err)
	}
	want := "process group 4242 of the worker (pid 4242) on host far-away that ran this item before: not ended, it is on another host"
	if len(left) != 1 || !strings.HasPrefix(left[0], want) {
		t.Errorf("left_processes %q, want one beginning %q", left, want)
	}
}
