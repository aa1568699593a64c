package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// statusJSON runs `tenax status --json` with args and decodes what a
// script reads from it.
func statusJSON(t *testing.T, w *workdir, args ...string) (s struct {
	Schema string
	Job    struct{ ID, State string }
	Note   string
	// Outcomes is what `jq .outcomes.succeeded` reads.
	Outcomes    struct{ Succeeded, Failed, Pending int }
	ErrorGroups []struct {
		Fingerprint string
		Count       int
	} `json:"error_groups"`
}) {
	t.Helper()
	r := w.tenax(append([]string{"status", "--json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("tenax status --json %v: exit %d\n%s", args, r.code, r.stderr)
	}
	if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
		t.Fatalf("tenax status --json %v is not JSON: %v\n%s", args, err, r.stdout)
	}
	if s.Schema != "tenax.status/v1" {
		t.Errorf("schema %q, want tenax.status/v1", s.Schema)
	}
	return s
}

// TestStatusJSONForARunningStaleAndFinishedJob: `tenax status --json | jq
// .outcomes.succeeded` works whatever state the job is in.
func TestStatusJSONForARunningStaleAndFinishedJob(t *testing.T) {
	w := newWorkdir(t)
	cmd, _, _, id := startSlowJob(t, w, "0.3")
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	waitFor(t, "a record", func() bool {
		b, _ := os.ReadFile(results)
		return bytes.Count(b, []byte("\n")) >= 1
	})
	running := statusJSON(t, w)
	if running.Job.ID != id || running.Job.State != "running" || running.Outcomes.Succeeded < 1 ||
		running.Outcomes.Succeeded+running.Outcomes.Pending != 40 {
		t.Errorf("status --json of the running job: %+v", running)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	stale := statusJSON(t, w, id)
	if stale.Job.State != "stale" || !strings.Contains(stale.Note, "tenax resume "+id) || stale.Outcomes.Succeeded < running.Outcomes.Succeeded {
		t.Errorf("status --json of the killed job: %+v", stale)
	}
	if r := w.tenax("resume", id); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
	}
	finished := statusJSON(t, w, "latest")
	if finished.Job.State != "completed" || finished.Outcomes.Succeeded != 40 || finished.Outcomes.Pending != 0 || finished.ErrorGroups == nil {
		t.Errorf("status --json of the finished job: %+v", finished)
	}
	if _, err := exec.LookPath("jq"); err == nil {
		c := exec.Command("sh", "-c", `"$0" --home "$1" status --json | jq .outcomes.succeeded`, tenaxBin, w.home)
		c.Dir, c.Env = w.dir, childEnv()
		out, err := c.Output()
		if err != nil || strings.TrimSpace(string(out)) != "40" {
			t.Errorf("tenax status --json | jq .outcomes.succeeded = %q, %v; want 40", out, err)
		}
	}
}

// TestStatusJSONListsEveryJob: status --all --json is the job list.
func TestStatusJSONListsEveryJob(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 3)
	w.write("job.yaml", "name: echoes\ninput: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n", 0o644)
	r := w.tenax("status", "--all", "--json")
	var list struct {
		Schema string
		Jobs   []struct{ ID, Name, State string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Schema != "tenax.jobs/v1" || list.Jobs == nil || len(list.Jobs) != 0 {
		t.Errorf("status --all --json without jobs: %v\n%s", err, r.stdout)
	}
	for range 2 {
		if r := w.tenax("run", "job.yaml"); r.code != 0 {
			t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
		}
	}
	r = w.tenax("status", "--all", "--json")
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("status --all --json: %v\n%s", err, r.stdout)
	}
	if len(list.Jobs) != 2 || list.Jobs[0].Name != "echoes" || list.Jobs[1].State != "completed" {
		t.Errorf("status --all --json = %+v", list)
	}
}
