package main

import (
	"bufio"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveUI starts tenax ui with args and returns the address it serves;
// the process is killed when the test ends.
func serveUI(t *testing.T, w *workdir, args ...string) string {
	t.Helper()
	cmd, stderr := w.start(t, append([]string{"ui"}, args...)...)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	sc := bufio.NewScanner(stderr)
	base := ""
	for base == "" && sc.Scan() {
		if u, ok := strings.CutPrefix(sc.Text(), "tenax: serving "); ok {
			base, _, _ = strings.Cut(u, " ")
		}
	}
	if base == "" {
		t.Fatal("tenax ui printed no address")
	}
	go func() { _, _ = io.Copy(io.Discard, stderr) }()
	return base
}

// get returns the body of the page at url.
func get(t *testing.T, url string) string {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAKilledWorkerIsShownLostByStatusAndUI: after kill -9, a worker kept
// showing "4 in flight" and an ever older heartbeat, with no state, in
// tenax status and on the job's page in tenax ui. Once its heartbeat is
// older than its --rescue-after, both say it is lost, with 0 in flight.
func TestAKilledWorkerIsShownLostByStatusAndUI(t *testing.T) {
	pg := postgresStore(t)
	w := newWorkdir(t)
	w.items("items.jsonl", 8)
	// Each call outlasts the test's worker (and ends on its own after the
	// kill leaves it behind).
	w.write("slow.sh", "#!/bin/sh\nsleep 60\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task: {type: exec, argv: ["./slow.sh", "{{.n}}"]}
concurrency: {max: 4}
`, 0o644)
	r := w.tenax("run", "job.yaml", "--store", pg, "--workers", "0")
	if r.code != 0 {
		t.Fatalf("run --workers 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	cmd, stderr := w.start(t, "worker", "--job", id, "--store", pg, "--rescue-after", "6s", "--concurrency", "4", "--report-every", "100ms")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(stderr)
	for !strings.Contains(sc.Text(), "4 in flight") {
		if !sc.Scan() {
			t.Fatal("the worker stopped before it had 4 items in flight")
		}
	}
	if st := pollStatus(t, w, pg, id, "| 4 in flight"); strings.Contains(st, "lost") {
		t.Fatalf("tenax status says a live worker is lost:\n%s", st)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	const lost = "lost: its items go back to the queue"
	st := pollStatus(t, w, pg, id, lost)
	if !strings.Contains(st, "| 0 in flight") {
		t.Errorf("tenax status shows the lost worker with items in flight, want 0:\n%s", st)
	}
	page := get(t, serveUI(t, w, id, "--store", pg))
	for _, want := range []string{lost, `<td class="num">0 of 4</td>`} {
		if !strings.Contains(page, want) {
			t.Errorf("the job's page has no %q for the killed worker:\n%s", want, page)
		}
	}
}

// pollStatus polls tenax status of job id until its output holds want,
// and returns it; the deadline is only a safety net.
func pollStatus(t *testing.T, w *workdir, pg, id, want string) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		st := w.tenax("status", id, "--store", pg)
		if strings.Contains(st.stdout, want) {
			return st.stdout
		}
		if time.Now().After(deadline) {
			t.Fatalf("tenax status never said %q:\n%s%s", want, st.stdout, st.stderr)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
