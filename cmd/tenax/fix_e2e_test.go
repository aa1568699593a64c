package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/heal"
)

// fixCheck fails Test<X> for every <X>.txt that does not hold "ok".
const fixCheck = `#!/bin/sh
fail=0
for f in *.txt; do
  t=${f%.txt}
  v=$(cat "$f")
  if [ "$v" != ok ]; then
    printf -- '--- FAIL: Test%s (0.00s)\n    calc_test.go:7: %s() = %s, want ok\n' "$t" "$t" "$v"
    fail=1
  fi
done
exit $fail
`

// fixFixer writes "ok" into the error's file, except for A, which it
// cannot fix (it writes the attempt number). On attempt 2 it hangs until
// killed, unless $LOG/no-hang exists. Every call is logged.
const fixFixer = `#!/bin/sh
n=${TENAX_ERROR_NAME#Test}
echo "$TENAX_FIX_ATTEMPT $n $TENAX_FIX_CONTEXT" >> "$LOG/calls"
if [ "$TENAX_FIX_ATTEMPT" = 2 ] && [ ! -e "$LOG/no-hang" ]; then
  touch "$LOG/hanging"
  sleep 300
fi
if [ "$n" = A ]; then echo "$TENAX_FIX_ATTEMPT" > A.txt; else echo ok > "$n.txt"; fi
`

// newFixRepo makes w.dir a committed git repository with a fix spec.
func newFixRepo(t *testing.T, spec string) (*workdir, string) {
	t.Helper()
	w := newWorkdir(t)
	log := t.TempDir()
	w.write("check.sh", fixCheck, 0o755)
	w.write("fixer.sh", fixFixer, 0o755)
	w.write("A.txt", "10\n", 0o644)
	w.write("B.txt", "20\n", 0o644)
	w.write(".gitignore", "home/\n", 0o644)
	w.write("fix.yaml", strings.ReplaceAll(spec, "$LOGDIR", log), 0o644)
	for _, args := range [][]string{
		{"init", "-q"}, {"config", "user.name", "tenax test"}, {"config", "user.email", "test@tenax.invalid"},
		{"add", "-A"}, {"commit", "-qm", "broken"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return w, log
}

const fixSpec = `name: cli-test
check:
  argv: [./check.sh]
  parser: gotest
fixer:
  type: exec
  argv: [./fixer.sh]
  env: {LOG: "$LOGDIR"}
budget: {max_error_attempts: 3, max_attempts: 5}
`

func fixRunID(t *testing.T, w *workdir) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(w.home, "fixes"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "fix_") {
			return e.Name()
		}
	}
	t.Fatal("no fix run directory")
	return ""
}

// TestFixKill9ThenResumeKeepsBudgets: tenax fix is killed with SIGKILL
// while the fixer works on its second attempt; --resume records that
// attempt as spent, so error A gets only the one attempt left of its 3.
func TestFixKill9ThenResumeKeepsBudgets(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	// The strict order keeps the fixer on A, the error it cannot fix.
	w, log := newFixRepo(t, fixSpec+"order: strict\n")
	cmd := exec.Command(tenaxBin, "--home", w.home, "fix", "fix.yaml")
	cmd.Dir = w.dir
	cmd.Env = childEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if _, err := os.Stat(filepath.Join(log, "hanging")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			t.Fatal("the fixer never reached its second attempt")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	id := fixRunID(t, w)

	var st struct {
		Pending *struct {
			Attempt int `json:"attempt"`
		} `json:"pending"`
		Tracker struct {
			Attempts int `json:"attempts"`
		} `json:"tracker"`
	}
	b, err := os.ReadFile(filepath.Join(w.home, "fixes", id, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatalf("state.json after kill -9 does not decode: %v\n%s", err, b)
	}
	if st.Pending == nil || st.Pending.Attempt != 2 || st.Tracker.Attempts != 2 {
		t.Fatalf("state after kill -9: pending %+v, %d attempts spent; want attempt 2 pending and spent", st.Pending, st.Tracker.Attempts)
	}

	if err := os.WriteFile(filepath.Join(log, "no-hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r := w.tenax("fix", "--resume", id)
	if r.code != 1 {
		t.Fatalf("resume exit %d; want 1 (A is over its budget)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	calls, err := os.ReadFile(filepath.Join(log, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		f := strings.Fields(line)
		got = append(got, f[0]+f[1])
	}
	if want := "1A 2A 3A 4B"; strings.Join(got, " ") != want {
		t.Errorf("fixer calls %v; want %s: the killed attempt 2 counts, so A gets one more (3 in all) and then B", got, want)
	}
	if !strings.Contains(r.stdout, "Remaining errors (1)") || !strings.Contains(r.stdout, "TestA (3 attempts)") {
		t.Errorf("resume's summary does not list TestA with its 3 attempts:\n%s", r.stdout)
	}
	s := w.tenax("status", id)
	if s.code != 0 || !strings.Contains(s.stdout, "Attempts: 4 of 5") || !strings.Contains(s.stdout, "TestA (3/3 attempts)") || !strings.Contains(s.stdout, "1 fixed") {
		t.Errorf("tenax status %s (exit %d):\n%s%s\nwant 4 of 5 attempts, TestA at 3/3, B fixed", id, s.code, s.stdout, s.stderr)
	}
}

func TestFixBadSpecExitsTwoWithPosition(t *testing.T) {
	w := newWorkdir(t)
	w.write("fix.yaml", "check:\n  argv: [./check.sh]\n  parsr: gotest\nfixer:\n  type: exec\n  argv: [true]\n", 0o644)
	r := w.tenax("fix", "fix.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, `fix.yaml:3:3: unknown key "parsr" in check (did you mean "parser"?)`) {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 with the key's position and a suggestion", r.code, r.stderr)
	}
}

func TestFixDryRunChangesNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, log := newFixRepo(t, fixSpec)
	w.write("ctx.md", "Use the v2 API.\n", 0o644)
	r := w.tenax("fix", "fix.yaml", "--dry-run", "--context", "@ctx.md")
	if r.code != 0 {
		t.Fatalf("dry run exit %d:\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"2 errors", "First error for the fixer: TestA", `"context": "Use the v2 API."`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, r.stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(log, "calls")); err == nil {
		t.Error("the dry run called the fixer")
	}
	if _, err := os.Stat(filepath.Join(w.home, "fixes")); err == nil {
		if entries, _ := os.ReadDir(filepath.Join(w.home, "fixes")); len(entries) > 0 {
			t.Errorf("the dry run wrote a fix run: %v", entries)
		}
	}
}

// TestFixPerItemRunsOneLoopPerItemThroughTheEngine: a fix spec with input
// runs as a job, one loop per item, two at a time; each loop sees and
// reverts only its own file (paths), so the loops never undo each
// other's fixes; the item that cannot be fixed fails, the job exits 1.
func TestFixPerItemRunsOneLoopPerItemThroughTheEngine(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, log := newFixRepo(t, `name: per-item
input: items.jsonl
concurrency: 2
paths: ["{{.path}}"]
check:
  argv: [./check1.sh, "{{.path}}"]
  parser: gotest
fixer:
  type: exec
  argv: [./fixer.sh]
  env: {LOG: "$LOGDIR"}
budget: {max_error_attempts: 2}
`)
	if err := os.WriteFile(filepath.Join(log, "no-hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.write("check1.sh", "#!/bin/sh\nv=$(cat \"$1\")\n[ \"$v\" = ok ] && exit 0\nprintf -- '--- FAIL: Test%s (0.00s)\\n    calc_test.go:7: %s() = %s, want ok\\n' \"${1%.txt}\" \"${1%.txt}\" \"$v\"\nexit 1\n", 0o755)
	w.write("C.txt", "30\n", 0o644)
	w.write("items.jsonl", `{"path": "A.txt"}`+"\n"+`{"path": "B.txt"}`+"\n"+`{"path": "C.txt"}`+"\n", 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-qm", "items"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = w.dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	// fixer.sh cannot fix A; B and C it can.
	r := w.tenax("fix", "fix.yaml")
	if r.code != 1 || !strings.Contains(r.stdout, "2 succeeded, 1 failed") {
		t.Fatalf("exit %d; want 1 with 2 items fixed and 1 failed\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	for name, want := range map[string]string{"B.txt": "ok", "C.txt": "ok"} {
		if b, _ := os.ReadFile(filepath.Join(w.dir, name)); strings.TrimSpace(string(b)) != want {
			t.Errorf("%s = %q; want %q (a concurrent loop must not revert another's fix)", name, b, want)
		}
	}
	id := jobID(t, r)
	recs := readRecords(t, filepath.Join(w.home, "jobs", id, "results.jsonl"))
	if len(recs) != 3 {
		t.Fatalf("%d records; want one per item", len(recs))
	}
	for _, rec := range recs {
		if rec.Idx == 0 {
			if rec.Class != "item" || !strings.Contains(rec.Error, "max_error_attempts") {
				t.Errorf("item 0: class %q, error %q; want failed (item), saying its budget is spent", rec.Class, rec.Error)
			}
			continue
		}
		var out struct {
			FixRun  string `json:"fix_run"`
			Outcome string `json:"outcome"`
		}
		if err := json.Unmarshal(rec.Output, &out); err != nil || out.Outcome != "passed" || !strings.HasPrefix(out.FixRun, "fix_") {
			t.Errorf("item %d's output %s (%v); want its fix run's id and outcome passed", rec.Idx, rec.Output, err)
			continue
		}
		if s := w.tenax("status", out.FixRun); s.code != 0 || !strings.Contains(s.stdout, "passed") {
			t.Errorf("tenax status %s: exit %d\n%s", out.FixRun, s.code, s.stdout)
		}
	}
}

// tenax's home is ./.tenax of the current directory, and the run's private
// index under it was handed to git, which runs in the tree's root, as a
// relative path: a fix spec in a subdirectory of the repository (its
// workdir), run from there or from the root, failed before its first
// attempt ("Unable to create '…/.tenax/fixes/…/index.lock'") and left the
// run "running".
func TestFixWithTheDefaultHomeInASubdirectoryOfTheRepository(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, _ := newFixRepo(t, "")
	proj := filepath.Join(w.dir, "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"check.sh", "A.txt", "B.txt"} {
		if err := os.Rename(filepath.Join(w.dir, name), filepath.Join(proj, name)); err != nil {
			t.Fatal(err)
		}
	}
	w.write("proj/fixer.sh", "#!/bin/sh\necho ok > \"${TENAX_ERROR_NAME#Test}.txt\"\n", 0o755)
	w.write("proj/fix.yaml", "check: {argv: [./check.sh], parser: gotest}\nfixer: {type: exec, argv: [./fixer.sh]}\n", 0o644)
	w.write(".gitignore", ".tenax/\n", 0o644)
	git := exec.Command("sh", "-c", "git add -A && git commit -qm 'a project in a subdirectory'")
	git.Dir = w.dir
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, tc := range []struct{ cwd, spec string }{
		{proj, "fix.yaml"},
		{w.dir, "proj/fix.yaml"},
	} {
		cmd := exec.Command(tenaxBin, "fix", tc.spec, "--allow-dirty")
		cmd.Dir = tc.cwd
		cmd.Env = childEnv()
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "passed after 2 attempts") {
			t.Errorf("tenax fix %s in %s: %v\n%s\nwant both errors fixed", tc.spec, tc.cwd, err, out)
		}
		// The second run starts from a broken tree again.
		for _, name := range []string{"A.txt", "B.txt"} {
			w.write(filepath.Join("proj", name), "broken\n", 0o644)
		}
	}
}

func TestFixPrioritizePutsAnErrorFirst(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, log := newFixRepo(t, fixSpec)
	if err := os.WriteFile(filepath.Join(log, "no-hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.tenax("fix", "fix.yaml", "--prioritize", "TestB"); r.code != 2 || !strings.Contains(r.stderr, `--prioritize "TestB"`) {
		t.Errorf("--prioritize TestB: exit %d, stderr:\n%s\nwant 2: a fingerprint is needed", r.code, r.stderr)
	}
	fpB := heal.Fingerprint("TestB", "calc_test.go:7: B() = 20, want ok")
	r := w.tenax("fix", "fix.yaml", "--prioritize", fpB[:8])
	if r.code != 1 {
		t.Fatalf("exit %d; want 1 (A cannot be fixed):\n%s%s", r.code, r.stdout, r.stderr)
	}
	calls, err := os.ReadFile(filepath.Join(log, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(calls), "\n"); strings.TrimSpace(first) != "1 B" {
		t.Errorf("the first call was %q; want B's (1 B), put first over A, seen first:\n%s", first, calls)
	}
}

func TestFixUIWithASpaceSaysToWriteAnEqualsSign(t *testing.T) {
	w := newWorkdir(t)
	r := w.tenax("fix", "fix.yaml", "--ui", "127.0.0.1:8080")
	if r.code != 2 || !strings.Contains(r.stderr, "write --ui=127.0.0.1:8080 (with =)") {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 saying to write --ui=ADDR", r.code, r.stderr)
	}
}

// TestUIListsFixRunsAndOpensOne: tenax ui lists the home's fix runs beside
// its jobs, and tenax ui FIX_RUN serves that run's page at "/".
func TestUIListsFixRunsAndOpensOne(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, log := newFixRepo(t, fixSpec)
	if err := os.WriteFile(filepath.Join(log, "no-hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.tenax("fix", "fix.yaml"); r.code != 1 {
		t.Fatalf("tenax fix: exit %d; want 1 (A cannot be fixed):\n%s", r.code, r.stderr)
	}
	id := fixRunID(t, w)
	if page := get(t, serveUI(t, w)); !strings.Contains(page, `<a href="/fixes/`+id+`">`) {
		t.Errorf("tenax ui does not list the fix run %s:\n%s", id, page)
	}
	page := get(t, serveUI(t, w, id))
	for _, want := range []string{"Fix run " + id, `data-status="abandoned"`, `data-status="fixed"`} {
		if !strings.Contains(page, want) {
			t.Errorf("tenax ui %s: the page lacks %q:\n%s", id, want, page)
		}
	}
}

// tenax status --json refused a fix run, so scripts read state.json, which
// has no versioned schema.
func TestFixStatusJSONHasAVersionedSchema(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	w, log := newFixRepo(t, fixSpec)
	if err := os.WriteFile(filepath.Join(log, "no-hang"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if r := w.tenax("fix", "fix.yaml"); r.code != 1 {
		t.Fatalf("tenax fix: exit %d; want 1 (A cannot be fixed)\n%s%s", r.code, r.stdout, r.stderr)
	}
	id := fixRunID(t, w)
	r := w.tenax("status", "--json", id)
	var s struct {
		Schema  string         `json:"schema"`
		ID      string         `json:"id"`
		Outcome string         `json:"outcome"`
		Counts  map[string]int `json:"counts"`
		Resume  string         `json:"resume"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &s) != nil {
		t.Fatalf("tenax status --json %s: exit %d\n%s%s", id, r.code, r.stdout, r.stderr)
	}
	if s.Schema != "tenax.fix.status/v1" || s.ID != id || s.Outcome != "failed" || s.Counts["abandoned"] != 1 || s.Counts["fixed"] != 1 {
		t.Errorf("status %+v; want schema tenax.fix.status/v1, run %s failed with A abandoned and B fixed", s, id)
	}
	if !strings.Contains(s.Resume, "budget.max_error_attempts (now 3)") {
		t.Errorf("resume %q; want the budget to raise", s.Resume)
	}
}
