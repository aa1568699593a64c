package worker_test

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// storedChildEnv, set, makes TestAWorkerKilledWithAModelCallInFlightPaysItOnceWithStore
// the worker process it kills, on the job the variable names.
const storedChildEnv = "TENAX_TEST_STORED_CHILD_JOB"

// storedAgentSpec is an agent job with task.store on a mock served by
// the test (it outlives the killed worker), every model call taking a
// second.
const storedAgentSpec = `name: agent-stored
input: words.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${TENAX_TEST_STORED_KEY}
  model: mock-agent
  prompt: "Tell me about the word '{{.word}}'."
  timeout: 20s
  store: true
  max_steps: 6
  max_consecutive_errors: 6
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [wc, -c], stdin: "{{.args.text}}"}
      idempotent: true
retry: {max_attempts: 4, backoff: {base: 5ms, max: 20ms}}
cache: {enabled: false}
`

// lockedWriter is the mock's request log, written by its handlers.
type lockedWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// TestAWorkerKilledWithAModelCallInFlightPaysItOnceWithStore: a worker
// process is killed with -9 while its agent items' model calls are in
// flight at a provider that outlives it (the mock answers them all the
// same, as a provider bills them), their ask marks in tenax_notes. The
// worker that takes the items up reads those answers back from the
// stored completions: from the mock's request log, no model call was
// paid twice, and each item has one record.
func TestAWorkerKilledWithAModelCallInFlightPaysItOnceWithStore(t *testing.T) {
	if jobID := os.Getenv(storedChildEnv); jobID != "" {
		runCrashChild(t, os.Getenv(crashDSNEnv), jobID)
		return
	}
	t.Setenv("TENAX_TEST_STORED_KEY", "mock-key") // the child's too
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 4
	dirLog := t.TempDir()
	logPath := filepath.Join(dirLog, "requests.jsonl")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := mock.New(mock.Config{Seed: 5, Latency: time.Second, Record: true, LogRequests: &lockedWriter{f: f}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	_, path := writeJobDir(t, fmt.Sprintf(storedAgentSpec, ts.URL), map[string]string{"words.jsonl": words(n)})
	e := enqueue(t, c, path)

	child := exec.Command(os.Args[0], "-test.run=^TestAWorkerKilledWithAModelCallInFlightPaysItOnceWithStore$")
	child.Env = append(os.Environ(), storedChildEnv+"="+e.JobID, crashDSNEnv+"="+dsn)
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
	// More calls than items have reached the mock: some second steps,
	// each unanswered for a second.
	waitFor(t, "the child's model calls to be in flight", func() (bool, error) { return len(srv.Requests()) > n, nil })
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if _, err := conn.Exec(t.Context(), `UPDATE river_job SET attempted_at = now() - interval '1 hour' WHERE queue = $1 AND state = 'running'`, e.Queue); err != nil {
		t.Fatal(err)
	}
	startWorkers(t, c, 1, worker.Config{Jobs: []string{e.JobID}, RescueAfter: 6 * time.Second, Concurrency: 4})
	waitFor(t, "the killed worker's items to be rescued and finished", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, n, "(taken up after the kill)")
	_ = srv.Close()
	ts.Close() // every handler done: the log is whole
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(log, []byte(`"outcome":"abandoned"`)) == 0 {
		t.Fatal("no model call was in flight at the kill (none abandoned in the mock's log): the test shows nothing")
	}
	for step, paid := range paidSteps(t, logPath) {
		if paid > 1 {
			t.Errorf("the model was paid %d times for %s: a call in flight at the kill was asked again", paid, step)
		}
	}
}
