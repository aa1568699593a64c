package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// echoJob writes a spec whose exec task echoes each item's n, and n items.
func echoJob(w *workdir, n int) {
	w.items("items.jsonl", n)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: [echo, "n={{.n}}"]
`, 0o644)
}

// runFailingItemOne runs, over w's items.jsonl, a job whose item n=1 fails
// (exit 3, class item) and the others succeed, and returns its id.
func runFailingItemOne(t *testing.T, w *workdir) string {
	t.Helper()
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: [sh, -c, "[ $0 != 1 ] || { echo bad item >&2; exit 3; }; echo n=$0", "{{.n}}"]
`, 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	return jobID(t, r)
}

// TestExportToACSVFileWritesCSV: `tenax export JOB -o results.csv` wrote
// JSONL into results.csv, while `tenax run --output results.csv` writes
// CSV; found by exporting a job after a run with --output results.csv.
func TestExportToACSVFileWritesCSV(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 3)
	if r := w.tenax("run", "job.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		args []string
		file string
		csv  bool
	}{
		{[]string{"-o", "out.csv"}, "out.csv", true},
		{[]string{"-o", "OUT2.CSV"}, "OUT2.CSV", true},
		{[]string{"-o", "out.jsonl"}, "out.jsonl", false},
		{[]string{"-o", "out3.csv", "--format", "jsonl"}, "out3.csv", false},
		{[]string{"-o", "out4.txt", "--format", "csv"}, "out4.txt", true},
	} {
		r := w.tenax(append([]string{"export", "latest"}, c.args...)...)
		if r.code != 0 {
			t.Fatalf("export %v: exit %d\n%s", c.args, r.code, r.stderr)
		}
		b, err := os.ReadFile(filepath.Join(w.dir, c.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.HasPrefix(string(b), "_idx,id,n,"); got != c.csv {
			t.Errorf("export %v wrote CSV: %v, want %v:\n%s", c.args, got, c.csv, b)
		}
	}
}

// TestRetryFailuresWithASpaceSaysToWriteEquals: `tenax resume JOB
// --retry-failures retryable` answered only "accepts 1 arg(s), received 2":
// a bare --retry-failures takes no value, so the class was read as a second
// job. The error now says to write --retry-failures=retryable.
func TestRetryFailuresWithASpaceSaysToWriteEquals(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 1)
	if r := w.tenax("run", "job.yaml"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{
		{"resume", "latest", "--retry-failures", "retryable"},
		{"resume", "--retry-failures", "retryable,item", "latest"},
	} {
		r := w.tenax(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "write --retry-failures=retryable") {
			t.Errorf("%v: exit %d, stderr %q: want 2 and how to write it", args, r.code, r.stderr)
		}
	}
	if r := w.tenax("resume", "latest", "other"); r.code != 2 || strings.Contains(r.stderr, "--retry-failures=") {
		t.Errorf("two jobs without --retry-failures: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestOutputThatCannotBeWrittenIsRefusedBeforeTheRun: `tenax run job.yaml
// --output missing/results.jsonl` ran every item, paid for every call, and
// only then failed to write the output, exit 4, printing "Retry the
// failures: tenax resume …" for a job without failures. A missing
// directory is now refused before the job is created (exit 2), by run and
// by resume; an output lost at the end says how to write it again.
func TestOutputThatCannotBeWrittenIsRefusedBeforeTheRun(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 3)
	if err := os.Mkdir(filepath.Join(w.dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{"missing/results.jsonl", "adir"} {
		r := w.tenax("run", "job.yaml", "--output", out)
		if r.code != 2 || !strings.Contains(r.stderr, "--output "+out) {
			t.Errorf("run --output %s: exit %d, stderr %q: want 2 naming --output", out, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(w.home); !os.IsNotExist(err) {
		t.Fatalf("a refused run created %s (%v)", w.home, err)
	}
	runFailingItemOne(t, w)
	r := w.tenax("resume", "latest", "--retry-failures", "--output", "missing/results.csv")
	if r.code != 2 || !strings.Contains(r.stderr, "--output missing/results.csv") {
		t.Errorf("resume --output missing/…: exit %d, stderr %q: want 2 naming --output", r.code, r.stderr)
	}

	// The output's directory goes away while the job runs (its task
	// removes it): the run says how to write the output again, and
	// suggests no resume of a job with nothing left to run.
	if err := os.Mkdir(filepath.Join(w.dir, "gone"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: [sh, -c, "rm -rf gone; echo n=$0", "{{.n}}"]
`, 0o644)
	r = w.tenax("run", "job.yaml", "--output", "gone/results.jsonl")
	id := jobID(t, r)
	if want := "Write the results again: tenax export " + id + " -o gone/results.jsonl --home " + w.home; r.code != 4 || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "tenax resume") {
		t.Errorf("output lost at the end: exit %d, stdout %q: want 4, %q and no resume command", r.code, r.stdout, want)
	}
}

// TestStaleJobsResumeCommandRepeatsHome: `tenax status --home H` of a
// killed run printed "`tenax resume ID` continues it" without --home H, a
// command that answers "no job" when pasted; the run's own resume command
// had it.
func TestStaleJobsResumeCommandRepeatsHome(t *testing.T) {
	w := newWorkdir(t)
	cmd, _, _, id := startSlowJob(t, w, "0.3")
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	r := w.tenax("status")
	if want := "`tenax resume " + id + " --home " + w.home + "` continues it"; !strings.Contains(r.stdout, want) {
		t.Errorf("status of the killed job:\n%s\nwant %q", r.stdout, want)
	}
}

// TestResumeOfAJobWhoseSpecMovedSaysWhereToPutItBack: a spec renamed after
// its run made `tenax resume` answer only "spec: open /abs/job.yaml: no
// such file or directory", without saying that resume reads the spec
// again from where the job was created.
func TestResumeOfAJobWhoseSpecMovedSaysWhereToPutItBack(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 2)
	r := w.tenax("run", "job.yaml", "--limit", "1")
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	if err := os.Rename(filepath.Join(w.dir, "job.yaml"), filepath.Join(w.dir, "renamed.yaml")); err != nil {
		t.Fatal(err)
	}
	r = w.tenax("resume", id)
	want := "job " + id + " was created from the spec " + filepath.Join(w.dir, "job.yaml") + ", which is no longer there"
	if r.code != 2 || !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "put the spec back") {
		t.Errorf("resume: exit %d, stderr %q: want 2 and %q", r.code, r.stderr, want)
	}
}

// TestValidateRefusesAnEmptyInputAsRunDoes: `tenax validate job.yaml
// --input empty.jsonl` said "2 templates rendered for the first 0 items of
// empty.jsonl: OK" and exited 0, for an input `tenax run` refuses (exit 2).
func TestValidateRefusesAnEmptyInputAsRunDoes(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 1)
	w.write("empty.jsonl", "\n  \n", 0o644)
	r := w.tenax("validate", "job.yaml", "--input", "empty.jsonl")
	if r.code != 2 || !strings.Contains(r.stderr, "has no items") || strings.Contains(r.stderr, ": OK") {
		t.Errorf("validate --input empty.jsonl: exit %d, stderr %q: want 2, no items", r.code, r.stderr)
	}
	if r := w.tenax("validate", "job.yaml", "--input", "items.jsonl"); r.code != 0 {
		t.Errorf("validate --input items.jsonl: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestAPipeInputIsRefused: `input: {path: fifo, format: jsonl}` (or
// `--input /dev/stdin` from a pipe) was accepted; tenax read the pipe to
// count and hash it, created the job, then waited forever to open it again
// to run it, deaf to Ctrl-C and SIGTERM, every item left pending.
func TestAPipeInputIsRefused(t *testing.T) {
	w := newWorkdir(t)
	fifo := filepath.Join(w.dir, "items.pipe")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	w.write("job.yaml", `
input: {path: items.pipe, format: jsonl}
task: {type: exec, argv: [echo, "{{.n}}"]}
`, 0o644)
	// Without a writer, a tenax that opens the pipe blocks: the context
	// only ends a test that would otherwise hang.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, tenaxBin, "--home", w.home, "run", "job.yaml")
	cmd.Dir, cmd.Env = w.dir, childEnv()
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "is a pipe") {
		t.Fatalf("run with a pipe input: %v, output %q: want exit 2 saying it is a pipe", err, out)
	}
	if _, err := os.Stat(w.home); !os.IsNotExist(err) {
		t.Errorf("a refused run created %s (%v)", w.home, err)
	}
}

// TestAStoreThatIsAFileIsAUsageError: `tenax run job.yaml --store
// results.jsonl` (a file where a directory belongs) exited 1, "creating
// the job: jsonl: mkdir results.jsonl: not a directory"; status and export
// answered "no jobs yet". It is a usage error now, exit 2, that says what
// --store takes.
func TestAStoreThatIsAFileIsAUsageError(t *testing.T) {
	w := newWorkdir(t)
	echoJob(w, 1)
	w.write("afile", "", 0o644)
	for _, args := range [][]string{
		{"run", "job.yaml", "--store", "afile"},
		{"status", "--store", "afile"},
		{"export", "latest", "--store", "afile"},
		{"resume", "latest", "--store", "afile"},
	} {
		r := w.tenax(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "--store afile is a file") {
			t.Errorf("%v: exit %d, stderr %q: want 2, --store afile is a file", args, r.code, r.stderr)
		}
	}
	r := w.tenaxEnv([]string{"TENAX_STORE=afile"}, "status")
	if r.code != 2 || !strings.Contains(r.stderr, "TENAX_STORE afile is a file") {
		t.Errorf("TENAX_STORE=afile status: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestAMissingArgumentShowsTheUsageLine: `tenax run` alone answered only
// "accepts 1 arg(s), received 0", without naming the SPEC it wants.
func TestAMissingArgumentShowsTheUsageLine(t *testing.T) {
	w := newWorkdir(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"run"}, "Usage: tenax run SPEC [flags]"},
		{[]string{"resume"}, "Usage: tenax resume JOB|latest|NAME [flags]"},
		{[]string{"export"}, "Usage: tenax export JOB|latest|NAME [flags]"},
		{[]string{"validate"}, "Usage: tenax validate SPEC [flags]"},
	} {
		r := w.tenax(c.args...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) || !strings.Contains(r.stderr, "--help") {
			t.Errorf("%v: exit %d, stderr %q: want 2 and %q", c.args, r.code, r.stderr, c.want)
		}
	}
}

// TestAFingerprintThatMatchesNoFailureIsRefused: `tenax resume JOB
// --fingerprint zz` (a typo of a group status shows) re-ran nothing, said
// nothing, and exited 1 as if the failures had been tried again.
func TestAFingerprintThatMatchesNoFailureIsRefused(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	id := runFailingItemOne(t, w)
	recs := readRecords(t, filepath.Join(w.home, "jobs", id, "failures.jsonl"))
	if len(recs) != 1 {
		t.Fatalf("%d failures, want 1", len(recs))
	}
	b, err := os.ReadFile(filepath.Join(w.home, "jobs", id, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	fp := strings.SplitN(strings.SplitN(string(b), `"fingerprint":"`, 2)[1], `"`, 2)[0]
	r := w.tenax("resume", id, "--fingerprint", "zz")
	if r.code != 2 || !strings.Contains(r.stderr, `--fingerprint "zz" is the start of no failed item's fingerprint`) {
		t.Errorf("--fingerprint zz: exit %d, stderr %q: want 2 saying it matches nothing", r.code, r.stderr)
	}
	if st := w.tenax("status", id); !strings.Contains(st.stdout, ": failed") {
		t.Errorf("a refused resume changed the job's state:\n%s", st.stdout)
	}
	r = w.tenax("resume", id, "--fingerprint", fp[:8])
	if r.code != 1 || !strings.Contains(r.stdout, "1 done") {
		t.Errorf("--fingerprint %s: exit %d, stdout %q: want the failed item run again", fp[:8], r.code, r.stdout)
	}
}
