package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestInterruptDuringInputScanCreatesNoJob: a signal during the input scan
// was honoured only when the scan ended, and a job with every item pending
// was created anyway. The input is a sparse file of 32 GiB, minutes of
// scanning (a pipe, which never ends, is refused as an input), so only the
// signal can stop the scan soon; it is sent once tenax has the file open.
func TestInterruptDuringInputScanCreatesNoJob(t *testing.T) {
	w := newWorkdir(t)
	input := filepath.Join(w.dir, "items.jsonl")
	f, err := os.Create(input)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(32 << 30); err != nil {
		f.Close()
		t.Skipf("no sparse files here: %v", err)
	}
	f.Close()
	w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	cmd := exec.Command(tenaxBin, "--home", w.home, "run", "job.yaml")
	cmd.Dir, cmd.Env = w.dir, childEnv()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fds := fmt.Sprintf("/proc/%d/fd", cmd.Process.Pid)
	waitFor(t, "tenax to open the input", func() bool {
		entries, _ := os.ReadDir(fds)
		for _, e := range entries {
			if target, err := os.Readlink(filepath.Join(fds, e.Name())); err == nil && target == input {
				return true
			}
		}
		return false
	})
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, time.Minute); code != 130 {
		t.Fatalf("exit %d, want 130\nstdout:\n%s\nstderr:\n%s", code, &out, &errb)
	}
	if entries, _ := os.ReadDir(filepath.Join(w.home, "jobs")); len(entries) != 0 {
		t.Errorf("an interrupted scan created %d job(s) in %s", len(entries), filepath.Join(w.home, "jobs"))
	}
	if !strings.Contains(errb.String(), "no job was created") {
		t.Errorf("stderr does not say that no job was created:\n%s", &errb)
	}
}

// paddedItems writes n items of about 630 bytes, {"id": "i<n>", "n": n, "pad": …}.
func paddedItems(w *workdir, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "i%d", "n": %d, "pad": "%s"}`+"\n", i, i, strings.Repeat("x", 600))
	}
	return w.write("items.jsonl", b.String(), 0o644)
}

type manifestView struct {
	Items      int    `json:"items"`
	SHA256     string `json:"input_sha256"`
	InputBytes int64  `json:"input_sha256_bytes"`
	State      string `json:"state"`
}

func readManifestView(t *testing.T, w *workdir, id string) manifestView {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(w.home, "jobs", id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifestView
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestLimitRunReadsOnlyTheStartOfTheInput: `--limit 100000` on a
// ten-million-line input read and hashed the whole file before the first
// call. Now the manifest hashes the prefix read; resume checks that prefix
// and reads on.
func TestLimitRunReadsOnlyTheStartOfTheInput(t *testing.T) {
	w := newWorkdir(t)
	in := paddedItems(w, 400) // 250 KB: several read buffers of 64 KB
	fi, err := os.Stat(in)
	if err != nil {
		t.Fatal(err)
	}
	w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	r := w.tenax("run", "job.yaml", "--limit", "5")
	if r.code != 0 {
		t.Fatalf("run --limit 5: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	m := readManifestView(t, w, id)
	if m.InputBytes <= 0 || m.InputBytes >= fi.Size() || m.Items != 5 || m.State != "incomplete" {
		t.Fatalf("manifest after --limit 5: %+v; want the hash of a prefix (0 < bytes < %d), 5 items, incomplete", m, fi.Size())
	}
	if !strings.Contains(r.stdout, "rest of the input") || !strings.Contains(r.stdout, "tenax resume "+id) {
		t.Errorf("summary does not say the rest of the input is unread, or lacks the resume command:\n%s", r.stdout)
	}
	if st := w.tenax("status", id); !strings.Contains(st.stdout, "read no further") {
		t.Errorf("status does not say the input was read only in part:\n%s", st.stdout)
	}

	rs := w.tenax("resume", id, "--limit", "10")
	if rs.code != 0 {
		t.Fatalf("resume --limit 10: exit %d\n%s%s", rs.code, rs.stdout, rs.stderr)
	}
	if m := readManifestView(t, w, id); m.Items != 15 || m.InputBytes <= 0 {
		t.Errorf("manifest after resume --limit 10: %+v; want 15 items of a longer prefix", m)
	}
	rs = w.tenax("resume", id)
	if rs.code != 0 || !strings.Contains(rs.stdout, "400 succeeded, 0 failed, 0 pending") {
		t.Fatalf("resume to the end: exit %d\n%s%s", rs.code, rs.stdout, rs.stderr)
	}
	if m := readManifestView(t, w, id); m.Items != 400 || m.InputBytes != 0 || m.State != "completed" {
		t.Errorf("manifest after the full resume: %+v; want 400 items, the whole file hashed, completed", m)
	}
}

// TestLimitRunThenChangedPrefixRefusesResume: the prefix hash still
// catches an input edited since.
func TestLimitRunThenChangedPrefixRefusesResume(t *testing.T) {
	w := newWorkdir(t)
	in := paddedItems(w, 400)
	w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	r := w.tenax("run", "job.yaml", "--limit", "5")
	if r.code != 0 {
		t.Fatalf("run --limit 5: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	b, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in, bytes.Replace(b, []byte(`"i2"`), []byte(`"i9"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	rs := w.tenax("resume", id)
	if rs.code != 2 || !strings.Contains(rs.stderr, "changed") {
		t.Errorf("resume over an edited prefix: exit %d, want 2 saying the input changed\n%s", rs.code, rs.stderr)
	}
}

// TestRemovedJobDirectoryMidRunWritesNoOutputAndNoResumeHint: deleting the
// job directory mid-run went unnoticed, then an empty --output was written
// and tenax suggested resuming a job that no longer existed.
func TestRemovedJobDirectoryMidRunWritesNoOutputAndNoResumeHint(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 50)
	w.write("tool.sh", `#!/bin/sh
[ "$1" = 10 ] && rm -rf "$TENAX_TEST_HOME/jobs"
echo "done $1"
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
  env: {TENAX_TEST_HOME: "${TENAX_TEST_HOME}"}
concurrency: {max: 1}
checkpoint: {flush_every: 1}
`, 0o644)
	r := w.tenaxEnv([]string{"TENAX_TEST_HOME=" + w.home}, "run", "job.yaml", "--output", "out.jsonl")
	if r.code == 0 {
		t.Fatalf("a run whose job directory was removed exited 0\n%s%s", r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "removed") {
		t.Errorf("stderr does not say the job's files were removed:\n%s", r.stderr)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "out.jsonl")); !os.IsNotExist(err) {
		t.Errorf("--output was written for a job whose records are gone (err %v)", err)
	}
	if strings.Contains(r.stdout, "tenax resume") {
		t.Errorf("tenax suggests resuming a job that no longer exists:\n%s", r.stdout)
	}
}
