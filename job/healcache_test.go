package job_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
)

// TestAHealIsRememberedForTheOriginalRequest is the regression test of a
// heal the cache forgot: after a job healed generated answers, a second
// job over the same inputs asked the original question again (its bad
// answer had been rejected), ran the bad answer's script again, and paid
// the re-ask again (26 calls for 24 items, every bad script re-executed).
// A healed answer is now stored as the answer to the original request
// too, once it passed validation: the second job makes no call, and the
// validator (the "script") runs once per item, on the good answer only.
func TestAHealIsRememberedForTheOriginalRequest(t *testing.T) {
	const n = 24
	srv, url := serveMock(t, mock.Config{Seed: 7, Faults: mock.Faults{InvalidOutput: 0.3}})
	w := newLLMWorld(t)
	w.words("items.jsonl", n)
	// The validator runs the answer as a generated script would be run,
	// and logs each run: a bad answer (the mock marks its invalid ones
	// with "request") fails.
	w.file("run.sh", `#!/bin/sh
out=$(cat)
case "$out" in
*'"request"'*) echo bad >> runs.log; echo "the script failed: unexpected field request" >&2; exit 1;;
esac
echo good >> runs.log
`, 0o755)
	w.file("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
  timeout: 2m
validate:
  command: ./run.sh
concurrency: {max: 1}
cache: {enabled: true, dir: cache}
`, url), 0o644)
	runs := func() (good, bad int) {
		b, _ := os.ReadFile(filepath.Join(w.dir, "runs.log"))
		return strings.Count(string(b), "good\n"), strings.Count(string(b), "bad\n")
	}

	first := w.run("job.yaml")
	calls := srv.Stats().Requests
	healed, reasks := 0, 0
	for _, rec := range w.records(first.JobID) {
		healed += min(rec.HealAttempts, 1)
		reasks += rec.HealAttempts
	}
	// Some bad answers are not JSON at all: they fail before the script
	// runs, and are healed the same way.
	good1, bad1 := runs()
	if first.Succeeded != n || healed == 0 || bad1 == 0 || calls != int64(n+reasks) || good1 != n {
		t.Fatalf("first job: %d succeeded, %d items healed, %d calls, %d good and %d bad runs; want all %d, some healed after a bad run, a call per answer (%d), %d good runs",
			first.Succeeded, healed, calls, good1, bad1, n, n+reasks, n)
	}

	second := w.run("job.yaml")
	if got := srv.Stats().Requests - calls; second.Succeeded != n || got != 0 {
		t.Errorf("second job: %d succeeded with %d calls; want %d with none (every answer, healed ones included, from the cache)", second.Succeeded, got, n)
	}
	good2, bad2 := runs()
	if bad2 != bad1 || good2 != good1+n {
		t.Errorf("second job ran %d bad and %d good scripts; want 0 bad and %d good (the healed answers, not the original bad ones)", bad2-bad1, good2-good1, n)
	}
	for idx, rec := range w.records(second.JobID) {
		if !rec.CacheHit || rec.HealAttempts != 0 || rec.GenerationAttempts != 1 {
			t.Errorf("second job: item %d has cache_hit %v, %d re-asks, %d generations; want a cache hit, no re-ask", idx, rec.CacheHit, rec.HealAttempts, rec.GenerationAttempts)
		}
	}
}
