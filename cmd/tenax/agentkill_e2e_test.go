package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// agentKillSpec is an agent job on the in-process mock with faults on:
// two exec tools, lookup (idempotent) and note (not), both of which wait
// while the file "hold" exists, so that the test can stop every item in
// a tool before it kills tenax. The mock logs every request.
const agentKillSpec = `
name: agent-kill
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
    - name: note
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}"}
      idempotent: false
retry: {max_attempts: 10, max_hint: 20ms, backoff: {base: 5ms, max: 40ms}}
concurrency: {max: 4}
breaker: {threshold: 100}
cache: {enabled: false}
mock:
  seed: 11
  latency: {min: 1ms, max: 3ms}
  errors: {rate_limit: 0.04, server: 0.06, overloaded: 0.03}
  log_requests: requests.jsonl
`

// stepLogState is what steps.jsonl says of a run's progress.
type stepLogState struct {
	answers int          // every answer recorded
	final   map[int]bool // items with a final answer
	open    map[int]bool // items with a tool started after `since` and no result
}

// readStepLog reads steps.jsonl; tool starts before byte since (an
// earlier process's) do not count as open.
func readStepLog(t *testing.T, path string, since int64) (stepLogState, int64) {
	t.Helper()
	st := stepLogState{final: map[int]bool{}, open: map[int]bool{}}
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		b = b[:i+1]
	} else {
		b = nil
	}
	type key struct{ idx, n, conv, step, call int }
	started := map[key]bool{}
	var off int64
	for line := range bytes.Lines(b) {
		var l struct {
			Idx  int `json:"_idx"`
			Step struct {
				Kind          string
				N, Conv, Step int
				Call          int
				Calls         []json.RawMessage
			} `json:"step"`
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("steps.jsonl: %v: %q", err, line)
		}
		s := l.Step
		k := key{l.Idx, s.N, s.Conv, s.Step, s.Call}
		switch s.Kind {
		case "answer":
			st.answers++
			if len(s.Calls) == 0 {
				st.final[l.Idx] = true
			}
		case "start":
			if off >= since {
				started[k] = true
			}
		case "result":
			delete(started, k)
		}
		off += int64(len(line))
	}
	for k := range started {
		st.open[k.idx] = true
	}
	return st, off
}

// recordedIdx returns the idx that have a record in results.jsonl.
func recordedIdx(t *testing.T, path string) map[int]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[int]bool{}
	for line := range bytes.Lines(b) {
		var r struct {
			Idx *int `json:"_idx"`
		}
		if json.Unmarshal(line, &r) == nil && r.Idx != nil {
			out[*r.Idx] = true
		}
	}
	return out
}

// paidRequests counts the mock's answered model requests by the item's
// step they asked: the conversation's first question and the number of
// tool-calling turns before it. A fault's answer (a 429, a 500) is not
// paid for; an answer whose client left before it came ("abandoned", a
// served mock's) is, as a provider bills it; a GET lists stored
// completions and is no model call.
func paidRequests(t *testing.T, path string) map[string]int {
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
		if l.Method != "POST" || l.Path != "/v1/chat/completions" || l.Status != 200 || l.Fault != "" ||
			l.Outcome != "answered" && l.Outcome != "abandoned" {
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
	return paid
}

// heldAgent writes an agent job of n words, job.yaml from spec, whose
// tool.sh holds while the file it returns exists: a test creates it to
// keep every place of a run in its tool (where a kill is safe to land)
// and removes it to let them go; the test's end removes it, so the
// killed runs' tools end.
func (w *workdir) heldAgent(n int, spec string) (hold string) {
	var words strings.Builder
	for i := range n {
		fmt.Fprintf(&words, `{"word": "word%02d"}`+"\n", i)
	}
	w.write("words.jsonl", words.String(), 0o644)
	w.write("tool.sh", "#!/bin/sh\nwhile [ -e hold ]; do sleep 0.01; done\nwc -c\n", 0o755)
	w.write("job.yaml", spec, 0o644)
	hold = filepath.Join(w.dir, "hold")
	w.t.Cleanup(func() { _ = os.Remove(hold) })
	return hold
}

// TestKilledAgentRunsPayForNoModelRequestTwice: an agent job on the mock
// with faults is killed with SIGKILL at several moments — each when every
// slot holds an item in one of its tools, the tools waiting on a file —
// and resumed each time until it is done. From the mock's request log: no
// model request for an item's step was answered twice, so no recorded
// answer was paid for again; every item has one final record; an item
// killed in its non-idempotent tool fails naming it, one killed in the
// idempotent tool goes on.
func TestKilledAgentRunsPayForNoModelRequestTwice(t *testing.T) {
	const items, kills = 24, 4
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	w := newWorkdir(t)
	hold := w.heldAgent(items, agentKillSpec)

	var (
		id       string
		since    int64
		landed   int
		finished *tenaxProc
	)
	for round := 0; finished == nil; round++ {
		_ = os.Remove(hold)
		args := []string{"resume", id}
		if id == "" {
			args = []string{"run", "job.yaml"}
		}
		p := startTenax(ctx, t, w.dir, w.home, args...)
		if p.id == "" {
			t.Fatalf("round %d printed no job line: %v\n%s", round, <-p.exited, p.stderr)
		}
		id = p.id
		if round >= kills {
			finished = p
			break
		}
		jobDir := filepath.Join(w.home, "jobs", id)
		steps := filepath.Join(jobDir, "steps.jsonl")
		before, _ := readStepLog(t, steps, 0)
		// Let the run get on with a few answers, then hold every tool.
		exited := pollUntil(ctx, t, p, func() bool {
			now, _ := readStepLog(t, steps, 0)
			return now.answers >= before.answers+3+round
		})
		if !exited {
			if err := os.WriteFile(hold, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			exited = pollUntil(ctx, t, p, func() bool {
				st, _ := readStepLog(t, steps, since)
				done := recordedIdx(t, filepath.Join(jobDir, "results.jsonl"))
				left := 0
				for i := range items {
					if !st.final[i] && !done[i] {
						left++
					}
				}
				return left > 0 && len(st.open) >= min(4, left)
			})
		}
		if exited {
			finished = p
			break
		}
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		landed++
		_, since = readStepLog(t, steps, 0)
	}
	_ = os.Remove(hold)
	if code := exitCode(t, <-finished.exited); code != 0 && code != 1 {
		t.Fatalf("the last run: exit %d\n%s", code, finished.stderr)
	}
	if landed < 2 {
		t.Fatalf("%d kills landed mid-run, want at least 2: the test proves little", landed)
	}

	for step, n := range paidRequests(t, filepath.Join(w.dir, "requests.jsonl")) {
		if n > 1 {
			t.Errorf("the model was paid %d times for %s: a recorded answer was asked again", n, step)
		}
	}
	checkAgentRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl"), items)
	t.Logf("%d kills landed", landed)
}

// pollUntil polls cond until it holds or p exits (true); the context is
// only a safety net.
func pollUntil(ctx context.Context, t *testing.T, p *tenaxProc, cond func() bool) (exited bool) {
	t.Helper()
	for !cond() {
		select {
		case err := <-p.exited:
			p.exited <- err
			return true
		case <-ctx.Done():
			t.Fatalf("timed out polling the run\n%s", p.stderr)
		case <-time.After(10 * time.Millisecond):
		}
	}
	return false
}

// checkAgentRecords checks results.jsonl after the last run: one record
// per item (a plain resume re-runs nothing recorded), each naming its
// transcript, a failure only the non-idempotent tool's interruption or
// the agent's own limits.
func checkAgentRecords(t *testing.T, path string, items int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]int{}
	for line := range bytes.Lines(b) {
		var rec struct {
			Idx   int    `json:"_idx"`
			Error string `json:"error"`
			Agent *struct {
				Steps      int `json:"steps"`
				Transcript *struct {
					Log string `json:"log"`
					Idx int    `json:"idx"`
					N   int    `json:"n"`
				} `json:"transcript"`
			} `json:"agent"`
		}
		if err := json.Unmarshal(line, &rec); err != nil {
			t.Fatalf("results.jsonl: %v: %q", err, line)
		}
		seen[rec.Idx]++
		if rec.Agent == nil || rec.Agent.Transcript == nil || rec.Agent.Transcript.Log != "steps.jsonl" || rec.Agent.Transcript.Idx != rec.Idx {
			t.Errorf("item %d's record names no transcript in steps.jsonl: %s", rec.Idx, line)
		}
		switch {
		case rec.Error == "":
		case strings.Contains(rec.Error, `tool "note"`) && strings.Contains(rec.Error, "not idempotent"):
		case strings.Contains(rec.Error, "max_consecutive_errors"), strings.Contains(rec.Error, "max_steps"):
		default:
			t.Errorf("item %d failed with %q: want success, or the note tool's interruption, or an agent limit", rec.Idx, rec.Error)
		}
	}
	for i := range items {
		if seen[i] != 1 {
			t.Errorf("item %d has %d records, want one", i, seen[i])
		}
	}
}
