package main

import (
	"bufio"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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

// enqueuedJob enqueues fixLaterWorkdir's job of 40 items for workers in a
// PostgreSQL store of the test's own, and returns its workdir, the store
// and the job's id.
func enqueuedJob(t *testing.T) (w *workdir, pg, id string) {
	t.Helper()
	pg = postgresStore(t)
	w = fixLaterWorkdir(t)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "0")
	if r.code != 0 {
		t.Fatalf("run --workers 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return w, pg, jobID(t, r)
}

// TestPostgresUIShowsAJobOnWorkers: tenax ui on a PostgreSQL store showed
// a job run by workers as its records alone, without its queue, its
// workers or its shared breaker.
func TestPostgresUIShowsAJobOnWorkers(t *testing.T) {
	w, pg, id := enqueuedJob(t)
	page := get(t, serveUI(t, w, id, "--store", pg))
	for _, want := range []string{"On workers", `<b id="queue-waiting">40</b>`, "No worker has joined the job"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page of a job on workers has no %q:\n%s", want, page)
		}
	}
}

// TestPostgresWorkerCommandReportsItsProgress: tenax worker printed
// nothing between its first line and its stop, however many items it ran.
func TestPostgresWorkerCommandReportsItsProgress(t *testing.T) {
	w, pg, id := enqueuedJob(t)
	cmd, stderr := w.start(t, "worker", "--job", id, "--store", pg, "--report-every", "100ms")
	defer func() { _ = cmd.Process.Kill() }()
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	want := []string{"working on job " + id, "40 items finished ("}
	for len(want) > 0 && sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), want[0]) {
			want = want[1:]
		}
	}
	if len(want) > 0 {
		t.Fatalf("the worker's stderr has no %q:\n%s", want[0], seen.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(stderr)
	_ = cmd.Wait()
	if !strings.Contains(string(rest), "stopped: 40 items finished") {
		t.Errorf("the worker's last lines do not give its total:\n%s%s", seen.String(), rest)
	}
}

// TestPostgresRunOnWorkersHonoursLimitAndOutput is the regression test of
// `tenax run --workers N` ignoring --limit (all 30 items ran on a
// --limit 5) and --output (no file): it now runs the first 5 items and
// writes them, and a resume runs the rest of the input, as on one machine.
func TestPostgresRunOnWorkersHonoursLimitAndOutput(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", 30)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [echo, \"item {{.n}}\"]\n", 0o644)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "2", "--limit", "5", "--output", "first.jsonl", "-q")
	if r.code != 0 || !strings.Contains(r.stderr, "5 items enqueued") || !strings.Contains(r.stdout, "5 succeeded, 0 failed, 0 pending") {
		t.Fatalf("run --workers 2 --limit 5: exit %d, want 0 with 5 items enqueued and succeeded\n%s%s", r.code, r.stdout, r.stderr)
	}
	recs := readRecords(t, filepath.Join(w.dir, "first.jsonl"))
	if len(recs) != 5 || recs[0].Idx != 0 || recs[4].Idx != 4 {
		t.Fatalf("--output holds %d records (%+v), want items 0 to 4", len(recs), recs)
	}
	id := jobID(t, r)
	r = w.tenax("resume", id, "--store", pg, "--workers", "2", "--output", "all.jsonl", "-q")
	if r.code != 0 || !strings.Contains(r.stderr, "25 items enqueued again") || !strings.Contains(r.stdout, "30 succeeded, 0 failed, 0 pending") {
		t.Fatalf("resume --workers 2 after --limit 5: exit %d, want the other 25 items run\n%s%s", r.code, r.stdout, r.stderr)
	}
	if recs := readRecords(t, filepath.Join(w.dir, "all.jsonl")); len(recs) != 30 {
		t.Errorf("resume --output holds %d records, want 30", len(recs))
	}
}

// TestFlagsWorkersDoNotHonourAreRefused: each flag of run and resume that
// a job on workers would ignore is refused, exit 2, saying what to do
// instead, before anything is created.
func TestFlagsWorkersDoNotHonourAreRefused(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [echo, \"{{.n}}\"]\n", 0o644)
	pg := "postgres://postgres@127.0.0.1:1/none?sslmode=disable"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "job.yaml", "--workers", "2", "--ui"}, "--ui does not work with --workers: the live page"},
		{[]string{"run", "job.yaml", "--workers", "2", "--metrics", "127.0.0.1:0"}, "--metrics does not work with --workers"},
		{[]string{"run", "job.yaml", "--workers", "2", "--batch"}, "--batch does not work with --workers"},
		{[]string{"run", "job.yaml", "--workers", "0", "--output", "out.jsonl"}, "tenax export JOB"},
		{[]string{"resume", "latest", "--workers", "2", "--limit", "5"}, "--limit does not work with --workers"},
		{[]string{"resume", "latest", "--workers", "2", "--retry-failures=fatal"}, "--retry-failures without =CLASS"},
		{[]string{"resume", "latest", "--workers", "2", "--fingerprint", "abc"}, "--fingerprint does not work with --workers"},
	} {
		r := w.tenax(append(tc.args, "--store", pg)...)
		if r.code != 2 || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("tenax %s: exit %d, want 2 saying %q\n%s", strings.Join(tc.args, " "), r.code, tc.want, r.stderr)
		}
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

// TestAWorkerWithoutAnOutageLimitIsRefused: --db-outage-limit 0 would
// make a worker exit at the first lost connection, the behaviour the
// limit replaced: it is refused, exit 2, before connecting.
func TestAWorkerWithoutAnOutageLimitIsRefused(t *testing.T) {
	w := newWorkdir(t)
	r := w.tenax("worker", "--all", "--db-outage-limit", "0", "--store", "postgres://postgres@127.0.0.1:1/none?sslmode=disable")
	if r.code != 2 || !strings.Contains(r.stderr, "--db-outage-limit 0s: want a positive duration") {
		t.Errorf("tenax worker --db-outage-limit 0: exit %d, want 2 saying the limit must be positive\n%s", r.code, r.stderr)
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

// TestPostgresAttachedRunHoldsCheckInsOnItsTerminal is the regression test
// of checkin_every doing nothing with workers: `tenax run --workers 2` on
// a terminal now pauses every worker after 10 items, shows the latest
// results with the single-process prompt, goes on at C, and at A stops
// the job (exit 3, the reason printed, the rest pending), which a resume
// then finishes.
func TestPostgresAttachedRunHoldsCheckInsOnItsTerminal(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", 40)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["echo", "item {{.n}}"]
checkin_every: 10
concurrency: {max: 2}
`, 0o644)
	term := startOnTerminal(t, w, "run", "job.yaml", "--store", pg, "--workers", "2")
	id := term.match(regexp.MustCompile(`tenax: job (job_\S+) \(queue`))
	term.expect("paused for a check-in")
	term.expect("Check-in: ")
	term.expect("/40 done, 0 failed. Latest results:")
	term.expect("[C]ontinue  [A]bort")
	if st := w.tenax("status", id, "--store", pg); !strings.Contains(st.stdout, "Check-in:  due (every 10 items): the queue is paused until the attending terminal answers") {
		t.Errorf("status while a check-in is asked does not say so:\n%s%s", st.stdout, st.stderr)
	}
	term.send("c\n")
	term.expect("Check-in: ")
	term.expect("[C]ontinue  [A]bort")
	term.send("a\n")
	if code := term.exitCode(); code != 3 {
		t.Fatalf("exit %d after an abort at a check-in, want 3", code)
	}
	term.expect(" pending (")
	term.expect("Stopped: aborted by the operator at a check-in")
	st := w.tenax("status", id, "--store", pg)
	if !strings.Contains(st.stdout, "aborted") {
		t.Errorf("status after the abort does not say aborted:\n%s", st.stdout)
	}
	r := w.tenax("resume", id, "--store", pg, "--workers", "2")
	if r.code != 0 || !strings.Contains(r.stdout, "40 succeeded, 0 failed, 0 pending") {
		t.Fatalf("resume without a terminal: exit %d, want 0 with all 40 succeeded (check-ins are only asked on a terminal)\n%s%s", r.code, r.stdout, r.stderr)
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

// TestWorkerBreakerAndUITakeLatestAndRefuseAnUnknownJob: `tenax worker
// --job`, `tenax breaker` and `tenax ui` took a job reference as a bare id
// where status and resume take "latest" too: `tenax breaker continue
// latest` said the breaker of job "latest" was not open, `tenax worker
// --job latest` exited 4 as if the database had failed, and a mistyped
// id gave the worker the same exit 4 (found by running them as an
// operator). They now resolve the reference, and an unknown one is a
// usage error naming the jobs there are.
func TestWorkerBreakerAndUITakeLatestAndRefuseAnUnknownJob(t *testing.T) {
	w, pg, id := enqueuedJob(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"breaker", "continue", "latest"}, "job " + id + ": the job's circuit breaker is not open"},
		{[]string{"breaker", "abort", "job_20990101_000000"}, `no job "job_20990101_000000"`},
		{[]string{"worker", "--job", "job_20990101_000000"}, `no job "job_20990101_000000"`},
		{[]string{"ui", "job_20990101_000000"}, `no job "job_20990101_000000"`},
	} {
		r := w.tenax(append(c.args, "--store", pg)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("tenax %s: exit %d, want 2 saying %q\n%s%s", strings.Join(c.args, " "), r.code, c.want, r.stdout, r.stderr)
		}
	}

	cmd, stderr := w.start(t, "worker", "--job", "latest", "--store", pg, "--report-every", "100ms")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "40 items finished (") && sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
	}
	if !strings.Contains(seen.String(), "working on job "+id) {
		t.Fatalf("tenax worker --job latest did not work on job %s:\n%s", id, seen.String())
	}

	ui, uiErr := w.start(t, "ui", "latest", "--store", pg)
	defer func() { _ = ui.Process.Kill(); _ = ui.Wait() }()
	sc = bufio.NewScanner(uiErr)
	if !sc.Scan() || !strings.HasPrefix(sc.Text(), "tenax: serving ") {
		t.Fatalf("tenax ui latest serves nothing: %q", sc.Text())
	}
	go func() { _, _ = io.Copy(io.Discard, uiErr) }()
	base, _, _ := strings.Cut(strings.TrimPrefix(sc.Text(), "tenax: serving "), " ")
	res, err := http.Get(base)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if got := res.Request.URL.Path; got != "/jobs/"+id {
		t.Errorf("tenax ui latest serves %s, want the page of /jobs/%s", got, id)
	}
}

// TestWorkerOnAJobOneProcessRanIsAUsageError: `tenax worker --job ID` of
// a job run without --workers exited 4, which says tenax's own storage
// failed, for what is a wrong job id; it is 2 now.
func TestWorkerOnAJobOneProcessRanIsAUsageError(t *testing.T) {
	pg := postgresStore(t)
	w := fixLaterWorkdir(t)
	r := w.tenax("run", "job.yaml", "--store", pg, "-q")
	if r.code != 1 {
		t.Fatalf("run: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	if r := w.tenax("worker", "--job", id, "--store", pg); r.code != 2 || !strings.Contains(r.stderr, "not enqueued for workers") {
		t.Errorf("worker --job %s: exit %d, want 2 saying it was not enqueued for workers\n%s", id, r.code, r.stderr)
	}
}
