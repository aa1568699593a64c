package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The tests in this file run the tenax binary: they build it once.
var (
	buildOnce sync.Once
	tenaxBin  string
	buildErr  error
)

func tenax(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs tenax; skipped with -short")
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "tenax-web-test-")
		if err != nil {
			buildErr = err
			return
		}
		tenaxBin = filepath.Join(dir, "tenax")
		out, err := exec.Command("go", "build", "-o", tenaxBin, "github.com/tenaxhq/tenax/cmd/tenax").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return tenaxBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if tenaxBin != "" {
		os.RemoveAll(filepath.Dir(tenaxBin))
	}
	os.Exit(code)
}

// job is a tenax run started by a test.
type job struct {
	cmd        *exec.Cmd
	URL        string // the page's URL (--ui)
	MetricsURL string // --metrics
	ID         string
	Home       string
	stderr     *lockedBuffer
	done       chan struct{}
	err        error
}

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var (
	urlLine     = regexp.MustCompile(`tenax: watch the run at (\S+)`)
	metricsLine = regexp.MustCompile(`tenax: Prometheus metrics at (\S+)`)
	jobLine     = regexp.MustCompile(`tenax: job (job_\S+)`)
)

// startJob copies spec into a directory of its own with items.jsonl of n
// items (w000, w001, …), runs `tenax run spec args...` there, and waits
// until it printed its URLs and job id.
func startJob(t *testing.T, spec string, n int, env []string, args ...string) *job {
	var words []string
	for i := range n {
		words = append(words, fmt.Sprintf("w%03d", i))
	}
	return startJobWords(t, spec, words, env, args...)
}

// startJobWords is startJob with the items' words.
func startJobWords(t *testing.T, spec string, words []string, env []string, args ...string) *job {
	t.Helper()
	dir := t.TempDir()
	data, err := os.ReadFile(filepath.Join("testdata", spec))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, spec), data, 0o644); err != nil {
		t.Fatal(err)
	}
	var items strings.Builder
	for _, w := range words {
		fmt.Fprintf(&items, "{\"id\": %q, \"word\": %q}\n", w, w)
	}
	if err := os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte(items.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	j := &job{Home: filepath.Join(dir, "home"), stderr: &lockedBuffer{}, done: make(chan struct{})}
	j.cmd = exec.Command(tenax(t), append([]string{"run", filepath.Join(dir, spec), "--home", j.Home, "--quiet"}, args...)...)
	j.cmd.Dir = dir
	j.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	j.cmd.Stderr = io.MultiWriter(j.stderr, pw)
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		j.err = j.cmd.Wait()
		pw.Close()
		close(j.done)
	}()
	t.Cleanup(func() {
		select {
		case <-j.done:
		default:
			j.cmd.Process.Kill()
			<-j.done
		}
	})
	wantUI, wantMetrics := slices.Contains(args, "--ui"), slices.Contains(args, "--metrics")
	sc := bufio.NewScanner(pr)
	for (wantUI && j.URL == "" || wantMetrics && j.MetricsURL == "" || j.ID == "") && sc.Scan() {
		if m := urlLine.FindStringSubmatch(sc.Text()); m != nil {
			j.URL = m[1]
		}
		if m := metricsLine.FindStringSubmatch(sc.Text()); m != nil {
			j.MetricsURL = m[1]
		}
		if m := jobLine.FindStringSubmatch(sc.Text()); m != nil {
			j.ID = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if j.ID == "" || wantUI && j.URL == "" || wantMetrics && j.MetricsURL == "" {
		<-j.done
		t.Fatalf("tenax printed no URL or job id (exit: %v); stderr:\n%s", j.err, j.stderr)
	}
	return j
}

// wait waits for the run to end and returns its exit code.
func (j *job) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-j.done:
	case <-time.After(2 * time.Minute): // a safety net, not a measure
		j.cmd.Process.Kill()
		<-j.done
		t.Fatalf("tenax did not end; stderr:\n%s", j.stderr)
	}
	if ee, ok := j.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if j.err != nil {
		t.Fatal(j.err)
	}
	return 0
}

// interrupt stops the run as Ctrl-C does and waits for it.
func (j *job) interrupt(t *testing.T) int {
	t.Helper()
	j.cmd.Process.Signal(syscall.SIGINT)
	return j.wait(t)
}

// TestBrowser runs web/browser's tests in headless Chromium against two
// live jobs: a long mock-LLM job (updates, error groups, heal timelines)
// and an exec job whose breaker trips (Continue / Abort / Inspect).
// TENAX_SCREENSHOTS=dir saves the README's screenshots there.
func TestBrowser(t *testing.T) {
	const howTo = "run `npm ci` in web/browser and install chromium (apt-get install -y chromium), or .ci/run"
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: " + howTo)
	}
	if _, err := os.Stat(filepath.Join("browser", "node_modules", "playwright-core")); err != nil {
		t.Skip("web/browser/node_modules is missing: " + howTo)
	}
	chromium := cmpOr(os.Getenv("TENAX_CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(chromium); err != nil {
		t.Skip(chromium + " is missing: " + howTo)
	}

	live := startJob(t, "live.yaml", 5000, nil, "--ui")
	state := t.TempDir()
	brk := startJob(t, "breaker.yaml", 30, []string{"STATE=" + state}, "--ui")
	rt := newRetryJob(t)
	ctl := startJob(t, "live.yaml", 5000, nil, "--ui")

	env := append(os.Environ(), "TENAX_LIVE_URL="+live.URL, "TENAX_BREAKER_URL="+brk.URL, "TENAX_RETRY_URL="+rt.ui.URL,
		"TENAX_CONTROL_URL="+ctl.URL, "TENAX_CHROMIUM="+chromium)
	if dir := os.Getenv("TENAX_SCREENSHOTS"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "TENAX_SCREENSHOTS="+abs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "page.test.mjs")
	cmd.Dir = "browser"
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Errorf("the browser tests failed: %v\nlive job's stderr:\n%s\nbreaker job's stderr:\n%s", err, live.stderr, brk.stderr)
	}

	// Continue on the page let the breaker job run to its end: three
	// failures, 27 successes (exit 1: finished with failures).
	if code := brk.wait(t); code != 1 {
		t.Errorf("the breaker job exited %d, want 1 (finished with failures); stderr:\n%s", code, brk.stderr)
	}
	if !strings.Contains(brk.stderr.String(), "answered on the web page: continue") {
		t.Errorf("the terminal was not told the page answered; stderr:\n%s", brk.stderr)
	}
	if s, f, p := countOutcomes(t, brk.Home, brk.ID); s != 27 || f != 3 || p != 0 {
		t.Errorf("the breaker job recorded %d succeeded, %d failed, %d pending; want 27, 3, 0", s, f, p)
	}
	// Stopped on the page: the operator's stop (exit 3), every item
	// either recorded or pending, none lost.
	if code := ctl.wait(t); code != 3 {
		t.Errorf("the job stopped on the page exited %d, want 3 (aborted by the operator); stderr:\n%s", code, ctl.stderr)
	}
	if s, f, p := countOutcomes(t, ctl.Home, ctl.ID); s+f+p != 5000 || s+f == 0 || p == 0 {
		t.Errorf("the stopped job recorded %d succeeded, %d failed, %d pending; want some recorded, the rest pending, 5000 in all", s, f, p)
	}
	if code := live.interrupt(t); code != 130 {
		t.Errorf("the interrupted live job exited %d, want 130; stderr:\n%s", code, live.stderr)
	}
	rt.check(t)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
