package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/store/jsonl"
)

// runEchoJob runs echoJob's spec over n items, all succeeding, and
// returns the job's id.
func runEchoJob(t *testing.T, w *workdir, n int) string {
	t.Helper()
	echoJob(w, n)
	r := w.tenax("run", "job.yaml")
	if r.code != 0 {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	return jobID(t, r)
}

// TestResumeRefusedByTheLockExitsTwoWithTheHolder: a resume refused
// because another process holds the job exited 1, the code of a run that
// finished with failures, although nothing ran. It is a command to give
// again once the holder is done: exit 2, naming the holder's pid.
func TestResumeRefusedByTheLockExitsTwoWithTheHolder(t *testing.T) {
	w := newWorkdir(t)
	id := runEchoJob(t, w, 3)
	// This test process holds the job, as a run would.
	j, err := (&jsonl.Store{Home: w.home}).Open(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r := w.tenax("resume", id)
	if r.code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := fmt.Sprintf("pid %d", os.Getpid()); !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "wait for that run to end") {
		t.Errorf("stderr does not name the holder (%s) and what to do:\n%s", want, r.stderr)
	}
}

// TestOneCorruptManifestBlocksNoOtherJob: one job's manifest.json cut
// short made status of another job, resume of another job and status
// --all fail with exit 1. The broken job is skipped and reported; only a
// command about it exits 4.
func TestOneCorruptManifestBlocksNoOtherJob(t *testing.T) {
	w := newWorkdir(t)
	good := runEchoJob(t, w, 3)
	w.write("other.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.id}}']}\n", 0o644)
	r := w.tenax("run", "other.yaml")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	broken := jobID(t, r)
	manifest := filepath.Join(w.home, "jobs", broken, "manifest.json")
	if err := os.WriteFile(manifest, []byte(`{"id": "`+broken+`", "sta`), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, args := range [][]string{{"status", good}, {"resume", good}, {"export", good}} {
		if r := w.tenax(args...); r.code != 0 {
			t.Errorf("%s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
	r = w.tenax("status", "--all")
	if r.code != 4 || !strings.Contains(r.stdout, good) || !strings.Contains(r.stderr, broken) || !strings.Contains(r.stderr, "manifest.json") {
		t.Errorf("status --all: exit %d, want 4 with %s listed and %s reported\nstdout:\n%s\nstderr:\n%s", r.code, good, broken, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"status", broken}, {"resume", broken}} {
		r := w.tenax(args...)
		if r.code != 4 || !strings.Contains(r.stderr, "manifest.json") {
			t.Errorf("%s: exit %d, want 4 naming manifest.json\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}
}
