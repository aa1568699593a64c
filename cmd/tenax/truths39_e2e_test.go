package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAResumedRunKilledIsStaleNotInterrupted is the regression test of a
// status that, for a resumed run killed with -9, showed the previous
// run's "Stopped: interrupted by SIGINT" (also in --json): the stop reason
// belonged to the run before, and the run that was killed had none.
func TestAResumedRunKilledIsStaleNotInterrupted(t *testing.T) {
	w := newWorkdir(t)
	cmd, out, _, id := startSlowJob(t, w, "0.3")
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	lines := func() int { b, _ := os.ReadFile(results); return bytes.Count(b, []byte("\n")) }
	waitFor(t, "a record", func() bool { return lines() >= 1 })
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 2*time.Minute); code != 130 {
		t.Fatalf("exit %d, want 130\n%s", code, out)
	}
	if r := w.tenax("status", id); !strings.Contains(r.stdout, "Stopped:   interrupted by SIGINT") {
		t.Fatalf("status of the interrupted job does not say so:\n%s", r.stdout)
	}

	before := lines()
	resume := exec.Command(tenaxBin, "--home", w.home, "resume", id)
	resume.Dir, resume.Env = w.dir, childEnv()
	if err := resume.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a record of the resumed run", func() bool { return lines() > before })
	if err := resume.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = resume.Wait()

	r := w.tenax("status", id)
	if !strings.Contains(r.stdout, id+" (job): stale") || strings.Contains(r.stdout, "SIGINT") {
		t.Errorf("status of the killed resume: want stale, without the previous run's SIGINT\n%s", r.stdout)
	}
	r = w.tenax("status", "--json", id)
	var s struct {
		Job struct {
			State      string
			StopReason string `json:"stop_reason"`
		}
		Note string
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("status --json: %v\n%s", err, r.stdout)
	}
	if s.Job.State != "stale" || s.Job.StopReason != "" || !strings.Contains(s.Note, "killed") {
		t.Errorf("status --json of the killed resume: state %q, stop_reason %q, note %q; want stale, none, a note that says killed", s.Job.State, s.Job.StopReason, s.Note)
	}
}
