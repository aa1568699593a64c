package job_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/job"
)

// `tenax run --batch` on a spec with tools used to pass useBatchMode
// (which asked BatchProblem only about the provider), create a job and
// fail later with "needs an llm task; the spec's task is "llm"". It is
// refused before any job exists, with the reason and the page that says
// it: a batch wave carries one call per item, and an agent needs its
// tools' results between its calls.
func TestBatchRunOfASpecWithToolsIsRefused(t *testing.T) {
	w := newLLMWorld(t)
	w.words("items.jsonl", 2)
	w.file("job.yaml", `
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  prompt: "Tell me about {{.word}}"
  tools:
    - name: count
      exec: {argv: [wc, -c], stdin: "{{.args.text}}"}
mock: {latency: 0s}
`, 0o644)
	_, err := job.Run(context.Background(), filepath.Join(w.dir, "job.yaml"), job.Options{
		Home: w.home, Batch: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err == nil {
		t.Fatal("job.Run --batch of a spec with tools: no error, want a refusal")
	}
	for _, want := range []string{"--batch", "tools", "docs/batch.md"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if _, ok := errors.AsType[*job.UsageError](err); !ok {
		t.Errorf("error %q is not a *job.UsageError (exit 2)", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(w.home, "jobs")); len(entries) != 0 {
		t.Errorf("a job was created before the refusal: %d in jobs/", len(entries))
	}
}
