package main

import (
	"strings"
	"testing"
)

func TestPostgresWorkersEnqueueWorkStatusResume(t *testing.T) {
	pg := postgresStore(t)
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
	if r := w.tenax("migrate", "--store", pg); r.code != 0 || !strings.Contains(r.stdout, "tables are ready") {
		t.Fatalf("migrate: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "0")
	if r.code != 0 || !strings.Contains(r.stderr, "40 items enqueued") {
		t.Fatalf("run --workers 0: exit %d, want 0 and 40 items enqueued\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	// Nothing to enqueue again (every item waits in the queue); two
	// in-process workers run them all.
	r = w.tenax("resume", id, "--store", pg, "--workers", "2", "-q")
	if r.code != 1 || !strings.Contains(r.stdout, "30 succeeded, 10 failed, 0 pending") || !strings.Contains(r.stderr, "0 items enqueued again") {
		t.Fatalf("resume --workers 2: exit %d, want 1 with 30 succeeded, 10 failed\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := w.tenax("status", id, "--store", pg)
	for _, want := range []string{"30 succeeded, 10 failed, 0 pending", "Queue:     40 finished", "Workers:", "stopped"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s%s", want, st.stdout, st.stderr)
		}
	}
	w.write("fixed", "", 0o644)
	r = w.tenax("resume", id, "--store", pg, "--workers", "1", "--retry-failures", "-q")
	if r.code != 0 || !strings.Contains(r.stdout, "40 succeeded, 0 failed, 0 pending") || !strings.Contains(r.stderr, "10 items enqueued again (round 2)") {
		t.Fatalf("resume --retry-failures: exit %d, want 0 with 40 succeeded\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.tenax("breaker", "continue", id, "--store", pg); r.code != 2 || !strings.Contains(r.stderr, "not open") {
		t.Errorf("breaker continue on a closed breaker: exit %d, want 2 saying it is not open\n%s", r.code, r.stderr)
	}
}

func TestWorkerCommandsNeedPostgres(t *testing.T) {
	w := newWorkdir(t)
	for _, args := range [][]string{{"migrate"}, {"worker", "--all"}, {"breaker", "abort", "job_x"}} {
		r := w.tenax(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "PostgreSQL store") {
			t.Errorf("tenax %s without a PostgreSQL store: exit %d, want 2 saying it needs one\n%s", strings.Join(args, " "), r.code, r.stderr)
		}
	}
	if r := w.tenax("worker", "--store", "postgres://127.0.0.1/x"); r.code != 2 || !strings.Contains(r.stderr, "--job ID") {
		t.Errorf("tenax worker without --job or --all: exit %d, want 2 saying which\n%s", r.code, r.stderr)
	}
}
