package worker_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/worker"
)

// agentChildEnv, set, makes TestAnAgentItemOfAKilledWorkerGoesOnAtItsLastStep
// the worker process it kills, on the job the variable names (the DSN in
// crashDSNEnv).
const agentChildEnv = "TENAX_TEST_AGENT_CHILD_JOB"

// agentKillSpec is an agent job on the in-process mock: one exec tool,
// idempotent, that notes each run in the file "started" and then waits
// while the file "hold" exists, so that the test can kill a worker while
// its items are in the tool. The mock logs every request, from every
// worker, to requests.jsonl.
const agentKillSpec = `name: agent-kill
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
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}"}
      idempotent: true
retry: {max_attempts: 5, backoff: {base: 5ms, max: 20ms}}
breaker: {threshold: 100}
cache: {enabled: false}
mock:
  seed: 7
  latency: 1ms
  log_requests: requests.jsonl
`

// TestAnAgentItemOfAKilledWorkerGoesOnAtItsLastStep: a worker process is
// killed with -9 while its agent items wait in a tool, their first
// answers recorded in tenax_notes; River rescues the items and another
// worker takes them up. It replays the recorded steps rather than asking
// the model again: from the mock's request log (both workers'), no
// model request for an item's step was answered twice, and each item
// has one record, its transcript in tenax_notes, having gone on past the
// step it was killed in.
func TestAnAgentItemOfAKilledWorkerGoesOnAtItsLastStep(t *testing.T) {
	const childConcurrency = 4 // runCrashChild's
	if jobID := os.Getenv(agentChildEnv); jobID != "" {
		runCrashChild(t, os.Getenv(crashDSNEnv), jobID)
		return
	}
	dsn := testDSN(t)
	c := open(t, dsn)
	const n = 8
	dir, path := writeJobDir(t, agentKillSpec, map[string]string{
		"words.jsonl": words(n),
		"tool.sh":     "#!/bin/sh\necho run >> started\nwhile [ -e hold ]; do sleep 0.01; done\nwc -c\n",
		"hold":        "",
	})
	hold := filepath.Join(dir, "hold")
	t.Cleanup(func() { _ = os.Remove(hold) }) // the killed worker's tools end
	e := enqueue(t, c, path)

	child := exec.Command(os.Args[0], "-test.run=^TestAnAgentItemOfAKilledWorkerGoesOnAtItsLastStep$")
	child.Env = append(os.Environ(), agentChildEnv+"="+e.JobID, crashDSNEnv+"="+dsn)
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
	// The tool's runs are counted by the tool itself, not read from the
	// step log: a worker that kept no steps is held there all the same.
	waitFor(t, "the child's items to wait in their tool", func() (bool, error) {
		b, err := os.ReadFile(filepath.Join(dir, "started"))
		if os.IsNotExist(err) {
			return false, nil
		}
		return strings.Count(string(b), "\n") >= 2, err
	})
	// Then until no model call can be under way: each of the child's
	// places (its Concurrency, 4) is an item waiting in a tool whose
	// start mark is in tenax_notes, or no item is left to take it. A
	// kill between the mock's answer and its step's commit pays that
	// answer again, a window no client closes (docs/agents.md); killing
	// at two tools started landed in it (one run in a few, under load).
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	waitFor(t, "every place of the child to hold an item in its tool", func() (bool, error) {
		var recorded int
		err := conn.QueryRow(t.Context(), `SELECT count(DISTINCT idx) FROM tenax_records WHERE job_id = $1`, e.JobID).Scan(&recorded)
		return err == nil && len(itemsInTool(t, dsn, e.JobID)) >= min(childConcurrency, n-recorded), err
	})
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	killed = true
	inTool := itemsInTool(t, dsn, e.JobID)
	if len(inTool) == 0 {
		t.Fatal("no item has a tool started and no result in tenax_notes after the kill: the worker recorded no steps")
	}
	// As if RescueAfter had passed since the killed worker's last
	// heartbeat.
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

	for step, paid := range paidSteps(t, filepath.Join(dir, "requests.jsonl")) {
		if paid > 1 {
			t.Errorf("the model was paid %d times for %s: a step recorded by the killed worker was asked again", paid, step)
		}
	}
	j, err := c.Store().OpenReadOnly(t.Context(), e.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	err = j.Scan(t.Context(), func(r store.Record) error {
		if r.Agent == nil || r.Agent.Transcript == nil || r.Agent.Transcript.Log != "tenax_notes" {
			t.Errorf("item %d's record names no transcript in tenax_notes: %+v", r.Idx, r.Agent)
			return nil
		}
		if step, ok := inTool[r.Idx]; ok && (r.Failed() || r.Agent.Steps <= step) {
			t.Errorf("item %d, killed in its tool at step %d, ended with %d steps (error %q): want it gone on past that step",
				r.Idx, step, r.Agent.Steps, r.Error)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d items were killed in their tool", len(inTool))
}

// writeJobDir writes the directory of an agent test's job: spec as
// job.yaml beside files (name → content; a name ending in .sh is
// executable, a tool's script), and returns the directory and job.yaml's
// path. The agent tests' jobs differ only in these.
func writeJobDir(t *testing.T, spec string, files map[string]string) (dir, path string) {
	t.Helper()
	dir = t.TempDir()
	files = maps.Clone(files)
	files["job.yaml"] = spec
	for name, content := range files {
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), mode); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, "job.yaml")
}

// words is n items, {"word": "word00"} and on, a line each.
func words(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"word": "word%02d"}`+"\n", i)
	}
	return b.String()
}

// itemsInTool reads the job's agent steps in tenax_notes and returns the
// items with a tool started and no result, each with its step.
func itemsInTool(t *testing.T, dsn, jobID string) map[int]int {
	t.Helper()
	conn, err := pgx.Connect(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(t.Context(), `SELECT kind, note FROM tenax_notes WHERE job_id = $1 AND kind LIKE 'agent-steps:%' ORDER BY seq`, jobID)
	if err != nil {
		t.Fatal(err)
	}
	type call struct{ idx, n, conv, step, call int }
	open := map[call]bool{}
	var kind string
	var note []byte
	_, err = pgx.ForEachRow(rows, []any{&kind, &note}, func() error {
		var idx int
		if _, err := fmt.Sscanf(kind, "agent-steps:%d", &idx); err != nil {
			return err
		}
		var e struct {
			Kind                string
			N, Conv, Step, Call int
		}
		if err := json.Unmarshal(note, &e); err != nil {
			return err
		}
		k := call{idx, e.N, e.Conv, e.Step, e.Call}
		switch e.Kind {
		case "start":
			open[k] = true
		case "result":
			delete(open, k)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]int{}
	for k := range open {
		out[k.idx] = max(out[k.idx], k.step)
	}
	return out
}

// paidSteps counts the mock's answered model requests by the item's step
// they asked: the conversation's first question and the number of
// tool-calling turns before it.
func paidSteps(t *testing.T, path string) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	paid := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var l struct {
			Method, Path, Outcome, Fault string
			Status                       int
			Request                      struct {
				Messages []struct {
					Role      string
					Content   json.RawMessage
					ToolCalls json.RawMessage `json:"tool_calls"`
				}
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("requests.jsonl: %v", err)
		}
		// A served mock answers a call whose client died ("abandoned"),
		// as a provider bills it; a GET lists stored completions, no
		// model call.
		if l.Method != "POST" || l.Path != "/v1/chat/completions" || l.Outcome != "answered" && l.Outcome != "abandoned" || l.Status != 200 || l.Fault != "" {
			continue
		}
		question, turns := "", 0
		for _, m := range l.Request.Messages {
			switch {
			case m.Role == "user" && question == "":
				question = string(m.Content)
			case m.Role == "assistant" && len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null":
				turns++
			}
		}
		paid[fmt.Sprintf("%s step %d", question, turns+1)]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(paid) == 0 {
		t.Fatalf("%s holds no answered model request", path)
	}
	return paid
}
