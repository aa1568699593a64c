package job_test

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/job"
)

// An agent item's failed record closes its transcript: a resume with
// --retry-failures starts the item over as transcript 2 and asks the
// model again from its first step, rather than replaying transcript 1 to
// the same failure without a call. Every step lands in the job's
// steps.jsonl, and each record says where.
func TestRetryFailuresStartsAnAgentItemsNextTranscript(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 3)
	// max_steps 1: the mock agent's first answer always calls a tool, so
	// every item fails with no final answer.
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  prompt: "Tell me about {{.word}}"
  max_steps: 1
  tools:
    - name: count
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [wc, -c], stdin: "{{.args.text}}"}
cache: {enabled: false}
mock: {latency: 0s, log_requests: requests.jsonl}
`, 0o644)
	res := w.run("job.yaml")
	if res.ExitCode != 1 {
		t.Fatalf("exit %d, want 1: every item fails at max_steps 1", res.ExitCode)
	}
	for idx, rec := range w.records(res.JobID) {
		if tr := rec.Agent.Transcript; tr == nil || tr.Log != "steps.jsonl" || tr.Idx != idx || tr.N != 1 {
			t.Errorf("item %d's first record names transcript %+v, want steps.jsonl, idx %d, n 1", idx, tr, idx)
		}
	}
	opts := job.Options{Home: w.home, RetryFailures: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	again, err := job.Resume(t.Context(), res.JobID, opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.ExitCode != 1 {
		t.Fatalf("resume --retry-failures: exit %d, want 1", again.ExitCode)
	}
	for idx, rec := range w.records(res.JobID) {
		if tr := rec.Agent.Transcript; tr == nil || tr.N != 2 {
			t.Errorf("item %d's record after --retry-failures names transcript %+v, want n 2", idx, tr)
		}
	}
	log, err := os.ReadFile(filepath.Join(w.dir, "requests.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(log), `"path":"/v1/chat/completions"`); n != 6 {
		t.Errorf("the mock was asked %d times, want 6: each item's first step once per transcript", n)
	}
	steps, err := os.ReadFile(filepath.Join(w.home, "jobs", res.JobID, "steps.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(steps), `"kind":"answer"`); n != 6 {
		t.Errorf("steps.jsonl holds %d answers, want 6:\n%s", n, steps)
	}
}
