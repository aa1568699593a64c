package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/mock"
)

// storedAgentSpec is an agent job on a mock served apart from tenax (it
// outlives the process killed), as provider openai, every model call
// taking a second: long enough for a kill to land with calls in flight.
const storedAgentSpec = `
name: agent-stored
input: words.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: mock-key
  model: mock-agent
  prompt: "Tell me about the word '{{.word}}'."
  timeout: 20s
  store: %v
  max_steps: 6
  max_consecutive_errors: 6
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [wc, -c], stdin: "{{.args.text}}"}
      idempotent: true
retry: {max_attempts: 4, backoff: {base: 5ms, max: 40ms}}
concurrency: {max: 4}
cache: {enabled: false}
`

// lockedFile is the mock's request log, safe to write from its
// handlers.
type lockedFile struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lockedFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// killInFlight runs the stored agent job (store on or off) against a
// mock served in this process, kills tenax with SIGKILL once the mock
// holds more model calls than there are items (some of them in flight,
// none answered: each takes a second), resumes until done, and returns
// the model calls paid twice, from the mock's request log.
func killInFlight(t *testing.T, store bool) (twice []string) {
	const items = 3
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	w := newWorkdir(t)
	logPath := filepath.Join(w.dir, "requests.jsonl")
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	srv := mock.New(mock.Config{Seed: 5, Latency: time.Second, Record: true, LogRequests: &lockedFile{f: f}})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	var words strings.Builder
	for i := range items {
		fmt.Fprintf(&words, `{"word": "word%02d"}`+"\n", i)
	}
	w.write("words.jsonl", words.String(), 0o644)
	w.write("job.yaml", fmt.Sprintf(storedAgentSpec, ts.URL, store), 0o644)

	p := startTenax(ctx, t, w.dir, w.home, "run", "job.yaml")
	if p.id == "" {
		t.Fatalf("the run printed no job line: %v\n%s", <-p.exited, p.stderr)
	}
	if exited := pollUntil(ctx, t, p, func() bool { return len(srv.Requests()) > items }); exited {
		t.Fatalf("the run ended before its kill\n%s", p.stderr)
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.exited
	next := startTenax(ctx, t, w.dir, w.home, "resume", p.id)
	if code := exitCode(t, <-next.exited); code != 0 && code != 1 {
		t.Fatalf("the resume: exit %d\n%s", code, next.stderr)
	}
	_ = srv.Close()
	ts.Close() // every handler done: the log is whole
	checkAgentRecords(t, filepath.Join(w.home, "jobs", p.id, "results.jsonl"), items)
	for step, n := range paidRequests(t, logPath) {
		if n > 1 {
			twice = append(twice, fmt.Sprintf("%s (%d times)", step, n))
		}
	}
	log, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	abandoned := bytes.Count(log, []byte(`"outcome":"abandoned"`))
	if abandoned == 0 {
		t.Fatal("no model call was in flight at the kill (none abandoned in the mock's log): the test shows nothing")
	}
	t.Logf("store %v: %d model calls in flight at the kill, %d paid twice", store, abandoned, len(twice))
	return twice
}

// TestAModelCallInFlightAtAKillIsPaidOnceWithStore: tenax is killed with
// SIGKILL while its agent items' model calls are in flight at a provider
// that outlives it (the mock answers them all the same, as a provider
// bills them). With task.store the resumed run finds each such answer
// stored under the call's tags and uses it: no model call is paid twice.
// Without it the same kill pays for those calls again, which is what the
// feature closes.
func TestAModelCallInFlightAtAKillIsPaidOnceWithStore(t *testing.T) {
	if twice := killInFlight(t, true); len(twice) > 0 {
		t.Errorf("with store on, model calls paid twice: %v", twice)
	}
	if twice := killInFlight(t, false); len(twice) == 0 {
		t.Error("with store off no model call was paid twice: the kill landed with no call in flight, and the test shows nothing")
	}
}
