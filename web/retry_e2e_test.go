package web_test

import (
	"bufio"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/store"
)

// retryJob is a finished job with two error groups, served by tenax ui,
// and a copy of its home on which tenax resume --fingerprint runs: what
// the page's "retry this group" must do, done by the CLI.
type retryJob struct {
	job   *job
	ui    *uiServer
	state string
	copy  string // the copy of the job's home
}

// uiServer is a `tenax ui` started by a test.
type uiServer struct {
	cmd    *exec.Cmd
	URL    string
	stderr *lockedBuffer
	done   chan struct{}
}

var servingLine = regexp.MustCompile(`tenax: serving (\S+)`)

// startUI runs `tenax ui args...` and waits for its URL.
func startUI(t *testing.T, env []string, args ...string) *uiServer {
	t.Helper()
	u := &uiServer{stderr: &lockedBuffer{}, done: make(chan struct{})}
	u.cmd = exec.Command(tenax(t), append([]string{"ui"}, args...)...)
	u.cmd.Env = append(os.Environ(), env...)
	pr, pw := io.Pipe()
	u.cmd.Stderr = io.MultiWriter(u.stderr, pw)
	if err := u.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		u.cmd.Wait()
		pw.Close()
		close(u.done)
	}()
	t.Cleanup(func() {
		u.cmd.Process.Signal(syscall.SIGINT)
		<-u.done
	})
	sc := bufio.NewScanner(pr)
	for u.URL == "" && sc.Scan() {
		if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
			u.URL = m[1]
		}
	}
	go io.Copy(io.Discard, pr)
	if u.URL == "" {
		<-u.done
		t.Fatalf("tenax ui printed no URL; stderr:\n%s", u.stderr)
	}
	return u
}

// newRetryJob runs web/testdata/retry.yaml to its end (5 "alpha" and 5
// "beta" failures among 20 items), then makes the alpha items succeed from
// now on, copies the job's home, and serves the job with tenax ui.
func newRetryJob(t *testing.T) *retryJob {
	t.Helper()
	words := []string{"a00", "ok00", "b00", "a01", "ok01", "b01", "a02", "ok02", "b02", "a03",
		"ok03", "b03", "a04", "ok04", "b04", "ok05", "ok06", "ok07", "ok08", "ok09"}
	r := &retryJob{state: t.TempDir()}
	env := []string{"STATE=" + r.state}
	r.job = startJobWords(t, "retry.yaml", words, env)
	if code := r.job.wait(t); code != 1 {
		t.Fatalf("the retry job exited %d, want 1 (finished with failures); stderr:\n%s", code, r.job.stderr)
	}
	if err := os.WriteFile(filepath.Join(r.state, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.copy = filepath.Join(t.TempDir(), "home")
	if err := os.CopyFS(r.copy, os.DirFS(r.job.Home)); err != nil {
		t.Fatal(err)
	}
	r.ui = startUI(t, env, r.job.ID, "--home", r.job.Home)
	return r
}

// check compares the job the page re-ran with its copy that tenax resume
// --fingerprint re-ran: the same items re-ran, to the same outcomes.
func (r *retryJob) check(t *testing.T) {
	t.Helper()
	// The alpha group's fingerprint, from the first run's records.
	fp := ""
	for _, rec := range records(t, r.copy, r.job.ID) {
		if strings.Contains(rec.Error, "alpha") {
			fp = rec.Fingerprint
		}
	}
	if fp == "" {
		t.Fatal("the retry job recorded no alpha failure")
	}
	cmd := exec.Command(tenax(t), "resume", r.job.ID, "--home", r.copy, "--fingerprint", fp, "-q")
	cmd.Env = append(os.Environ(), "STATE="+r.state)
	if out, err := cmd.CombinedOutput(); err != nil && cmd.ProcessState.ExitCode() != 1 {
		t.Fatalf("tenax resume --fingerprint %s: %v\n%s", fp, err, out)
	}
	page, cli := runsByIdx(records(t, r.job.Home, r.job.ID)), runsByIdx(records(t, r.copy, r.job.ID))
	for idx := range 20 {
		if page[idx] != cli[idx] {
			t.Errorf("item #%d: after the page's retry %s; after tenax resume --fingerprint %s", idx, page[idx], cli[idx])
		}
	}
	if s, f, p := countOutcomes(t, r.job.Home, r.job.ID); s != 15 || f != 5 || p != 0 {
		t.Errorf("after the page's retry: %d succeeded, %d failed, %d pending; want 15, 5 (the beta group), 0\nui's stderr:\n%s", s, f, p, r.ui.stderr)
	}
}

// runsByIdx says, for each idx, how many records it has and how the latest
// ended.
func runsByIdx(recs []store.Record) map[int]string {
	n, last := map[int]int{}, map[int]string{}
	for _, rec := range recs {
		n[rec.Idx]++
		last[rec.Idx] = "succeeded"
		if rec.Failed() {
			last[rec.Idx] = "failed: " + rec.Error
		}
	}
	out := map[int]string{}
	for idx := range n {
		out[idx] = strings.Repeat("run,", n[idx]) + " " + last[idx]
	}
	return out
}

// TestRetryFromTheUIPageIsResumeFingerprint re-runs one error group through
// tenax ui's confirmation page and form, as a browser would (without one:
// this runs where Chromium is absent), and checks the records against
// tenax resume --fingerprint's on a copy of the job.
func TestRetryFromTheUIPageIsResumeFingerprint(t *testing.T) {
	r := newRetryJob(t)
	fp := ""
	for _, rec := range records(t, r.job.Home, r.job.ID) {
		if strings.Contains(rec.Error, "alpha") {
			fp = rec.Fingerprint
		}
	}
	u, err := url.Parse(r.ui.URL)
	if err != nil {
		t.Fatal(err)
	}
	base := u.Scheme + "://" + u.Host
	confirm := base + "/jobs/" + r.job.ID + "/retry?fingerprint=" + fp[:8]
	resp, err := http.Get(confirm)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	m := csrfField.FindSubmatch(body)
	if m == nil || !strings.Contains(string(body), "Re-run 5 failed items?") {
		t.Fatalf("the confirmation page has no form for the 5 alpha items:\n%s", body)
	}
	form := url.Values{"csrf": {string(m[1])}, "fingerprint": {fp[:8]}, "confirm": {"yes"}}
	req, _ := http.NewRequest(http.MethodPost, base+"/jobs/"+r.job.ID+"/retry", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("the confirmed re-run: %s, want 303 back to the job", resp.Status)
	}
	for { // poll the job page until it says the re-run ended
		resp, err := http.Get(base + "/jobs/" + r.job.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(b), "The re-run <code>") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	r.check(t)
}
