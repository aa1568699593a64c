package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/internal/pgtest"
)

// postgresStore returns a --store URL for a schema of this test's own,
// dropped at cleanup.
func postgresStore(t *testing.T) string {
	t.Helper()
	dsn := pgtest.DSN(t, "tenax_cli_")
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		t.Fatalf("%s must be a postgres:// URL for the CLI tests (--store takes no other form)", pgtest.EnvVar)
	}
	return dsn
}

// TestPostgresStoreRunStatusExportResume: with --store postgres://…, run,
// status, export and resume work as they do with the JSONL store, and no
// job directory is made.
func TestPostgresStoreRunStatusExportResume(t *testing.T) {
	pg := postgresStore(t)
	w := fixLaterWorkdir(t)
	r := w.tenax("run", "job.yaml", "--store", pg, "--output", "out.jsonl")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1 (finished with failures)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	if !strings.Contains(r.stdout, "30 succeeded, 10 failed, 0 pending") {
		t.Errorf("run summary: want 30 succeeded, 10 failed\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "tenax export "+id+" --failed") {
		t.Errorf("run summary points at a failures file a PostgreSQL job does not have:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(w.home, "jobs", id)); !os.IsNotExist(err) {
		t.Errorf("a PostgreSQL run made a job directory %s (err %v)", filepath.Join(w.home, "jobs", id), err)
	}
	if got := len(readRecords(t, filepath.Join(w.dir, "out.jsonl"))); got != 40 {
		t.Errorf("--output has %d records, want 40", got)
	}

	st := w.tenax("status", id, "--store", pg)
	if st.code != 0 || !strings.Contains(st.stdout, "30 succeeded, 10 failed, 0 pending") {
		t.Errorf("status: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	// TENAX_STORE names the store as --store does.
	all := w.tenaxEnv([]string{"TENAX_STORE=" + pg}, "status", "--all")
	if all.code != 0 || !strings.Contains(all.stdout, id) {
		t.Errorf("status --all with TENAX_STORE: exit %d\n%s%s", all.code, all.stdout, all.stderr)
	}
	if jl := w.tenax("status", "--all"); strings.Contains(jl.stdout, id) {
		t.Errorf("the JSONL home lists the PostgreSQL job:\n%s", jl.stdout)
	}
	ex := w.tenax("export", id, "--store", pg, "--failed", "--format", "csv")
	if ex.code != 0 || strings.Count(ex.stdout, "bad item") != 10 {
		t.Errorf("export --failed: exit %d, want 10 failed rows\n%s%s", ex.code, ex.stdout, ex.stderr)
	}

	w.write("fixed", "", 0o644)
	rs := w.tenaxEnv([]string{"TENAX_STORE=" + pg}, "resume", id, "--retry-failures")
	if rs.code != 0 || !strings.Contains(rs.stdout, "40 succeeded, 0 failed, 0 pending") {
		t.Errorf("resume --retry-failures: exit %d, want 0 and all succeeded\n%s%s", rs.code, rs.stdout, rs.stderr)
	}
	if again := w.tenax("resume", id, "--store", pg); again.code != 0 || !strings.Contains(again.stdout, "this run: 0 done") {
		t.Errorf("a resume of a finished job ran items: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
}

// TestPostgresStoreLimitRunPrintsAResumeCommandWithTheStore: a --limit run
// leaves items pending, and the resume command it prints names the store,
// without its password.
func TestPostgresStoreLimitRunPrintsAResumeCommandWithTheStore(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", 10)
	w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	r := w.tenax("run", "job.yaml", "--store", pg, "--limit", "3")
	if r.code != 0 {
		t.Fatalf("run --limit 3: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	var resume string
	for _, l := range strings.Split(r.stdout, "\n") {
		if rest, ok := strings.CutPrefix(l, "Resume: "); ok {
			resume = rest
		}
	}
	if !strings.HasPrefix(resume, "tenax resume "+id+" ") || !strings.Contains(resume, "--store") {
		t.Fatalf("resume command %q: want tenax resume %s --store …\n%s", resume, id, r.stdout)
	}
	rs := w.tenax("resume", id, "--store", pg)
	if rs.code != 0 || !strings.Contains(rs.stdout, "10 succeeded, 0 failed, 0 pending") {
		t.Errorf("resume: exit %d\n%s%s", rs.code, rs.stdout, rs.stderr)
	}
}

// TestBadStoreIsAUsageError: an unknown scheme is refused before anything
// runs, saying what is accepted.
func TestBadStoreIsAUsageError(t *testing.T) {
	w := newWorkdir(t)
	r := w.tenax("status", "--store", "mysql://u@h/db")
	if r.code != 2 || !strings.Contains(r.stderr, "--store") || !strings.Contains(r.stderr, "postgres://") {
		t.Errorf("status --store mysql://…: exit %d, want 2 naming --store and what it accepts\n%s", r.code, r.stderr)
	}
	r = w.tenaxEnv([]string{"TENAX_STORE=mysql://u@h/db"}, "status")
	if r.code != 2 || !strings.Contains(r.stderr, "TENAX_STORE") {
		t.Errorf("TENAX_STORE=mysql://…: exit %d, want 2 naming TENAX_STORE\n%s", r.code, r.stderr)
	}
}

// TestStoreDirectoryKeepsJobsThere: --store DIR keeps the jobs in DIR/jobs.
func TestStoreDirectoryKeepsJobsThere(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	w.write("job.yaml", "input: items.jsonl\ntask: {type: exec, argv: [echo, '{{.n}}']}\n", 0o644)
	other := filepath.Join(w.dir, "elsewhere")
	r := w.tenax("run", "job.yaml", "--store", other)
	if r.code != 0 {
		t.Fatalf("run --store DIR: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	if _, err := os.Stat(filepath.Join(other, "jobs", id, "results.jsonl")); err != nil {
		t.Errorf("--store %s: the job is not in %s/jobs: %v", other, other, err)
	}
	if st := w.tenax("status", id, "--store", other); st.code != 0 {
		t.Errorf("status --store DIR: exit %d\n%s", st.code, st.stderr)
	}
}

// fixLaterWorkdir is a workdir with a 40-item exec job (job.yaml) whose
// items divisible by 4 fail, as the item's fault, until a file named
// fixed exists: a first run ends with failures, a resume after
// w.write("fixed", …) succeeds.
func fixLaterWorkdir(t *testing.T) *workdir {
	t.Helper()
	w := newWorkdir(t)
	w.items("items.jsonl", 40)
	// Items divisible by 4 fail until fixed exists.
	w.write("tool.sh", `#!/bin/sh
if [ $(( $1 % 4 )) -eq 0 ] && [ ! -e fixed ]; then echo "bad item $1" >&2; exit 1; fi
echo "done $1"
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
  exit_codes: {item: [1]}
concurrency: {max: 4}
`, 0o644)
	return w
}
