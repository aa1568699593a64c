package main

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPostgresWorkersEnqueueWorkStatusResume(t *testing.T) {
	pg := postgresStore(t)
	w := fixLaterWorkdir(t)
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
	// "latest", as resume takes it on one machine (it was refused as an
	// unknown job id with --workers).
	r = w.tenax("resume", "latest", "--store", pg, "--workers", "1", "--retry-failures", "-q")
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

// match waits for re to match after what earlier expects consumed, and
// returns its first group.
func (tm *terminal) match(re *regexp.Regexp) string {
	tm.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		tm.mu.Lock()
		all := tm.out.String()
		tm.mu.Unlock()
		if m := re.FindStringSubmatchIndex(all[tm.pos:]); m != nil {
			group := all[tm.pos+m[2] : tm.pos+m[3]]
			tm.pos += m[1]
			return group
		}
		time.Sleep(20 * time.Millisecond)
	}
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.t.Fatalf("terminal never showed %v; it shows:\n%s", re, tm.out.String()[tm.pos:])
	return ""
}

// TestPostgresAttachedRunAsksTheSharedBreakerOnItsTerminal: `tenax run
// --workers N` on a terminal asks a prompt trip of the shared breaker as
// the single-process run does; its answer reaches the workers, and an
// answer given first elsewhere (tenax breaker) takes the question back,
// saying who answered.
func TestPostgresAttachedRunAsksTheSharedBreakerOnItsTerminal(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", 50)
	w.write("tool.sh", "#!/bin/sh\necho \"cannot reach the license server for item $1\" >&2\nexit 127\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 3, on_trip: prompt}
concurrency: {max: 1}
`, 0o644)
	term := startOnTerminal(t, w, "run", "job.yaml", "--store", pg, "--workers", "1")
	id := term.match(regexp.MustCompile(`tenax: job (job_\S+) \(queue`))
	term.expect("the circuit breaker tripped on worker")
	term.expect("Circuit breaker open: 3 consecutive failures")
	term.expect("Last error: fatal (exit 127)")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	term.send("i\n")
	term.expect("Exit code:  127")
	term.expect("cannot reach the license server for item")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	term.send("c\n")
	// Continued: the worker goes on, fails three more times, trips again.
	term.expect("Circuit breaker open: 3 consecutive failures")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	if r := w.tenax("breaker", "abort", id, "--store", pg); r.code != 0 {
		t.Fatalf("breaker abort while the terminal asks: exit %d, want 0 (the first answer)\n%s%s", r.code, r.stdout, r.stderr)
	}
	term.expect("answered elsewhere: abort, by tenax breaker on")
	if code := term.exitCode(); code != 3 {
		t.Fatalf("exit %d after the abort from tenax breaker, want 3", code)
	}
	term.expect("pending")
	r := w.tenax("breaker", "continue", id, "--store", pg)
	if r.code != 2 || !strings.Contains(r.stderr, "answered already: abort, by tenax breaker on") {
		t.Errorf("a late breaker continue: exit %d, want 2 saying abort came first\n%s", r.code, r.stderr)
	}
}

// TestPostgresAttachedWorkersStopAtTheJobsBudget: `tenax run --workers 2`
// with a token budget stops as one process does — exit 3, the budget's
// reason printed and in status, the rest pending, nothing failed — with
// both workers together within the one budget, and a resume spends it
// afresh, as a resumed single-process run does.
func TestPostgresAttachedWorkersStopAtTheJobsBudget(t *testing.T) {
	pg := postgresStore(t)
	const n = 60
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the number {{.n}} as JSON."
  max_tokens: 40
budget: {max_tokens: 300}
concurrency: {max: 2}
cache: {enabled: false}
mock: {latency: 5ms}
`, 0o644)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "2", "-q")
	if r.code != 3 || !strings.Contains(r.stdout, "Stopped: budget.max_tokens of 300 reached") || !strings.Contains(r.stdout, "state aborted") {
		t.Fatalf("run --workers 2: exit %d, want 3 stopped by the budget\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	st := w.tenax("status", id, "--store", pg)
	if !strings.Contains(st.stdout, "0 failed") || !strings.Contains(st.stdout, "budget.max_tokens of 300 reached") || !strings.Contains(st.stdout, "spent by the job's workers since it was created or resumed, 0 tokens held") {
		t.Errorf("status does not show the budget's stop with nothing failed:\n%s%s", st.stdout, st.stderr)
	}
	m := regexp.MustCompile(`(\d+) succeeded, 0 failed, (\d+) pending`).FindStringSubmatch(st.stdout)
	if m == nil || m[1] == "0" || m[2] == "0" {
		t.Fatalf("status: want some items succeeded and some pending under a 300-token budget:\n%s", st.stdout)
	}
	tok := regexp.MustCompile(`Tokens:\s+(\d+) in, (\d+) out`).FindStringSubmatch(st.stdout)
	if tok == nil {
		t.Fatalf("status shows no tokens:\n%s", st.stdout)
	}
	if used := atoi(t, tok[1]) + atoi(t, tok[2]); used > 300 {
		t.Errorf("the two workers used %d tokens together, over the job's 300-token budget", used)
	}
	r = w.tenax("resume", id, "--store", pg, "--workers", "1", "-q")
	if r.code != 3 || !strings.Contains(r.stdout, "Stopped: budget.max_tokens of 300 reached") {
		t.Fatalf("resume --workers 1: exit %d, want 3, stopped by a fresh budget again\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	again := regexp.MustCompile(`(\d+) succeeded, 0 failed`).FindStringSubmatch(r.stdout)
	if again == nil || atoi(t, again[1]) <= atoi(t, m[1]) {
		t.Errorf("resume: %q, want more items succeeded than the %s before it\n%s", again, m[1], r.stdout)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
