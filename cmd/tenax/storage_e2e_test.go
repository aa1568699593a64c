package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestFullDiskStopsTheRunWithExit4 runs a 3,000-item exec job whose home is
// a 300 KiB tmpfs that holds a few hundred records. When the checkpoint
// cannot be written, tenax must stop dispatching at once (not call all
// 3,000 items and lose them), say what failed and where, exit 4, and leave
// a job that resumes elsewhere with every written record kept.
func TestFullDiskStopsTheRunWithExit4(t *testing.T) {
	w, home, r := runOnAFullDisk(t)
	if r.code != 4 {
		t.Fatalf("exit %d, want 4 (storage failed)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	all := r.stdout + r.stderr
	if !strings.Contains(all, "no space left on device") || !strings.Contains(all, "results.jsonl") {
		t.Errorf("the output does not say what failed and where:\n%s", all)
	}
	if strings.Contains(all, "operator") {
		t.Errorf("a full disk reported as the operator's doing:\n%s", all)
	}
	id := jobID(t, r)
	written := readRecords(t, filepath.Join(home, "jobs", id, "results.jsonl"))
	calls := sum(callCounts(t, filepath.Join(w.dir, "calls.log")))
	if len(written) == 0 || len(written) >= 3000 {
		t.Fatalf("%d records written: the disk was meant to fill part way", len(written))
	}
	// Dispatch stops at the first failed write: what was in flight then
	// (two rounds of slots) and the records the store could not keep are
	// lost, not the rest of the input.
	if calls > len(written)+200 {
		t.Errorf("%d calls for %d records written: dispatch went on after the disk was full", calls, len(written))
	}

	// The job resumes on a disk with room, keeping what was written.
	roomy := filepath.Join(t.TempDir(), "home")
	if out, err := exec.Command("cp", "-a", home, roomy).CombinedOutput(); err != nil {
		t.Fatalf("copying the job: %v: %s", err, out)
	}
	r = w.tenax("--home", roomy, "resume", id)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	recs := readRecords(t, filepath.Join(roomy, "jobs", id, "results.jsonl"))
	seen := map[int]int{}
	for _, rec := range recs {
		seen[rec.Idx]++
	}
	if len(seen) != 3000 {
		t.Errorf("%d distinct items recorded after resume, want 3000", len(seen))
	}
	for idx, n := range seen {
		if n > 1 {
			t.Errorf("item %d recorded %d times", idx, n)
		}
	}
}

// runOnAFullDisk runs a 3,000-item exec job whose home is a 300 KiB tmpfs
// that holds a few hundred records; it skips where no tmpfs can be
// mounted (it needs root).
func runOnAFullDisk(t *testing.T) (w *workdir, home string, r result) {
	t.Helper()
	w = newWorkdir(t)
	disk := filepath.Join(t.TempDir(), "disk")
	if err := os.MkdirAll(disk, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=300k", "tmpfs", disk).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s); run as root on Linux (as CI does) to test a full disk", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", disk).Run() })

	pad := strings.Repeat("x", 300)
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "{\"n\":%d,\"pad\":%q}\n", i, pad)
	}
	w.write("items.jsonl", b.String(), 0o644)
	w.write("echo.sh", "#!/bin/sh\necho \"$1\" >> calls.log\nprintf '%s' \"$2\"\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./echo.sh", "{{.n}}", "{{.pad}}"]
concurrency: {max: 8}
`, 0o644)
	home = filepath.Join(disk, "home")
	return w, home, w.tenax("--home", home, "run", "job.yaml")
}

// TestSummaryAfterAFullDiskCountsTheWrittenRecords: after the disk filled,
// the summary said "0 succeeded, 0 failed, 3000 pending" while hundreds of
// records were in the log (the counts' read error was dropped because the
// run had already failed), and the job was saved "aborted", like an
// operator's abort. The summary counts what the log holds; the state is
// storage_failed.
func TestSummaryAfterAFullDiskCountsTheWrittenRecords(t *testing.T) {
	_, home, r := runOnAFullDisk(t)
	if r.code != 4 {
		t.Fatalf("exit %d, want 4\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	written := readRecords(t, filepath.Join(home, "jobs", id, "results.jsonl"))
	want := fmt.Sprintf("Job %s: %d succeeded, 0 failed, %d pending", id, len(written), 3000-len(written))
	if !strings.Contains(r.stdout, want) {
		t.Errorf("the summary does not count the %d records written; want %q in:\n%s", len(written), want, r.stdout)
	}
	b, err := os.ReadFile(filepath.Join(home, "jobs", id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"state": "storage_failed"`) {
		t.Errorf("manifest after a full disk:\n%s\nwant state storage_failed", b)
	}
}

// TestSummaryAfterTheJobDirVanishedSaysOutcomesUnknown: with the job's
// directory removed during the run, the counts cannot be read at all; the
// summary said "0 succeeded, 0 failed, N pending", as if nothing had been
// done. It says the outcomes are unknown, and why.
func TestSummaryAfterTheJobDirVanishedSaysOutcomesUnknown(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 200)
	w.write("rm.sh", "#!/bin/sh\n[ \"$1\" = 5 ] && rm -rf \"$2\"/jobs/*\necho ok\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./rm.sh", "{{.n}}", "`+w.home+`"]
concurrency: {max: 1}
checkpoint: {flush_every: 1}
`, 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 4 {
		t.Fatalf("exit %d, want 4\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "outcomes unknown") || strings.Contains(r.stdout, "0 succeeded") {
		t.Errorf("summary after the job directory vanished:\n%s\nwant outcomes unknown, not zeros", r.stdout)
	}
}
