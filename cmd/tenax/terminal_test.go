package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// screenLines replays what tenax wrote to a terminal cols columns wide, as
// the terminal shows it: carriage returns go back to column 0, "ESC[K"
// erases to the end of the line, other escape sequences are skipped. It
// returns the lines left on the screen (scrollback included), how many
// times a line was redrawn in place, and the lines that were redrawn in
// place although they had reached the last column (where a terminal wraps
// them, so that the redraw lands one line too low). Long log and summary
// lines may wrap; a line drawn over with a carriage return may not.
func screenLines(out string, cols int) (lines []string, redraws int, wraps []string) {
	wide := false // the current line reached the last column
	cur := []rune{}
	col := 0
	flush := func() {
		lines = append(lines, strings.TrimRight(string(cur), " "))
		cur, col = cur[:0:0], 0
	}
	for i := 0; i < len(out); {
		switch c := out[i]; {
		case c == '\r' && strings.HasPrefix(out[i+1:], "\n"):
			// The terminal's own end of line (the pty's ONLCR).
			i++
		case c == '\r':
			if wide {
				wraps = append(wraps, string(cur))
			}
			col, wide = 0, false
			redraws++
			i++
		case c == '\n':
			flush()
			wide = false
			i++
		case c == 0x1b:
			j := i + 1
			if j < len(out) && out[j] == '[' {
				j++
				for j < len(out) && (out[j] < 0x40 || out[j] > 0x7e) {
					j++
				}
				if j < len(out) && out[j] == 'K' && col < len(cur) {
					cur = cur[:col]
				}
			}
			i = j + 1
		default:
			r, n := utf8.DecodeRuneInString(out[i:])
			i += n
			if r < ' ' {
				continue
			}
			if col >= cols-1 {
				wide = true
			}
			if col < len(cur) {
				cur[col] = r
			} else {
				for len(cur) < col {
					cur = append(cur, ' ')
				}
				cur = append(cur, r)
			}
			col++
		}
	}
	if len(cur) > 0 {
		flush()
	}
	return lines, redraws, wraps
}

// TestProgressLineFitsEightyColumns is the regression test of the progress
// line that was wider than the terminal: on 80 columns every refresh
// printed a new line, the bar shrank to "||" and WARN log lines were glued
// onto it. Now the line is redrawn in place, never reaches the last
// column, and log lines appear whole above it.
func TestProgressLineFitsEightyColumns(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 30)
	// Items 5, 6 and 7 fail as a missing command would: the breaker opens
	// (a WARN log line), waits, and closes again on the next success.
	w.write("tool.sh", "#!/bin/sh\ncase $1 in 5|6|7) echo \"no license for $1\" >&2; exit 127;; esac\nsleep 0.05\necho ok\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 3, on_trip: wait, reset_timeout: 300ms}
concurrency: {max: 1}
`, 0o644)
	term := startOnTerminalWidth(t, w, 80, "run", "job.yaml")
	if code := term.exitCode(); code != 1 {
		t.Fatalf("exit %d, want 1 (three items failed)", code)
	}
	term.expect("27 succeeded, 3 failed")
	term.mu.Lock()
	out := term.out.String()
	term.mu.Unlock()

	lines, redraws, wraps := screenLines(out, 80)
	for _, w := range wraps {
		t.Errorf("a line reached the 80th column and wrapped: %q", w)
	}
	if redraws < 3 {
		t.Errorf("the progress line was drawn %d times; a run of 30 slow items refreshes it more", redraws)
	}
	progress, warns := 0, 0
	for _, l := range lines {
		isProgress := strings.Contains(l, "/30")
		if isProgress {
			progress++
		}
		if strings.Contains(l, "level=WARN") {
			warns++
			if !strings.HasPrefix(l, "time=") || isProgress {
				t.Errorf("a log line is not on a line of its own: %q", l)
			}
		}
	}
	if progress != 1 {
		t.Errorf("%d progress lines left on the screen, want the one redrawn in place:\n%s", progress, strings.Join(lines, "\n"))
	}
	if warns == 0 {
		t.Errorf("no WARN line about the breaker on the screen:\n%s", strings.Join(lines, "\n"))
	}
}

// readManifest reads a job's manifest.json.
func readManifest(t *testing.T, home, id string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(home, "jobs", id, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// onlyJobID returns the id of the one job under home.
func onlyJobID(t *testing.T, home string) string {
	t.Helper()
	var id string
	waitFor(t, "the job's directory", func() bool {
		entries, _ := os.ReadDir(filepath.Join(home, "jobs"))
		if len(entries) == 1 {
			id = entries[0].Name()
			return true
		}
		return false
	})
	return id
}

// TestHangupEndsTheRunInterrupted is the regression test of SIGHUP killing
// a run without a word: the manifest said running forever, failures.jsonl
// was never written, and status could not tell the job from a live one.
// Closing the terminal now interrupts the run like Ctrl-C.
func TestHangupEndsTheRunInterrupted(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 40)
	w.write("tool.sh", "#!/bin/sh\n[ \"$1\" = 1 ] && { echo \"no license\" >&2; exit 127; }\nsleep 0.3\necho ok\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
concurrency: {max: 2}
`, 0o644)
	term := startOnTerminalWidth(t, w, 80, "run", "job.yaml")
	id := onlyJobID(t, w.home)
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	waitFor(t, "three records", func() bool {
		b, _ := os.ReadFile(results)
		return bytes.Count(b, []byte("\n")) >= 3
	})
	term.hangup()
	if code := term.exitCode(); code != 130 {
		t.Fatalf("exit %d after SIGHUP, want 130 (interrupted)", code)
	}
	m := readManifest(t, w.home, id)
	if m["state"] != "interrupted" {
		t.Errorf("manifest state %q after SIGHUP, want interrupted", m["state"])
	}
	if reason, _ := m["stop_reason"].(string); !strings.Contains(reason, "SIGHUP") {
		t.Errorf("stop reason %q does not name SIGHUP", reason)
	}
	failures, err := os.ReadFile(filepath.Join(w.home, "jobs", id, "failures.jsonl"))
	if err != nil {
		t.Fatalf("no failures.jsonl after SIGHUP: %v", err)
	}
	if !strings.Contains(string(failures), `"_idx":1,`) {
		t.Errorf("failures.jsonl lacks the failed item 1:\n%s", failures)
	}
	if r := w.tenax("status", id); !strings.Contains(r.stdout, ": interrupted") {
		t.Errorf("status does not say interrupted:\n%s", r.stdout)
	}
}

// TestKilledRunIsStaleThenResumesByName is the regression test of a job
// whose process was killed and that status still showed as running: it is
// stale now, and `tenax resume` takes the job's name.
func TestKilledRunIsStaleThenResumesByName(t *testing.T) {
	w := newWorkdir(t)
	cmd, _, _, id := startSlowJob(t, w, "0.3")
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	waitFor(t, "a record", func() bool {
		b, _ := os.ReadFile(results)
		return bytes.Count(b, []byte("\n")) >= 1
	})
	if r := w.tenax("status", "latest"); !strings.Contains(r.stdout, id+" (job): running") {
		t.Errorf("status of the live job does not say running:\n%s%s", r.stdout, r.stderr)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	r := w.tenax("status")
	if !strings.Contains(r.stdout, id+" (job): stale") || !strings.Contains(r.stdout, "tenax resume "+id) {
		t.Errorf("status of the killed job:\n%s%s\nwant stale with the resume command", r.stdout, r.stderr)
	}
	if r := w.tenax("status", "--all"); !strings.Contains(r.stdout, "stale") {
		t.Errorf("status --all does not show the job stale:\n%s", r.stdout)
	}
	// The spec has no name: the job is named after its file, job.yaml.
	if r := w.tenax("resume", "nosuchjob"); r.code != 2 || !strings.Contains(r.stderr, "latest") {
		t.Errorf("resume of an unknown job: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.tenax("resume", "job"); r.code != 0 || !strings.Contains(r.stdout, "40 succeeded") {
		t.Fatalf("resume by name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.tenax("status", id); !strings.Contains(r.stdout, id+" (job): completed") {
		t.Errorf("status after the resume:\n%s", r.stdout)
	}
}

// TestExportAndResumeTakeTheJobsName: a job's name works wherever its id
// does.
func TestExportAndResumeTakeTheJobsName(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 6)
	w.write("job.yaml", `
name: echo-items
input: items.jsonl
task:
  type: exec
  argv: ["echo", "{{.n}}"]
`, 0o644)
	if r := w.tenax("run", "job.yaml", "--limit", "2"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if r := w.tenax("resume", "echo-items"); r.code != 0 || !strings.Contains(r.stdout, "6 succeeded") {
		t.Fatalf("resume by name: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := w.tenax("export", "echo-items"); r.code != 0 || strings.Count(r.stdout, "\n") != 6 {
		t.Errorf("export by name: exit %d, %d lines\n%s%s", r.code, strings.Count(r.stdout, "\n"), r.stdout, r.stderr)
	}
	if r := w.tenax("export", "latest", "--format", "csv"); r.code != 0 || strings.Count(r.stdout, "\n") != 7 {
		t.Errorf("export latest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestRetryFailuresChoosesByClassAndFingerprint is the regression test of
// two findings: the summary after failures suggested a resume without
// --retry-failures (which leaves the failed items behind), and
// --retry-failures could not choose which failures to retry.
func TestRetryFailuresChoosesByClassAndFingerprint(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 8)
	// Items 0 and 1 lack a license (exit 127, fatal), items 2 and 3 hit a
	// busy server (exit 75, retryable), until ./fixed exists.
	w.write("tool.sh", `#!/bin/sh
echo "$1" >> calls.log
if [ ! -e fixed ]; then
  case $1 in
    0|1) echo "no license for item $1" >&2; exit 127;;
    2|3) echo "server busy" >&2; exit 75;;
  esac
fi
echo ok
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
retry: {max_attempts: 1}
breaker: {threshold: 100}
`, 0o644)
	r := w.tenax("run", "job.yaml")
	id := jobID(t, r)
	if r.code != 1 || !strings.Contains(r.stdout, "Retry the failures: tenax resume "+id+" --retry-failures") {
		t.Fatalf("run: exit %d; the summary must suggest --retry-failures:\n%s%s", r.code, r.stdout, r.stderr)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(w.dir, "calls.log"))
	r = w.tenax("resume", "latest", "--retry-failures=retryable")
	if r.code != 1 || !strings.Contains(r.stdout, "6 succeeded, 2 failed") {
		t.Fatalf("resume --retry-failures=retryable: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := callCounts(t, filepath.Join(w.dir, "calls.log")); len(calls) != 2 || calls[2] != 1 || calls[3] != 1 {
		t.Errorf("--retry-failures=retryable called %v, want items 2 and 3 once each", calls)
	}
	if r := w.tenax("resume", "latest", "--retry-failures=retryabel"); r.code != 2 || !strings.Contains(r.stderr, "not a failure class") {
		t.Errorf("a misspelt class: exit %d\n%s", r.code, r.stderr)
	}

	var fatal struct {
		Fingerprint string `json:"fingerprint"`
	}
	failures, err := os.ReadFile(filepath.Join(w.home, "jobs", id, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(failures), "\n")
	if err := json.Unmarshal([]byte(first), &fatal); err != nil || len(fatal.Fingerprint) < 8 {
		t.Fatalf("failures.jsonl: %v\n%s", err, failures)
	}
	os.Remove(filepath.Join(w.dir, "calls.log"))
	r = w.tenax("resume", id, "--fingerprint", fatal.Fingerprint[:8])
	if r.code != 0 || !strings.Contains(r.stdout, "8 succeeded, 0 failed") {
		t.Fatalf("resume --fingerprint: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if calls := callCounts(t, filepath.Join(w.dir, "calls.log")); len(calls) != 2 || calls[0] != 1 || calls[1] != 1 {
		t.Errorf("--fingerprint called %v, want items 0 and 1 once each", calls)
	}
}

// TestValidateRendersTemplatesAgainstTheInput is the regression test of
// `tenax validate` passing {{.wrd}}: with an input to look at, it renders
// the templates against its first items and exits 2 naming the line.
func TestValidateRendersTemplatesAgainstTheInput(t *testing.T) {
	w := newWorkdir(t)
	w.write("items.jsonl", "{\"word\": \"a\"}\n", 0o644)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.wrd}}\"]\n", 0o644)
	r := w.tenax("validate", "job.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, `items.jsonl:1 (item #0): argv[1] uses {{.wrd}}, but the item has no field "wrd"; did you mean {{.word}}?`) {
		t.Errorf("validate: exit %d\n%s", r.code, r.stderr)
	}
	w.write("empty.jsonl", "", 0o644)
	if r := w.tenax("run", "job.yaml", "--input", "empty.jsonl"); r.code != 2 || !strings.Contains(r.stderr, "--allow-empty") {
		t.Errorf("run over an empty input: exit %d\n%s", r.code, r.stderr)
	}
}

// TestInspectPagesWithTheWebViewOn: with --ui the page watches the run's
// events too, and the terminal's Inspect still pages through the failures
// the breaker drained (the page's monitor once replaced the terminal's
// view of the events).
func TestInspectPagesWithTheWebViewOn(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 20)
	w.write("tool.sh", "#!/bin/sh\necho \"no license for item $1\" >&2\nexit 127\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 3}
concurrency: {max: 1}
`, 0o644)
	term := startOnTerminal(t, w, "run", "job.yaml", "--ui")
	term.expect("Circuit breaker open: 3 consecutive failures")
	term.expect("[C]ontinue  [A]bort  [I]nspect details")
	term.send("i\n")
	term.expect("no license for item 2")
	term.expect("Failure 1 of 3")
	term.send("i\n")
	term.expect("no license for item 1")
	term.expect("Failure 2 of 3")
	term.send("a\n")
	if code := term.exitCode(); code != 3 {
		t.Fatalf("exit %d after Abort, want 3", code)
	}
}
