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

// TestAForcedResumeOverAShorterInputIsRefused: records past the job's items
// are refused as damage, so a forced resume may not shrink the input
// under records it has: it would count items the input no longer has.
func TestAForcedResumeOverAShorterInputIsRefused(t *testing.T) {
	w := newWorkdir(t)
	id := runEchoJob(t, w, 5)
	w.items("items.jsonl", 3)
	r := w.tenax("resume", id, "--force")
	if r.code != 2 || !strings.Contains(r.stderr, "now has 3 items, but job "+id+" has records up to idx 4") {
		t.Errorf("exit %d, want 2 saying the input is shorter than the records\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if r := w.tenax("status", id); r.code != 0 || !strings.Contains(r.stdout, "5 succeeded, 0 failed, 0 pending") {
		t.Errorf("status after the refused resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestStatusRefusesARecordPastTheLastItem: a record with _idx 3 appended
// to a 3-item job's log made status say "4 succeeded" and export emit it.
func TestStatusRefusesARecordPastTheLastItem(t *testing.T) {
	w := newWorkdir(t)
	id := runEchoJob(t, w, 3)
	log := filepath.Join(w.home, "jobs", id, "results.jsonl")
	f, err := os.OpenFile(log, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"_idx":3,"input":null,"output":"extra"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	for _, args := range [][]string{{"status", id}, {"export", id}} {
		r := w.tenax(args...)
		if r.code != 1 || !strings.Contains(r.stderr, "its _idx 3 is past the job's last item (3 items, idx 0 to 2)") || strings.Contains(r.stdout, "extra") {
			t.Errorf("%s: exit %d, want 1 refusing the line, nothing of it printed\nstdout:\n%s\nstderr:\n%s", args[0], r.code, r.stdout, r.stderr)
		}
	}
}

// TestAHomeOfOnlyBrokenJobsSaysSo: with every manifest unreadable, status
// said "there are no jobs yet".
func TestAHomeOfOnlyBrokenJobsSaysSo(t *testing.T) {
	w := newWorkdir(t)
	id := runEchoJob(t, w, 2)
	if err := os.WriteFile(filepath.Join(w.home, "jobs", id, "manifest.json"), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.tenax("status")
	if r.code != 4 || !strings.Contains(r.stderr, id) || strings.Contains(r.stderr, "no jobs yet") {
		t.Errorf("status: exit %d, want 4 naming %s\nstdout:\n%s\nstderr:\n%s", r.code, id, r.stdout, r.stderr)
	}
}
