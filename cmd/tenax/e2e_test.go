package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// tenaxBin is the binary the end-to-end tests run, built once by TestMain.
var tenaxBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "tenax-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tenaxBin = filepath.Join(dir, "tenax")
	build := exec.Command("go", "build", "-o", tenaxBin, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building tenax:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// workdir is a job's world: a spec, its input, its scripts and the jobs home.
type workdir struct {
	t    *testing.T
	dir  string
	home string
}

// start starts tenax with args in w, its stderr piped for the test to
// read (and drain: a full pipe blocks tenax).
func (w *workdir) start(t *testing.T, args ...string) (*exec.Cmd, io.ReadCloser) {
	t.Helper()
	cmd := exec.Command(tenaxBin, append([]string{"--home", w.home}, args...)...)
	cmd.Dir, cmd.Env = w.dir, childEnv()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, stderr
}

func newWorkdir(t *testing.T) *workdir {
	t.Helper()
	dir := t.TempDir()
	return &workdir{t: t, dir: dir, home: filepath.Join(dir, "home")}
}

func (w *workdir) write(name, content string, mode os.FileMode) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// examples copies the named files of examples/ into the work directory,
// for a test that runs an example as it ships.
func (w *workdir) examples(names ...string) {
	w.t.Helper()
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			w.t.Fatal(err)
		}
		w.write(name, string(b), 0o644)
	}
}

// items writes n JSONL items {"id": "i<n>", "n": n}.
func (w *workdir) items(name string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id": "i%d", "n": %d}`+"\n", i, i)
	}
	return w.write(name, b.String(), 0o644)
}

// result is a finished tenax process.
type result struct {
	code           int
	stdout, stderr string
}

// env returns the child's environment: no terminal answers, CI as set.
func childEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TENAX_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

func (w *workdir) tenax(args ...string) result {
	w.t.Helper()
	return w.tenaxEnv(nil, args...)
}

// tenaxEnv runs tenax like tenax, with extra environment variables
// (KEY=value) for the child.
func (w *workdir) tenaxEnv(env []string, args ...string) result {
	w.t.Helper()
	cmd := exec.Command(tenaxBin, append([]string{"--home", w.home}, args...)...)
	cmd.Dir = w.dir
	cmd.Env = childEnv(env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		w.t.Fatalf("running tenax %v: %v", args, err)
	}
	return result{code: code, stdout: out.String(), stderr: errb.String()}
}

var jobLine = regexp.MustCompile(`tenax: job (job_\w+) \(`)

func jobID(t *testing.T, r result) string {
	t.Helper()
	m := jobLine.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no job id in stderr:\n%s", r.stderr)
	}
	return m[1]
}

// record is the part of a results record the tests read.
type record struct {
	Idx      int             `json:"_idx"`
	Output   json.RawMessage `json:"output"`
	Error    string          `json:"error"`
	Class    string          `json:"class"`
	Attempts int             `json:"attempts"`
	// HealAttempts counts the item's re-asks with feedback.
	HealAttempts int      `json:"heal_attempts"`
	FinishReason string   `json:"finish_reason"`
	CostUSD      *float64 `json:"cost_usd"`
	Usage        struct {
		InputTokens  int64 `json:"input_tokens"`
		OutputTokens int64 `json:"output_tokens"`
	} `json:"usage"`
}

func readRecords(t *testing.T, path string) []record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<26)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: bad line %q: %v", path, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	return recs
}

// callCounts reads a log of one idx a line, as the test scripts write it.
func callCounts(t *testing.T, path string) map[int]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	counts := map[int]int{}
	for _, l := range strings.Fields(string(b)) {
		n, err := strconv.Atoi(l)
		if err != nil {
			t.Fatalf("bad call log line %q", l)
		}
		counts[n]++
	}
	return counts
}

func sum(m map[int]int) int {
	s := 0
	for _, v := range m {
		s += v
	}
	return s
}

// TestFlakyExecJobSucceeds: a script that fails with exit 75 and sometimes
// hangs past its timeout still brings all 500 items to success. Which
// calls fail is fixed by the item and its call count, not by chance, and
// the timeout is long enough that a loaded machine does not kill healthy
// calls: only the hanging ones reach it.
func TestFlakyExecJobSucceeds(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 500)
	w.write("flaky.sh", `#!/bin/sh
echo "$1" >> calls.log
mkdir -p calls && echo x >> "calls/$1"
n=$(wc -l < "calls/$1")
# Every third item's first call fails retryably; every 25th item's second
# call hangs until the timeout kills it.
[ "$n" -eq 1 ] && [ $(( $1 % 3 )) -eq 0 ] && exit 75
[ "$n" -eq 2 ] && [ $(( $1 % 25 )) -eq 0 ] && exec sleep 60
[ "$n" -eq 1 ] && [ $(( $1 % 25 )) -eq 0 ] && exit 75
echo "done $1"
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./flaky.sh", "{{.n}}"]
  timeout: 5s
retry:
  max_attempts: 12
  backoff: {base: 5ms, max: 50ms}
concurrency: {max: 32}
breaker: {threshold: 50}
`, 0o644)
	r := w.tenax("run", "job.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
	seen := map[int]bool{}
	for _, rec := range recs {
		if rec.Class != "" {
			t.Errorf("item %d failed: %s", rec.Idx, rec.Error)
		}
		seen[rec.Idx] = true
	}
	if len(recs) != 500 || len(seen) != 500 {
		t.Fatalf("%d records for %d distinct idx, want 500 and 500", len(recs), len(seen))
	}
	// 500 first calls, 167 retries of every third item, two more for each
	// of the 20 items that fail and then hang (7 of them counted already).
	if calls := sum(callCounts(t, filepath.Join(w.dir, "calls.log"))); calls < 700 {
		t.Errorf("%d calls for 500 items, want at least 700: the scripted faults did not all strike", calls)
	}
}

// TestFatalCommandTripsBreakerThenResume: exit 127 trips the breaker after
// threshold failures; without a terminal tenax exits 3 having called the
// script at most threshold + concurrency times, with failures.jsonl written
// and the other items pending; once the script is fixed, resume finishes.
func TestFatalCommandTripsBreakerThenResume(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 100)
	script := `#!/bin/sh
echo "$1" >> calls.log
exit 127
`
	w.write("tool.sh", script, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
breaker: {threshold: 5}
concurrency: {max: 4}
`, 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (aborted by the breaker)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	calls := sum(callCounts(t, filepath.Join(w.dir, "calls.log")))
	if calls > 5+4 {
		t.Errorf("script called %d times, want at most threshold + concurrency = 9", calls)
	}
	id := jobID(t, r)
	jobDir := filepath.Join(w.home, "jobs", id)
	failures := readRecords(t, filepath.Join(jobDir, "failures.jsonl"))
	if len(failures) != calls || failures[0].Class != "fatal" {
		t.Errorf("failures.jsonl has %d records (first %+v), want %d fatal ones", len(failures), failures, calls)
	}
	// The failed items need --retry-failures: the hint after an abort
	// says so (it did not).
	if !strings.Contains(r.stdout, "pending") || !strings.Contains(r.stdout, "Resume: tenax resume "+id+" --retry-failures") {
		t.Errorf("summary does not report pending items and the resume command with --retry-failures:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "circuit breaker open") {
		t.Errorf("summary does not say the breaker stopped the run:\n%s", r.stdout)
	}
	if st := w.tenax("status", id); !strings.Contains(st.stdout, "Breaker:   opened 1 time(s)") {
		t.Errorf("status does not count the breaker's trip:\n%s", st.stdout)
	}

	// Fix the script; resume runs the pending items, --retry-failures the rest.
	w.write("tool.sh", "#!/bin/sh\necho \"$1\" >> calls.log\necho fixed\n", 0o755)
	r = w.tenax("resume", id)
	if r.code != 1 {
		t.Fatalf("resume: exit %d, want 1 (the earlier failures remain)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	r = w.tenax("resume", id, "--retry-failures", "--output", "final.jsonl")
	if r.code != 0 {
		t.Fatalf("resume --retry-failures: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if recs := readRecords(t, filepath.Join(w.dir, "final.jsonl")); len(recs) != 100 {
		t.Errorf("final output has %d records, want 100", len(recs))
	}
	if got := sum(callCounts(t, filepath.Join(w.dir, "calls.log"))); got != calls+100 {
		t.Errorf("%d calls in all, want %d: resume must run each remaining item exactly once", got, calls+100)
	}
}

// TestCrashSafety kills tenax with SIGKILL at random moments and resumes each
// time: in the end every idx has exactly one record in the compacted output,
// and no item ran more than kills + 1 times.
func TestCrashSafety(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 5
	}
	w := newWorkdir(t)
	const n = 300
	w.items("items.jsonl", n)
	w.write("work.sh", `#!/bin/sh
echo "$1" >> calls.log
sleep 0.0$(( $(od -An -N1 -tu1 /dev/urandom) % 5 ))
echo "done $1"
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./work.sh", "{{.n}}"]
concurrency: {max: 8}
checkpoint: {flush_every: 10}
`, 0o644)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	id := ""
	killed := 0
	for attempt := 0; ; attempt++ {
		args := []string{"resume", id}
		if id == "" {
			args = []string{"run", "job.yaml"}
		}
		cmd, stderr := w.start(t, args...)
		// Wait for the job line, so the kill lands during the run.
		// Stderr is kept: a run that ends on its own says why.
		var rest strings.Builder
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			rest.WriteString(sc.Text() + "\n")
			if m := jobLine.FindStringSubmatch(sc.Text()); m != nil {
				id = m[1]
				break
			}
		}
		copied := make(chan struct{})
		go func() {
			defer close(copied)
			for sc.Scan() {
				rest.WriteString(sc.Text() + "\n")
			}
		}()
		exited := make(chan error, 1)
		go func() {
			<-copied // Wait closes the pipe: read it to its end first
			exited <- cmd.Wait()
		}()
		if killed < kills {
			select {
			case err := <-exited:
				if err == nil {
					goto finished
				}
				t.Fatalf("tenax %v exited on its own with %v before being killed; its stderr:\n%s\nits failures: %s",
					args, err, rest.String(), w.tenax("export", id, "--failed").stdout)
			case <-time.After(time.Duration(20+rng.IntN(250)) * time.Millisecond):
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			<-exited
			killed++
			continue
		}
		if err := <-exited; err != nil {
			t.Fatalf("final resume: %v", err)
		}
		break
	}
finished:
	if id == "" {
		t.Fatal("never saw a job id")
	}
	r := w.tenax("export", id)
	if r.code != 0 {
		t.Fatalf("export: exit %d: %s", r.code, r.stderr)
	}
	seen := map[int]int{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		var rec record
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("bad exported line %q: %v", line, err)
		}
		if rec.Class != "" {
			t.Errorf("item %d failed: %s", rec.Idx, rec.Error)
		}
		seen[rec.Idx]++
	}
	if len(seen) != n {
		t.Fatalf("%d distinct idx in the output after %d kills, want %d", len(seen), killed, n)
	}
	for idx, c := range seen {
		if c != 1 {
			t.Errorf("idx %d has %d final records, want 1", idx, c)
		}
	}
	calls := callCounts(t, filepath.Join(w.dir, "calls.log"))
	for idx, c := range calls {
		if c > killed+1 {
			t.Errorf("item %d ran %d times with %d kills, want at most %d", idx, c, killed, killed+1)
		}
	}
	t.Logf("%d kills, %d calls for %d items (%d extra)", killed, sum(calls), n, sum(calls)-n)
}

// startSlowJob starts a job whose items each take a while, with extra
// arguments to tenax run (a --store), and returns once tenax has printed
// its job line.
func startSlowJob(t *testing.T, w *workdir, sleep string, extra ...string) (*exec.Cmd, *bytes.Buffer, *syncBuffer, string) {
	t.Helper()
	w.items("items.jsonl", 40)
	w.write("slow.sh", "#!/bin/sh\necho \"$1\" >> calls.log\nsleep "+sleep+"\necho \"done $1\"\n", 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./slow.sh", "{{.n}}"]
concurrency: {max: 4}
`, 0o644)
	cmd := exec.Command(tenaxBin, append([]string{"--home", w.home, "run", "job.yaml"}, extra...)...)
	cmd.Dir = w.dir
	cmd.Env = childEnv()
	var out bytes.Buffer
	var errb syncBuffer
	cmd.Stdout = &out
	pr, pw := io.Pipe()
	cmd.Stderr = pw
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pr)
	id := ""
	for sc.Scan() {
		errb.WriteString(sc.Text() + "\n")
		if m := jobLine.FindStringSubmatch(sc.Text()); m != nil {
			id = m[1]
			break
		}
	}
	go func() {
		for sc.Scan() {
			errb.WriteString(sc.Text() + "\n")
		}
	}()
	t.Cleanup(func() { pw.Close() })
	return cmd, &out, &errb, id
}

func waitExit(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		_ = cmd.Process.Kill()
		t.Fatalf("tenax did not exit within %s", within)
		return -1
	}
}

// TestInterruptDrains: the first SIGINT stops dispatching, lets the calls
// in flight finish and records them, prints the resume command, exits 130;
// nothing is reported failed.
func TestInterruptDrains(t *testing.T) {
	w := newWorkdir(t)
	cmd, out, _, id := startSlowJob(t, w, "2")
	// Interrupt while calls are under way, or the test proves nothing.
	waitFor(t, "4 calls in flight", func() bool { return sum(callCounts(t, filepath.Join(w.dir, "calls.log"))) >= 4 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, out)
	}
	calls := sum(callCounts(t, filepath.Join(w.dir, "calls.log")))
	recs := readRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl"))
	if len(recs) != calls {
		t.Errorf("%d records for %d calls: the calls in flight must finish and be recorded", len(recs), calls)
	}
	for _, rec := range recs {
		if rec.Class != "" {
			t.Errorf("item %d reported failed (%s): an interruption is not a failure", rec.Idx, rec.Error)
		}
	}
	if !strings.Contains(out.String(), "tenax resume "+id) || !strings.Contains(out.String(), " 0 failed") {
		t.Errorf("summary lacks the resume command or reports failures:\n%s", out)
	}
}

// TestSecondInterruptCancels: a second SIGINT cancels the calls in flight at
// once; their items stay pending.
func TestSecondInterruptCancels(t *testing.T) {
	w := newWorkdir(t)
	cmd, out, errb, id := startSlowJob(t, w, "600")
	waitFor(t, "4 calls in flight", func() bool { return sum(callCounts(t, filepath.Join(w.dir, "calls.log"))) >= 4 })
	_ = cmd.Process.Signal(os.Interrupt)
	waitFor(t, "the first interrupt acknowledged", func() bool { return strings.Contains(errb.String(), "finishing the calls in flight") })
	_ = cmd.Process.Signal(os.Interrupt)
	// The calls sleep 600s: an exit within the safety net means they were
	// canceled, not waited for.
	if code := waitExit(t, cmd, 2*time.Minute); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, out)
	}
	if recs := readRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl")); len(recs) != 0 {
		t.Errorf("%d records: canceled calls must leave their items pending", len(recs))
	}
	if !strings.Contains(out.String(), "40 pending") {
		t.Errorf("summary does not report 40 pending:\n%s", out)
	}
}

// TestArgumentsAreLiteral: item fields with shell syntax reach the command
// as literal arguments.
func TestArgumentsAreLiteral(t *testing.T) {
	w := newWorkdir(t)
	hostile := []string{"$(touch pwned)", "; rm -rf x", `"quotes' and \backslash`, "new\nline", "`touch pwned2`", "*"}
	var b strings.Builder
	for i, h := range hostile {
		line, _ := json.Marshal(map[string]any{"id": i, "v": h})
		b.Write(line)
		b.WriteByte('\n')
	}
	w.write("items.jsonl", b.String(), 0o644)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["printf", "%s", "{{.v}}"]
`, 0o644)
	r := w.tenax("run", "job.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, rec := range readRecords(t, filepath.Join(w.dir, "out.jsonl")) {
		var got string
		if err := json.Unmarshal(rec.Output, &got); err != nil {
			t.Fatal(err)
		}
		if got != hostile[rec.Idx] {
			t.Errorf("item %d: command saw %q, want %q literally", rec.Idx, got, hostile[rec.Idx])
		}
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if _, err := os.Stat(filepath.Join(w.dir, f)); err == nil {
			t.Errorf("%s exists: a field was run by a shell", f)
		}
	}
}

func TestBadSpecExitsTwoWithPosition(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 1)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argvv: [\"true\"]\n", 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "job.yaml:4:3") || !strings.Contains(r.stderr, `did you mean "argv"`) {
		t.Fatalf("exit %d, stderr %q: want 2 with job.yaml:4:3 and a suggestion", r.code, r.stderr)
	}
}

func TestBadInputLineRefusesToStart(t *testing.T) {
	w := newWorkdir(t)
	w.write("items.jsonl", "{\"n\": 0}\n{\"n\": 1\n{\"n\": 2}\n", 0o644)
	w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n", 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "items.jsonl:2") {
		t.Fatalf("exit %d, stderr %q: want 2 naming items.jsonl:2", r.code, r.stderr)
	}
	w.write("job.yaml", "input: {path: items.jsonl, on_bad_line: record}\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n", 0o644)
	r = w.tenax("run", "job.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "2 succeeded, 1 failed") {
		t.Fatalf("with on_bad_line record: exit %d, stdout %q: want 1 with 2 succeeded, 1 failed", r.code, r.stdout)
	}
}

func TestStatusAndExport(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 10)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["sh", "-c", "if [ $(( $0 % 3 )) -eq 0 ]; then echo 'bad item '$0' at line '$0 >&2; exit 2; fi; echo ok", "{{.n}}"]
`, 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	st := w.tenax("status")
	for _, want := range []string{"6 succeeded, 4 failed, 0 pending", "item 4", "Top error groups (1 in all)"} {
		if !strings.Contains(st.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, st.stdout)
		}
	}
	ex := w.tenax("export", jobID(t, r), "--failed", "--format", "csv")
	if ex.code != 0 || strings.Count(strings.TrimSpace(ex.stdout), "\n") != 4 {
		t.Errorf("export --failed --format csv: exit %d, want a header and 4 rows:\n%s%s", ex.code, ex.stdout, ex.stderr)
	}
}

func TestVersionAndHelp(t *testing.T) {
	w := newWorkdir(t)
	if r := w.tenax("version"); r.code != 0 || !strings.HasPrefix(r.stdout, "tenax ") {
		t.Errorf("version: exit %d, %q", r.code, r.stdout)
	}
	r := w.tenax("--help")
	for _, cmd := range []string{"run", "resume", "status", "export", "validate", "mock"} {
		if !strings.Contains(r.stdout, "\n  "+cmd+" ") {
			t.Errorf("--help does not list %s:\n%s", cmd, r.stdout)
		}
	}
	if r := w.tenax("frobnicate"); r.code != 2 {
		t.Errorf("unknown command: exit %d, want 2", r.code)
	}
}

// syncBuffer is a bytes.Buffer safe to read while a goroutine writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) WriteString(p string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.WriteString(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitFor polls cond until it holds; the generous limit is a safety net for
// a hung process, never the assertion.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
