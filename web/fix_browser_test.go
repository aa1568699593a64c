package web_test

import (
	"bufio"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
)

// browserOrSkip returns node and the browser the browser tests drive, or
// skips the test saying what is missing.
func browserOrSkip(t *testing.T) (node, chromium string) {
	t.Helper()
	const howTo = "run `npm ci` in web/browser and install chromium (apt-get install -y chromium), or .ci/run"
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("no node on PATH: " + howTo)
	}
	if _, err := os.Stat(filepath.Join("browser", "node_modules", "playwright-core")); err != nil {
		t.Skip("web/browser/node_modules is missing: " + howTo)
	}
	chromium = cmpOr(os.Getenv("TENAX_CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(chromium); err != nil {
		t.Skip(chromium + " is missing: " + howTo)
	}
	return node, chromium
}

var fixURLLine = regexp.MustCompile(`tenax: watch the fix run at (\S+)`)

// TestBrowserFixPage runs web/browser/fix.test.mjs in headless Chromium
// against `tenax fix --ui` on a repository with three failing tests and a
// fixer that waits, attempt by attempt, for the browser test to let it go:
// TestA goes from new to fixed on the page, and a Skip of TestB pressed
// during attempt 1 makes attempt 2 TestC's. TENAX_SCREENSHOTS=dir saves
// web-fix.png there.
func TestBrowserFixPage(t *testing.T) {
	node, chromium := browserOrSkip(t)
	bin := tenax(t)
	dir, gate := t.TempDir(), t.TempDir()
	for _, name := range []string{"check.sh", "fixer.sh", "fix.yaml"} {
		b, err := os.ReadFile(filepath.Join("testdata", "fix", name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{".gitignore": ".tenax/\n", "A.txt": "1\n", "B.txt": "2\n", "C.txt": "3\n"}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "broken"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	home := filepath.Join(dir, ".tenax")
	run := exec.Command(bin, "--home", home, "fix", "fix.yaml", "--ui")
	run.Dir = dir
	run.Env = append(os.Environ(), "GATE="+gate)
	stderr := &lockedBuffer{}
	pr, pw := io.Pipe()
	run.Stderr = io.MultiWriter(stderr, pw)
	if err := run.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var runErr error
	go func() { runErr = run.Wait(); pw.Close(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			run.Process.Kill()
			<-done
		}
	})
	pageURL := ""
	sc := bufio.NewScanner(pr)
	for pageURL == "" && sc.Scan() {
		if m := fixURLLine.FindStringSubmatch(sc.Text()); m != nil {
			pageURL = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if pageURL == "" {
		t.Fatalf("tenax fix --ui printed no page URL; stderr:\n%s", stderr)
	}

	env := append(os.Environ(), "TENAX_FIX_URL="+pageURL, "TENAX_FIX_GATE="+gate, "TENAX_CHROMIUM="+chromium)
	if d := os.Getenv("TENAX_SCREENSHOTS"); d != "" {
		abs, err := filepath.Abs(d)
		if err != nil {
			t.Fatal(err)
		}
		env = append(env, "TENAX_SCREENSHOTS="+abs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "--test-reporter=spec", "fix.test.mjs")
	cmd.Dir = "browser"
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	t.Logf("node --test:\n%s", out)
	if err != nil {
		t.Errorf("the browser test failed: %v\ntenax fix's stderr:\n%s", err, stderr)
	}

	// The run ends with TestB left, skipped from the page: exit 1.
	select {
	case <-done:
		if ee, ok := runErr.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Errorf("tenax fix ended with %v; want exit 1 (TestB skipped, left failing); stderr:\n%s", runErr, stderr)
		}
	case <-time.After(2 * time.Minute): // a safety net, not a measure
		t.Fatalf("tenax fix did not end; stderr:\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "the web page skipped") {
		t.Errorf("the terminal was not told of the page's skip; stderr:\n%s", stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "B.txt")); strings.TrimSpace(string(b)) != "2" {
		t.Errorf("B.txt holds %q; the skipped error must never reach the fixer", b)
	}
	store, err := fix.OpenStore(home, "latest")
	if err != nil {
		t.Fatal(err)
	}
	recs, err := store.ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, r := range recs {
		if r.Kind == "operator" || r.Kind == "attempt" {
			kinds = append(kinds, r.Kind+":"+r.Name)
		}
	}
	if want := "attempt:TestA operator:TestB attempt:TestC"; strings.Join(kinds, " ") != want {
		t.Errorf("the audit trail's attempts and instructions are %v; want %s", kinds, want)
	}
}
