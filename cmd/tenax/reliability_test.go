package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// reliabilityLong reports whether the long (nightly) reliability mode is on.
func reliabilityLong() bool { return os.Getenv("TENAX_RELIABILITY_LONG") == "1" }

// tortureSpec is the crash-torture job: the in-process mock LLM with every
// fault on, a JSON schema, generous retry and heal budgets, no cache (so
// every run really calls the mock). Retry hints are capped at 100ms and the
// backoff is short so that the 429s' one-second Retry-After does not make
// the test slow; the durability being measured does not depend on them.
const tortureSpec = `
name: torture
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  timeout: 1s
  prompt: "Describe item {{.id}} (number {{.n}}) as JSON."
validate:
  json_schema:
    type: object
    required: [text, length]
    properties:
      text: {type: string}
      length: {type: integer}
heal: {max_attempts: 8, max_error_attempts: 5}
retry:
  max_attempts: 10
  max_hint: 100ms
  backoff: {base: 10ms, max: 200ms}
concurrency: {max: 32}
breaker: {threshold: 20}
cache: {enabled: false}
mock:
  latency: {min: 1ms, max: 5ms}
  seed: 42
  errors: {rate_limit: 0.02, server: 0.05, overloaded: 0.01, timeout: 0.005,
           reset: 0.01, malformed: 0.01, invalid_output: 0.05}
`

// tortureRecord is the part of a results record the torture test counts.
type tortureRecord struct {
	Idx                int    `json:"_idx"`
	Error              string `json:"error"`
	Class              string `json:"class"`
	Attempts           int    `json:"attempts"`
	HealAttempts       int    `json:"heal_attempts"`
	GenerationAttempts int    `json:"generation_attempts"`
}

// parseRecords decodes JSONL records; any line that does not decode fails
// the test, since after a clean final run no torn line may remain.
func parseRecords(t *testing.T, what string, data []byte) []tortureRecord {
	t.Helper()
	var recs []tortureRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for line := 1; sc.Scan(); line++ {
		var r tortureRecord
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: not a record (%v): %.200q", what, line, err, sc.Text())
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading %s: %v", what, err)
	}
	return recs
}

// tenaxProc is a tenax process started in the background.
type tenaxProc struct {
	cmd    *exec.Cmd
	id     string     // from its job line; "" if it printed none
	seenAt time.Time  // when the job line came
	exited chan error // receives cmd.Wait's result once
	stdout *bytes.Buffer
	stderr *bytes.Buffer
	copied chan struct{} // closed when stderr is fully read
}

// startTenax starts tenax with home as its home and returns once it has
// printed its job line (or exited without one). ctx bounds its life.
func startTenax(ctx context.Context, t *testing.T, dir, home string, args ...string) *tenaxProc {
	t.Helper()
	cmd := exec.CommandContext(ctx, tenaxBin, append([]string{"--home", home}, args...)...)
	cmd.Dir = dir
	cmd.Env = childEnv()
	p := &tenaxProc{cmd: cmd, exited: make(chan error, 1), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, copied: make(chan struct{})}
	cmd.Stdout = p.stdout
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	for sc.Scan() {
		p.stderr.WriteString(sc.Text() + "\n")
		if m := jobLine.FindStringSubmatch(sc.Text()); m != nil {
			p.id, p.seenAt = m[1], time.Now()
			break
		}
	}
	go func() {
		defer close(p.copied)
		_, _ = io.Copy(p.stderr, pipe)
	}()
	go func() {
		<-p.copied
		p.exited <- cmd.Wait()
	}()
	return p
}

// exitCode turns a Wait result into an exit code (-1 for a signal).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("waiting for tenax: %v", err)
	}
	return 0
}

// TestReliabilityCrashTorture runs a mock-LLM job with every fault on,
// kills tenax with SIGKILL at random moments and resumes it each time until
// it is done, then checks that no item was lost and none has two final
// records. Short mode (the default, for CI): 1,000 items, 10 kills; long
// mode (TENAX_RELIABILITY_LONG=1): 5,000 items, 50 kills.
//
// It first runs the same job once without interruption, as the baseline
// for the extra calls the kills cost. What is counted as calls is the sum
// of the records' attempts in results.jsonl — every record of every run.
// Calls of items that were in flight when a kill struck, or whose records
// were still in the write buffer, left no record and are not counted: the
// "extra calls" figure is the extra work that reached the checkpoint, and
// the calls lost with the process come on top of it.
func TestReliabilityCrashTorture(t *testing.T) {
	n, kills := 1000, 10
	if reliabilityLong() {
		n, kills = 5000, 50
	}
	if v, err := strconv.Atoi(os.Getenv("TENAX_RELIABILITY_ITEMS")); err == nil && v > 0 {
		n = v
	}
	if v, err := strconv.Atoi(os.Getenv("TENAX_RELIABILITY_KILLS")); err == nil && v >= 0 {
		kills = v
	}
	seed := uint64(time.Now().UnixNano())
	if v, err := strconv.ParseUint(os.Getenv("TENAX_RELIABILITY_SEED"), 10, 64); err == nil {
		seed = v
	}
	t.Logf("%d items, %d kills, kill-time seed %d (TENAX_RELIABILITY_SEED=%d repeats the draws; the moments they land on depend on the machine)",
		n, kills, seed, seed)
	rng := rand.New(rand.NewPCG(seed, 0x7e4a))

	limit := 5 * time.Minute
	if reliabilityLong() {
		limit = 30 * time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()

	w := newWorkdir(t)
	w.items("items.jsonl", n)
	w.write("job.yaml", tortureSpec, 0o644)

	// The baseline: one uninterrupted run.
	base := startTenax(ctx, t, w.dir, filepath.Join(w.dir, "baseline"), "run", "job.yaml")
	code := exitCode(t, <-base.exited)
	baseTime := time.Since(base.seenAt)
	if code != 0 || base.id == "" {
		t.Fatalf("baseline run: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", code, base.stdout, base.stderr)
	}
	baseRecs := parseRecords(t, "baseline results.jsonl", mustRead(t, filepath.Join(w.dir, "baseline", "jobs", base.id, "results.jsonl")))
	baseCalls, baseHeals := 0, 0
	for _, r := range baseRecs {
		baseCalls += r.Attempts
		baseHeals += r.HealAttempts
	}
	t.Logf("baseline: %d items in %s, %d calls (%d re-asks), %d records",
		n, baseTime.Round(time.Millisecond), baseCalls, baseHeals, len(baseRecs))

	// The torture: kill at a moment drawn uniformly from [0, baseline/kills)
	// after the job line, so that the kills spread over about half the
	// work and the last resume finishes the rest.
	home := filepath.Join(w.dir, "home")
	slice := max(baseTime/time.Duration(max(kills, 1)), 10*time.Millisecond)
	var (
		id        string
		killed    int
		runs      int
		final     *tenaxProc
		finalCode int
		start     = time.Now()
	)
	for final == nil {
		args := []string{"resume", id, "--output", "out.jsonl"}
		if id == "" {
			args = []string{"run", "job.yaml", "--output", "out.jsonl"}
		}
		p := startTenax(ctx, t, w.dir, home, args...)
		runs++
		if p.id == "" {
			err := <-p.exited
			t.Fatalf("run %d printed no job line: %v\nstdout:\n%s\nstderr:\n%s", runs, err, p.stdout, p.stderr)
		}
		id = p.id
		if killed < kills {
			select {
			case err := <-p.exited:
				finalCode, final = exitCode(t, err), p
				t.Logf("the job finished on its own after %d of %d kills", killed, kills)
				continue
			case <-time.After(time.Duration(rng.Int64N(int64(slice)))):
			}
			_ = p.cmd.Process.Signal(syscall.SIGKILL)
			<-p.exited
			killed++
			continue
		}
		code := exitCode(t, <-p.exited)
		switch code {
		case 0, 1:
			finalCode, final = code, p
		case 3:
			// The breaker stopped the run; the pending items need another
			// resume. Not expected with these budgets, but not a loss.
			t.Logf("run %d: the breaker stopped it (exit 3); resuming\n%s", runs, p.stdout)
			if runs > kills+5 {
				t.Fatalf("the breaker keeps stopping the job")
			}
		default:
			t.Fatalf("run %d: exit %d\nstdout:\n%s\nstderr:\n%s", runs, code, p.stdout, p.stderr)
		}
	}
	elapsed := time.Since(start)

	// Every record of every run.
	jobDir := filepath.Join(home, "jobs", id)
	all := parseRecords(t, "results.jsonl", mustRead(t, filepath.Join(jobDir, "results.jsonl")))
	perIdx := map[int]int{}
	calls, heals := 0, 0
	for _, r := range all {
		perIdx[r.Idx]++
		calls += r.Attempts
		heals += r.HealAttempts
	}
	rerun := 0
	for idx, c := range perIdx {
		if c > 1 {
			rerun++
			if rerun <= 10 {
				t.Errorf("idx %d has %d records in results.jsonl: a plain resume must skip every idx that has a record", idx, c)
			}
		}
	}

	// The compacted output, both ways.
	ex := startTenax(ctx, t, w.dir, home, "export", id)
	if code := exitCode(t, <-ex.exited); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, ex.stderr)
	}
	exported := parseRecords(t, "export", ex.stdout.Bytes())
	output := parseRecords(t, "out.jsonl", mustRead(t, filepath.Join(w.dir, "out.jsonl")))
	lost, dups, failed := checkCompacted(t, "export", exported, n)
	lostOut, dupsOut, _ := checkCompacted(t, "--output", output, n)
	shown := 0
	for _, r := range exported {
		if r.Class != "" && shown < 10 {
			shown++
			t.Logf("item %d failed (%s): %s", r.Idx, r.Class, r.Error)
		}
	}

	t.Logf("torture: %d kills over %d runs in %s (final exit %d)", killed, runs, elapsed.Round(time.Millisecond), finalCode)
	t.Logf("items lost: %d (export), %d (--output); duplicate final records: %d (export), %d (--output); failed: %d",
		lost, lostOut, dups, dupsOut, failed)
	t.Logf("records in results.jsonl: %d for %d items (%d idx recorded twice)", len(all), n, rerun)
	t.Logf("calls counted in records: %d (%d re-asks) vs %d in the uninterrupted run: %+d extra (%+.1f%%, %+.1f per kill)",
		calls, heals, baseCalls, calls-baseCalls, 100*float64(calls-baseCalls)/float64(baseCalls), float64(calls-baseCalls)/float64(max(killed, 1)))
	if killed == 0 && kills > 0 {
		t.Errorf("no kill landed during the run: the test proves nothing")
	}
}

// checkCompacted checks a compacted output: one record per idx of [0, n),
// in idx order. It returns the idx lost, the extra records and the failed
// items.
func checkCompacted(t *testing.T, what string, recs []tortureRecord, n int) (lost, dups, failed int) {
	t.Helper()
	seen := make(map[int]int, n)
	prev := -1
	for _, r := range recs {
		seen[r.Idx]++
		if seen[r.Idx] > 1 {
			dups++
			if dups <= 10 {
				t.Errorf("%s: idx %d has %d final records, want 1", what, r.Idx, seen[r.Idx])
			}
		}
		if r.Idx < prev {
			t.Errorf("%s: idx %d after %d, want idx order", what, r.Idx, prev)
		}
		prev = r.Idx
		if r.Class != "" {
			failed++
		}
	}
	for idx := range n {
		if seen[idx] == 0 {
			lost++
			if lost <= 10 {
				t.Errorf("%s: idx %d has no final record: item lost", what, idx)
			}
		}
	}
	if len(seen) != n {
		t.Errorf("%s: %d distinct idx, want %d", what, len(seen), n)
	}
	return lost, dups, failed
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
