package main

import (
	"bytes"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// TestTwoRunsUnderOneHomeShareTheCache: two tenax runs started at once
// under one home, the cache on by default, both finish every item; a third
// run over the same items is served wholly from the cache the two filled.
func TestTwoRunsUnderOneHomeShareTheCache(t *testing.T) {
	const n = 200
	w := newWorkdir(t)
	var items strings.Builder
	for i := range n {
		fmt.Fprintf(&items, `{"word":"w%d"}`+"\n", i)
	}
	w.write("items.jsonl", items.String(), 0o644)
	w.write("job.yaml", `name: shared
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the word '{{.word}}' as JSON."
mock:
  latency: {min: 1ms, max: 5ms}
`, 0o644)
	var wg sync.WaitGroup
	outs := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	for i := range outs {
		wg.Go(func() {
			cmd := exec.Command(tenaxBin, "--home", w.home, "run", "-q", "job.yaml")
			cmd.Dir, cmd.Env = w.dir, childEnv()
			cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
			errs[i] = cmd.Run()
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || !strings.Contains(outs[i].String(), fmt.Sprintf("%d succeeded, 0 failed", n)) {
			t.Fatalf("run %d of two at once under one home: %v\n%s", i, err, outs[i].String())
		}
	}
	third := w.tenax("run", "-q", "job.yaml")
	if third.code != 0 {
		t.Fatalf("third run: exit %d\n%s%s", third.code, third.stdout, third.stderr)
	}
	status := w.tenax("status", "latest")
	if want := fmt.Sprintf("%d served from cache", n); !strings.Contains(status.stdout, want) {
		t.Errorf("the third run's status does not say %q: the two runs' answers were not all cached\n%s", want, status.stdout)
	}
}
