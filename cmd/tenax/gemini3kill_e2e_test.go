package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/mock"
)

// gemini3KillSpec is an agent job on the mock's Gemini 3 model (it signs
// its function calls and refuses them back unsigned) with one idempotent
// exec tool that waits while the file "hold" exists.
const gemini3KillSpec = `
name: gemini3-kill
input: words.jsonl
task:
  type: llm
  provider: gemini
  base_url: ${GEMINI_BASE_URL}
  api_key: ${GEMINI_API_KEY}
  model: gemini-3-mock-agent
  prompt: "Tell me about the word '{{.word}}'."
  max_steps: 8
  max_consecutive_errors: 4
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [./tool.sh], stdin: "{{.args.text}}"}
      idempotent: true
retry: {max_attempts: 5, backoff: {base: 5ms, max: 40ms}}
concurrency: {max: 4}
breaker: {threshold: 100}
cache: {enabled: false}
`

// A Gemini 3 agent job is killed (SIGKILL) while every slot holds an item
// in its tool, its first step recorded with the call's thoughtSignature,
// and resumed: every item ends, none on a refused signature, and no
// request carried Google's skip value in place of the model's own
// signature: the resumed process sent back the signatures the step log
// kept. Before, the step log kept none, and the resumed items' next
// request was refused (400 "Function call is missing a thought_signature").
func TestAKilledGemini3AgentRunSendsTheLoggedSignaturesBackOnResume(t *testing.T) {
	const items = 8
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	srv := mock.New(mock.Config{Seed: 5})
	var signed, skipped atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		if bytes.Contains(b, []byte(`"thoughtSignature":`)) {
			signed.Add(1)
		}
		if bytes.Contains(b, []byte("skip/thought")) || bytes.Contains(b, []byte("skip_thought")) {
			skipped.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	t.Setenv("GEMINI_BASE_URL", ts.URL)
	t.Setenv("GEMINI_API_KEY", "AIza-mock")
	t.Setenv("GOOGLE_API_KEY", "")

	w := newWorkdir(t)
	hold := w.heldAgent(items, gemini3KillSpec)
	if err := os.WriteFile(hold, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	p := startTenax(ctx, t, w.dir, w.home, "run", "job.yaml")
	if p.id == "" {
		t.Fatalf("the run printed no job line: %v\n%s", <-p.exited, p.stderr)
	}
	steps := filepath.Join(w.home, "jobs", p.id, "steps.jsonl")
	if pollUntil(ctx, t, p, func() bool {
		st, _ := readStepLog(t, steps, 0)
		return len(st.open) >= 4
	}) {
		t.Fatalf("the run ended before every slot held an item in its tool\n%s", p.stderr)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited

	_ = os.Remove(hold)
	again := startTenax(ctx, t, w.dir, w.home, "resume", p.id)
	if code := exitCode(t, <-again.exited); code != 0 && code != 1 {
		t.Fatalf("resume: exit %d\n%s", code, again.stderr)
	}
	results := filepath.Join(w.home, "jobs", p.id, "results.jsonl")
	checkAgentRecords(t, results, items)
	b, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte("thought_signature")) || bytes.Contains(b, []byte("thought signature")) {
		t.Errorf("a record failed on a refused signature:\n%s", b)
	}
	if signed.Load() == 0 || skipped.Load() != 0 {
		t.Errorf("%d requests carried a thoughtSignature, %d the skip value: want the logged signatures sent back, never the skip", signed.Load(), skipped.Load())
	}
}
