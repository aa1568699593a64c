package fix_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/spec"
)

// The end-to-end tests run the loop on a temporary git repository whose
// "tests" are files: check.sh fails Test<X> for every <X>.txt that does
// not hold "ok", printing go test's format with the file's value in the
// message (so a value that changes tests the fingerprints). fixer.sh fixes
// the one error it is given by writing "ok", except:
//
//   - STUBBORN lists names it cannot fix: it writes the attempt number
//     instead, a new value of the same error;
//   - BREAK lists X:Y,Z pairs: fixing X also writes a bad value into Y
//     and Z (a regression, or new errors).
//
// Every request it gets is kept in $LOG/<attempt>.json, with its
// TENAX_FIX_CONTEXT in $LOG/<attempt>.context.

const checkScript = `#!/bin/sh
fail=0
for f in *.txt; do
  [ -f "$f" ] || continue
  t=${f%.txt}
  v=$(cat "$f")
  if [ "$v" != ok ]; then
    printf -- '--- FAIL: Test%s (0.00s)\n    calc_test.go:7: %s() = %s, want ok\n' "$t" "$t" "$v"
    fail=1
  fi
done
if [ $fail = 0 ]; then echo ok; else echo FAIL; fi
exit $fail
`

const fixerScript = `#!/bin/sh
set -e
cat > "$LOG/$TENAX_FIX_ATTEMPT.json"
printf '%s' "$TENAX_FIX_CONTEXT" > "$LOG/$TENAX_FIX_ATTEMPT.context"
n=${TENAX_ERROR_NAME#Test}
case " $STUBBORN " in
  *" $n "*) echo "$TENAX_FIX_ATTEMPT" > "$n.txt" ;;
  *) echo ok > "$n.txt" ;;
esac
for pair in $BREAK; do
  if [ "${pair%%:*}" = "$n" ]; then
    for y in $(echo "${pair#*:}" | tr , ' '); do echo -1 > "$y.txt"; done
  fi
done
echo "wrote $n.txt"
`

type repo struct {
	t    *testing.T
	dir  string
	home string
	log  string
}

// newRepo makes a committed git repository with one <name>.txt per value.
func newRepo(t *testing.T, values map[string]string) *repo {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	r := &repo{t: t, dir: t.TempDir(), log: t.TempDir()}
	r.home = filepath.Join(r.dir, ".tenax")
	r.write("check.sh", checkScript, 0o755)
	r.write("fixer.sh", fixerScript, 0o755)
	r.write(".gitignore", ".tenax/\n", 0o644)
	for name, v := range values {
		r.write(name+".txt", v+"\n", 0o644)
	}
	r.git("init", "-q")
	r.git("config", "user.name", "tenax test")
	r.git("config", "user.email", "test@tenax.invalid")
	r.git("add", "-A")
	r.git("commit", "-qm", "broken")
	return r
}

func (r *repo) write(name, content string, mode os.FileMode) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), []byte(content), mode); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) read(name string) string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, name))
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = r.dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// config is a run of check.sh and fixer.sh with env for the fixer.
func (r *repo) config(budget heal.Budget, env map[string]string) fix.Config {
	fenv := map[string]string{"LOG": r.log, "STUBBORN": "", "BREAK": ""}
	for k, v := range env {
		fenv[k] = v
	}
	return fix.Config{
		Name: "test", Workdir: r.dir, Home: r.home,
		Check:  fix.Check{Argv: []string{"./check.sh"}, Dir: r.dir, Parser: fix.ParserGoTest, Timeout: time.Minute},
		Fixer:  fix.ExecFixer{Argv: []string{"./fixer.sh"}, Env: fenv, Timeout: time.Minute},
		Budget: budget,
	}
}

// requests returns the requests the fixer got, by attempt.
func (r *repo) requests() []fix.Request {
	r.t.Helper()
	var out []fix.Request
	for n := 1; ; n++ {
		b, err := os.ReadFile(filepath.Join(r.log, strconv.Itoa(n)+".json"))
		if errors.Is(err, os.ErrNotExist) {
			return out
		}
		if err != nil {
			r.t.Fatal(err)
		}
		var req fix.Request
		if err := json.Unmarshal(b, &req); err != nil {
			r.t.Fatalf("request %d: %v\n%s", n, err, b)
		}
		out = append(out, req)
	}
}

func names(reqs []fix.Request) []string {
	out := make([]string, len(reqs))
	for i, q := range reqs {
		out[i] = q.Error.Name
	}
	return out
}

func audit(t *testing.T, res *fix.Result) []fix.AuditRecord {
	t.Helper()
	recs, err := (&fix.Store{Dir: res.Dir}).ReadAudit()
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

func attemptsOf(recs []fix.AuditRecord) []fix.AuditRecord {
	var out []fix.AuditRecord
	for _, r := range recs {
		if r.Kind == "attempt" {
			out = append(out, r)
		}
	}
	return out
}

func remainingNames(res *fix.Result) []string {
	var out []string
	for _, e := range res.Remaining {
		out = append(out, e.Name)
	}
	return out
}

func TestFixerFixesEveryErrorAndTheCheckPasses(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != fix.OutcomePassed || res.ExitCode() != 0 {
		t.Fatalf("outcome %s (%s), exit %d; want passed, 0", res.Outcome, res.Reason, res.ExitCode())
	}
	if got := names(r.requests()); !slices.Equal(got, []string{"TestA", "TestB", "TestC"}) {
		t.Errorf("the fixer was asked about %v; want each error once, in first-seen order", got)
	}
	if res.Attempts != 3 || res.Checks != 4 {
		t.Errorf("%d attempts and %d checks; want 3 and 4 (one check after each attempt)", res.Attempts, res.Checks)
	}
}

func TestPerErrorBudgetHonoured(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxErrorAttempts: 2, MaxAttempts: 8}, map[string]string{"STUBBORN": "B"}))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(r.requests()), []string{"TestA", "TestB", "TestC", "TestB"}; !slices.Equal(got, want) {
		t.Fatalf("the fixer was asked about %v; want %v: B gets its 2 attempts (its value changes, its fingerprint must not), C its turn between them", got, want)
	}
	if res.Outcome != fix.OutcomeFailed || res.ExitCode() != 1 || !strings.Contains(res.Reason, "max_error_attempts") {
		t.Errorf("outcome %s (%s), exit %d; want failed because every remaining error spent budget.max_error_attempts, exit 1", res.Outcome, res.Reason, res.ExitCode())
	}
	if got := remainingNames(res); !slices.Equal(got, []string{"TestB"}) {
		t.Errorf("remaining %v; want [TestB]", got)
	}
	if res.Remaining[0].Attempts != 2 {
		t.Errorf("TestB spent %d attempts; want 2", res.Remaining[0].Attempts)
	}
}

func TestGlobalBudgetHonoured(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "10", "B": "20", "C": "30"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxErrorAttempts: 5, MaxAttempts: 4}, map[string]string{"STUBBORN": "A B C"}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.requests()); n != 4 || res.Attempts != 4 {
		t.Fatalf("the fixer was called %d times, %d attempts recorded; want 4 (budget.max_attempts)", n, res.Attempts)
	}
	if res.Outcome != fix.OutcomeFailed || !strings.Contains(res.Reason, "max_attempts") {
		t.Errorf("outcome %s (%s); want failed: the run's budget is spent", res.Outcome, res.Reason)
	}
	if res.Checks != 5 {
		t.Errorf("%d checks; want 5: the last attempt is checked too", res.Checks)
	}
	if len(res.Remaining) != 3 {
		t.Errorf("remaining %v; want all three errors listed", remainingNames(res))
	}
}

func TestRegressionDetectedAndPrioritised(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	cfg := r.config(heal.Budget{}, map[string]string{"BREAK": "B:A"})
	cfg.KeepWorse = true
	cfg.Order = fix.OrderStrict // regressed first, whatever it spent
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	if got, want := names(reqs), []string{"TestA", "TestB", "TestA", "TestC"}; !slices.Equal(got, want) {
		t.Fatalf("the fixer was asked about %v; want %v: A, broken again by B's fix, comes back before C", got, want)
	}
	if reqs[2].Error.Status != heal.StatusRegressed || reqs[2].Error.Fingerprint != reqs[0].Error.Fingerprint {
		t.Errorf("the third request is about %s (%s); want TestA as regressed with its first fingerprint %s (its value went from 1 to -1)",
			reqs[2].Error.Fingerprint, reqs[2].Error.Status, reqs[0].Error.Fingerprint)
	}
	if len(reqs[2].Previous) != 1 || reqs[2].Previous[0].Result != heal.ResultFixed {
		t.Errorf("the regressed error's request lists earlier attempts %+v; want its first, fixed, attempt", reqs[2].Previous)
	}
	atts := attemptsOf(audit(t, res))
	if atts[1].Result != heal.ResultRegressed || atts[1].Reverted {
		t.Errorf("attempt 2's audit result %q (reverted %v); want regressed and kept (on_worse: keep)", atts[1].Result, atts[1].Reverted)
	}
	if res.Outcome != fix.OutcomePassed {
		t.Errorf("outcome %s (%s); want passed", res.Outcome, res.Reason)
	}
}

func TestWorseningEditReverted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		breaks string
		why    string
	}{
		{"a regression", "B:A", "regressed"},
		{"more errors", "B:D,E", "errors → 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
			cfg := r.config(heal.Budget{MaxErrorAttempts: 2}, map[string]string{"BREAK": tc.breaks})
			cfg.Order = fix.OrderStrict // B's two attempts in a row
			res, err := fix.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := names(r.requests()), []string{"TestA", "TestB", "TestB", "TestC"}; !slices.Equal(got, want) {
				t.Fatalf("the fixer was asked about %v; want %v: each worsening attempt on B is reverted and counted", got, want)
			}
			if got := r.read("B.txt"); got != "2" {
				t.Errorf("B.txt holds %q after the reverted attempts; want its original 2", got)
			}
			if got := r.read("A.txt"); got != "ok" {
				t.Errorf("A.txt holds %q; want ok: reverting B's attempt must not undo A's fix", got)
			}
			for _, f := range []string{"D.txt", "E.txt"} {
				if _, err := os.Stat(filepath.Join(r.dir, f)); err == nil {
					t.Errorf("%s exists; the reverted attempt created it, so the revert must remove it", f)
				}
			}
			atts := attemptsOf(audit(t, res))
			for _, a := range atts[1:3] {
				if !a.Reverted || a.Result != "reverted" || !strings.Contains(a.Reason, tc.why) {
					t.Errorf("attempt %d: reverted %v, result %q, reason %q; want reverted, saying %q", a.Attempt, a.Reverted, a.Result, a.Reason, tc.why)
				}
				if a.Edit == nil || a.Edit.Patch == "" {
					t.Errorf("attempt %d records no patch; a reverted edit is still recorded", a.Attempt)
				}
			}
			if got := remainingNames(res); !slices.Equal(got, []string{"TestB"}) {
				t.Errorf("remaining %v; want [TestB], its budget spent on reverted attempts", got)
			}
		})
	}
}

func TestSkipAndContextReachTheFixer(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	fpA := heal.Fingerprint("TestA", "calc_test.go:7: A() = 1, want ok")
	cfg := r.config(heal.Budget{}, nil)
	cfg.Skip = []string{fpA[:8]}
	cfg.Context = "We are migrating from v1 to v2."
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	reqs := r.requests()
	if got := names(reqs); !slices.Equal(got, []string{"TestB"}) {
		t.Fatalf("the fixer was asked about %v; want only TestB (TestA is skipped by --skip %s)", got, fpA[:8])
	}
	if reqs[0].Context != cfg.Context {
		t.Errorf("the request's context is %q; want %q", reqs[0].Context, cfg.Context)
	}
	b, err := os.ReadFile(filepath.Join(r.log, "1.context"))
	if err != nil || string(b) != cfg.Context {
		t.Errorf("TENAX_FIX_CONTEXT was %q (%v); want %q", b, err, cfg.Context)
	}
	if res.Outcome != fix.OutcomeFailed || !strings.Contains(res.Reason, "skipped") {
		t.Errorf("outcome %s (%s); want failed, saying the remaining error is skipped", res.Outcome, res.Reason)
	}
	if r.read("A.txt") != "1" {
		t.Errorf("A.txt was changed; a skipped error is never given to the fixer")
	}
}

func TestOnlyLimitsTheFixer(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	cfg := r.config(heal.Budget{}, nil)
	cfg.Only = []string{heal.Fingerprint("TestC", "calc_test.go:7: C() = 3, want ok")}
	if _, err := fix.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if got := names(r.requests()); !slices.Equal(got, []string{"TestC"}) {
		t.Errorf("the fixer was asked about %v; want only TestC (--only)", got)
	}
}

func TestDirtyTreeRefusedUnlessAllowed(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	r.write("A.txt", "my own edit\n", 0o644)
	_, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	var se *fix.SetupError
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "A.txt") || !strings.Contains(err.Error(), "--allow-dirty") {
		t.Fatalf("Start on a dirty tree: %v; want a SetupError naming A.txt and --allow-dirty", err)
	}
	if len(r.requests()) != 0 {
		t.Fatal("the fixer ran on a dirty tree")
	}
	cfg := r.config(heal.Budget{}, nil)
	cfg.AllowDirty = true
	res, err := fix.Start(context.Background(), cfg)
	if err != nil || res.Outcome != fix.OutcomePassed {
		t.Fatalf("with AllowDirty: %v, %+v; want a passing run", err, res)
	}
}

// A fix spec written a minute ago and not yet committed made the tree
// dirty, though tenax only reads it; files a fixer may edit still must be
// clean.
func TestAnUntrackedFileTenaxOnlyReadsIsNoUncommittedChange(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(r *repo)
		dirty string // the file named in the refusal, "" for none
	}{
		{"an untracked fix spec", func(r *repo) { r.write("fixes/fix.yaml", "check: {argv: [x]}\n", 0o644) }, ""},
		{"an untracked context file", func(r *repo) { r.write("NOTES.md", "notes\n", 0o644) }, ""},
		{"another untracked file", func(r *repo) { r.write("new.txt", "x\n", 0o644) }, "new.txt"},
		{"the spec tracked and changed", func(r *repo) {
			r.write("fixes/fix.yaml", "check: {argv: [x]}\n", 0o644)
			r.git("add", "fixes/fix.yaml")
			r.git("commit", "-qm", "spec")
			r.write("fixes/fix.yaml", "check: {argv: [y]}\n", 0o644)
		}, "fixes/fix.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, map[string]string{"A": "1"})
			if err := os.Mkdir(filepath.Join(r.dir, "fixes"), 0o755); err != nil {
				t.Fatal(err)
			}
			tc.setup(r)
			cfg := r.config(heal.Budget{}, nil)
			cfg.ReadOnly = []string{filepath.Join(r.dir, "fixes", "fix.yaml"), filepath.Join(r.dir, "NOTES.md")}
			_, err := fix.Start(context.Background(), cfg)
			switch {
			case tc.dirty == "" && err != nil:
				t.Errorf("Start: %v; want a run: tenax only reads the file", err)
			case tc.dirty != "" && (err == nil || !strings.Contains(err.Error(), tc.dirty)):
				t.Errorf("Start: %v; want a refusal naming %s", err, tc.dirty)
			}
		})
	}
}

func TestNotAGitTreeRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := fix.Config{Workdir: dir, Home: filepath.Join(dir, ".tenax"), Check: fix.Check{Argv: []string{"true"}, Dir: dir}, Fixer: fix.ExecFixer{Argv: []string{"true"}}}
	_, err := fix.Start(context.Background(), cfg)
	if !errors.Is(err, fix.ErrNotGit) {
		t.Fatalf("Start outside git: %v; want ErrNotGit", err)
	}
}

func TestEveryEditRecordedAndUndoable(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	atts := attemptsOf(audit(t, res))
	if len(atts) != 3 {
		t.Fatalf("%d attempt records; want 3", len(atts))
	}
	for i := len(atts) - 1; i >= 0; i-- {
		a := atts[i]
		if a.Edit == nil || len(a.Edit.Files) != 1 || a.Check == nil || a.Fingerprint == "" {
			t.Fatalf("attempt %d's record %+v lacks its edit, check or fingerprint", a.Attempt, a)
		}
		r.git("apply", "-R", filepath.Join(res.Dir, a.Edit.Patch))
	}
	for name, want := range map[string]string{"A": "1", "B": "2", "C": "3"} {
		if got := r.read(name + ".txt"); got != want {
			t.Errorf("%s.txt is %q after undoing every patch; want %q", name, got, want)
		}
	}
}

func TestCommitCommitsEachFix(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	cfg := r.config(heal.Budget{}, nil)
	cfg.Commit = true
	if _, err := fix.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	log := r.git("log", "--format=%s", "--name-only")
	if !strings.Contains(log, "tenax fix: TestA\n\nA.txt") || !strings.Contains(log, "tenax fix: TestB\n\nB.txt") {
		t.Errorf("git log:\n%s\nwant one commit per fix, each with its file only", log)
	}
	if st := r.git("status", "--porcelain"); st != "" {
		t.Errorf("uncommitted after --commit: %q", st)
	}
}

func TestStuckStops(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxErrorAttempts: 5, StuckAfter: 2}, map[string]string{"STUBBORN": "A B"}))
	if err != nil {
		t.Fatal(err)
	}
	if res.Outcome != fix.OutcomeStuck || res.Attempts != 2 || res.ExitCode() != 1 {
		t.Errorf("outcome %s after %d attempts, exit %d; want stuck after 2 (stuck_after), exit 1", res.Outcome, res.Attempts, res.ExitCode())
	}
}

func TestResumeContinuesWithTheBudgetSpent(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	cfg := r.config(heal.Budget{MaxAttempts: 2, MaxErrorAttempts: 5}, map[string]string{"STUBBORN": "A"})
	cfg.Order = fix.OrderStrict
	first, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if first.Attempts != 2 || first.Outcome != fix.OutcomeFailed {
		t.Fatalf("first run: %s after %d attempts; want failed after 2", first.Outcome, first.Attempts)
	}
	// A raised budget lets the resumed run go on from what was spent.
	cfg = r.config(heal.Budget{MaxAttempts: 4, MaxErrorAttempts: 3}, nil)
	cfg.Order = fix.OrderStrict
	res, err := fix.Resume(context.Background(), cfg, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(r.requests()), []string{"TestA", "TestA", "TestA", "TestB"}; !slices.Equal(got, want) {
		t.Errorf("the fixer was asked about %v; want %v: A had spent 2 of its 3 attempts", got, want)
	}
	if res.Attempts != 4 || res.Outcome != fix.OutcomePassed {
		t.Errorf("resumed run: %s after %d attempts in all; want passed after 4", res.Outcome, res.Attempts)
	}
}

func TestStatusShowsErrorsByStatusAndGroups(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "1", "C": "2"})
	// The same message in three tests: one group.
	r.write("check.sh", "#!/bin/sh\nfor t in A B C; do [ \"$(cat $t.txt)\" = ok ] || printf -- '--- FAIL: Test%s (0.00s)\\n    shared_test.go:3: config missing key \"x\"\\n' $t; done\ngrep -qv ok *.txt && exit 1; exit 0\n", 0o755)
	r.git("commit", "-qam", "shared check")
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxAttempts: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := fix.WriteStatus(&b, res.Dir, res.State); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1 fixed", "2 active", "TestA", "fixed ", "2× ", "in TestB, TestC", "Resume: raise budget.max_attempts (now 1) in SPEC, then tenax fix --resume " + res.ID} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
}

// tenax's home inside the tree broke the snapshots twice: ignored by
// .gitignore, git add refused the pathspec that excluded it; not ignored,
// git rm --cached refused to take its freshly staged files out of the
// private index. The home is never part of an edit.
func TestHomeInsideTheTreeIsNeverPartOfAnEdit(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range attemptsOf(audit(t, res)) {
		if slices.ContainsFunc(a.Edit.Files, func(f string) bool { return strings.HasPrefix(f, ".tenax") }) {
			t.Errorf("attempt %d's edit includes tenax's own files: %v", a.Attempt, a.Edit.Files)
		}
	}
	// The same with the home not ignored: still left out.
	r2 := newRepo(t, map[string]string{"A": "1"})
	r2.write(".gitignore", "", 0o644)
	r2.git("commit", "-qam", "no ignore")
	res2, err := fix.Start(context.Background(), r2.config(heal.Budget{}, nil))
	if err != nil {
		t.Fatalf("home inside the tree, not ignored: %v", err)
	}
	if res2.Outcome != fix.OutcomePassed {
		t.Errorf("outcome %s (%s); want passed", res2.Outcome, res2.Reason)
	}
	for _, a := range attemptsOf(audit(t, res2)) {
		if !slices.Equal(a.Edit.Files, []string{"A.txt"}) {
			t.Errorf("attempt %d's edit: %v; want only A.txt", a.Attempt, a.Edit.Files)
		}
	}
}

// TestFatalFixerErrorEndsTheRun is the regression test of a fixer that
// cannot work at all (here a program that is not there, as a rejected API
// key would be): every attempt of the budget met the same error.
func TestFatalFixerErrorEndsTheRun(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	r.write("fixer.sh", "#!/bin/sh\necho 'fixer.sh: line 1: llm-cli: command not found' >&2\nexit 127\n", 0o755)
	r.git("commit", "-qam", "a fixer that cannot run")
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxErrorAttempts: 3, MaxAttempts: 6}, nil))
	if err != nil {
		t.Fatal(err)
	}
	if res.Attempts != 1 {
		t.Errorf("%d attempts; want 1: a fatal fixer error ends the run", res.Attempts)
	}
	if res.Outcome != fix.OutcomeFailed || res.ExitCode() != 1 || !strings.Contains(res.Reason, "command not found") || !strings.Contains(res.Reason, "--resume") {
		t.Errorf("outcome %s (%s), exit %d; want failed, exit 1, naming the fixer's error and how to continue", res.Outcome, res.Reason, res.ExitCode())
	}
}

// A fixer that failed (a script with a typo, a timeout, answers that never
// apply) was shown as "still failing" and nothing more: why was only in
// audit.jsonl, so a run could spend its whole budget on a broken fixer
// with no word of it on the terminal.
func TestAFailedFixerSaysWhyInTheAttemptsResult(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
	cfg.Fixer = fix.ExecFixer{Argv: []string{"sh", "-c", "echo 'sed: cannot read calc.go' >&2; exit 1"}}
	var results []fix.Event
	cfg.OnEvent = func(e fix.Event) {
		if e.Kind == fix.EventResult {
			results = append(results, e)
		}
	}
	if _, err := fix.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 {
		t.Fatalf("%d attempt results; want 1", len(results))
	}
	if e := results[0]; e.Result != heal.ResultStillFailing || !strings.Contains(e.Message, "the fixer failed: sh: exit 1: sed: cannot read calc.go") {
		t.Errorf("the attempt's result is %q (%q); want still failing, with the fixer's exit status and stderr", e.Result, e.Message)
	}
}

// --skip and --only with fewer than 4 characters of a fingerprint (or a
// typo) matched nothing, silently: the "skipped" error went to the fixer
// after all. They are refused before the run starts.
func TestSkipOrOnlyThatCanNameNoErrorIsRefused(t *testing.T) {
	t.Parallel()
	s, err := spec.ParseFix("fix.yaml", []byte("check: {argv: [sh, -c, exit 1]}\nfixer: {type: exec, argv: ['true']}\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		skip, only []string
		want       string
	}{
		{skip: []string{"10c"}, want: `--skip "10c": give an error's fingerprint or its first 4 or more characters`},
		{only: []string{"TestAdd"}, want: `--only "TestAdd"`},
		{skip: []string{"10cad807", "e823 "}, want: `--skip "e823 "`},
		{skip: []string{"10cad807"}, only: []string{"e823ae0975a7c682"}},
	} {
		_, err := fix.FromSpec(s, fix.Options{Skip: tc.skip, Only: tc.only})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("--skip %q --only %q: %v; want them taken", tc.skip, tc.only, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("--skip %q --only %q: error %v; want one containing %q", tc.skip, tc.only, err, tc.want)
		}
	}
	// A per-item run passes them to every item's loop: refused once, before the job.
	items, err := spec.ParseFix("fix.yaml", []byte("input: files.jsonl\ncheck: {argv: [sh, -c, exit 1]}\nfixer: {type: exec, argv: ['true']}\n"), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fix.ItemsJobSpec(items, fix.ItemsJob{Exe: "tenax", Skip: []string{"10c"}}); err == nil || !strings.Contains(err.Error(), `--skip "10c"`) {
		t.Errorf("a per-item run with --skip 10c: error %v; want it refused", err)
	}
}

// TestOneErrorOrAttemptIsSingular: tenax fix said "exit 1, 1 errors" and
// "passed after 1 attempts" in its progress and summary lines.
func TestOneErrorOrAttemptIsSingular(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	cfg := r.config(heal.Budget{MaxErrorAttempts: 1, MaxAttempts: 1}, map[string]string{"STUBBORN": "A"})
	var lines []string
	cfg.OnEvent = func(e fix.Event) { lines = append(lines, e.Message) }
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var summary strings.Builder
	if err := fix.WriteResult(&summary, res); err != nil {
		t.Fatal(err)
	}
	lines = append(lines, strings.Split(summary.String(), "\n")...)
	text := strings.Join(lines, "\n")
	for _, want := range []string{"exit 1, 1 error", "after 1 attempt and 1 check", "TestA (1 attempt)", "spent: 1 attempt in all"} {
		if !strings.Contains(text, want) {
			t.Errorf("the run's lines do not say %q:\n%s", want, text)
		}
	}
	for _, plural := range []string{"1 errors", "1 attempts", "1 checks"} {
		if strings.Contains(text, plural) {
			t.Errorf("the run's lines say %q:\n%s", plural, text)
		}
	}
}

// With the global budget of 8, the strict order gave the first hopeless
// error all 5 of its attempts while another ended with none; round robin
// (the default) gives every error a turn before any gets another.
func TestEveryErrorGetsATurnBeforeTheGlobalBudgetRunsOut(t *testing.T) {
	t.Parallel()
	tests := []struct {
		order string
		want  []string
	}{
		{"", []string{"TestA", "TestB", "TestC", "TestA", "TestB", "TestC", "TestA", "TestB"}},
		{fix.OrderRoundRobin, []string{"TestA", "TestB", "TestC", "TestA", "TestB", "TestC", "TestA", "TestB"}},
		{fix.OrderStrict, []string{"TestA", "TestA", "TestA", "TestA", "TestA", "TestB", "TestB", "TestB"}},
	}
	for _, tc := range tests {
		t.Run("order "+cmp.Or(tc.order, "unset"), func(t *testing.T) {
			r := newRepo(t, map[string]string{"A": "10", "B": "20", "C": "30"})
			cfg := r.config(heal.Budget{MaxErrorAttempts: 5, MaxAttempts: 8}, map[string]string{"STUBBORN": "A B C"})
			cfg.Order = tc.order
			res, err := fix.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(r.requests()); !slices.Equal(got, tc.want) {
				t.Errorf("the fixer was asked about %v; want %v", got, tc.want)
			}
			if res.State.Budget.Order != cmp.Or(tc.order, fix.OrderRoundRobin) {
				t.Errorf("state.json's budget says order %q; want %q", res.State.Budget.Order, cmp.Or(tc.order, fix.OrderRoundRobin))
			}
		})
	}
}

// An error that spent its budget was listed as active at the end (the
// page says abandoned), a skipped one without [skipped], and the Resume
// line after a spent budget could only stop again.
func TestFinalStatusesAreHonestAndResumeSaysWhichBudgetToRaise(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	fpB := heal.Fingerprint("TestB", "calc_test.go:7: B() = 2, want ok")
	cfg := r.config(heal.Budget{MaxErrorAttempts: 2, MaxAttempts: 8}, map[string]string{"STUBBORN": "A"})
	cfg.Skip = []string{fpB[:8]}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := fix.WriteResult(&out, res); err != nil {
		t.Fatal(err)
	}
	var status strings.Builder
	if err := fix.WriteStatus(&status, res.Dir, res.State); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, text, want string }{
		{"result", out.String(), "abandoned TestA (2 attempts):"},
		{"result", out.String(), "active    TestB (0 attempts) [skipped]:"},
		{"result", out.String(), "Resume: raise budget.max_error_attempts (now 2) for the errors not skipped in SPEC, then tenax fix --resume " + res.ID},
		{"status", status.String(), "abandoned  "},
		{"status", status.String(), "1 abandoned, 1 fixed"},
		{"status", status.String(), "Resume: raise budget.max_error_attempts (now 2)"},
	} {
		if !strings.Contains(tc.text, tc.want) {
			t.Errorf("the %s lacks %q:\n%s", tc.what, tc.want, tc.text)
		}
	}
	if strings.Contains(out.String(), " active    TestA") {
		t.Errorf("the result lists TestA, its budget spent, as active:\n%s", out.String())
	}
}

func TestResumeHintSaysWhichBudgetToRaise(t *testing.T) {
	budget := fix.Budget{MaxAttempts: 8, MaxErrorAttempts: 5, StuckAfter: 6}
	under := []heal.TrackedError{{Fingerprint: "aaaa", Status: heal.StatusActive, Attempts: 2}}
	spent := []heal.TrackedError{{Fingerprint: "aaaa", Status: heal.StatusActive, Attempts: 5}}
	tests := []struct {
		stop string
		errs []heal.TrackedError
		want string
	}{
		{fix.StopMaxAttempts, under, "raise budget.max_attempts (now 8) in fix.yaml, then tenax fix --resume fix_1"},
		{fix.StopMaxAttempts, spent, "raise budget.max_attempts (now 8) and budget.max_error_attempts (now 5) in fix.yaml, then tenax fix --resume fix_1"},
		{fix.StopMaxErrorAttempts, spent, "raise budget.max_error_attempts (now 5) in fix.yaml, then tenax fix --resume fix_1"},
		{fix.StopStuck, under, "raise budget.stuck_after (now 6; 0 turns the rule off) in fix.yaml, then tenax fix --resume fix_1"},
		{fix.StopSkipped, under, "nothing to resume: every error left under budget is skipped"},
		{fix.StopSkipped, spent, "raise budget.max_error_attempts (now 5) for the errors not skipped in fix.yaml"},
		{"", under, "tenax fix --resume fix_1"},
	}
	for _, tc := range tests {
		st := &fix.State{ID: "fix_1", Spec: "fix.yaml", Budget: budget, Stop: tc.stop}
		if got := fix.ResumeHint(st, tc.errs); !strings.HasPrefix(got, tc.want) {
			t.Errorf("stop %q: hint %q; want %q", tc.stop, got, tc.want)
		}
	}
}

// Scripts had to read state.json, whose shape is tenax's own, for a fix
// run's status; Status is versioned (tenax.fix.status/v1).
func TestStatusJSONIsVersionedAndSaysWhatTheTextSays(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxErrorAttempts: 1}, map[string]string{"STUBBORN": "A"}))
	if err != nil {
		t.Fatal(err)
	}
	s, err := fix.Status(res.Dir, res.State)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Schema   string         `json:"schema"`
		ID       string         `json:"id"`
		Outcome  string         `json:"outcome"`
		Stop     string         `json:"stop"`
		Attempts int            `json:"attempts"`
		Counts   map[string]int `json:"counts"`
		Errors   []struct {
			Name     string `json:"name"`
			Status   string `json:"status"`
			Attempts int    `json:"attempts"`
		} `json:"errors"`
		Resume string `json:"resume"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Schema != "tenax.fix.status/v1" || got.ID != res.ID || got.Outcome != fix.OutcomeFailed || got.Stop != fix.StopMaxErrorAttempts || got.Attempts != 2 {
		t.Errorf("status %s; want schema tenax.fix.status/v1, id %s, failed by max_error_attempts after 2 attempts", b, res.ID)
	}
	want := map[string]int{"regressed": 0, "new": 0, "active": 0, "abandoned": 1, "fixed": 1}
	if !maps.Equal(got.Counts, want) {
		t.Errorf("counts %v; want %v", got.Counts, want)
	}
	if len(got.Errors) != 2 || got.Errors[0].Name != "TestA" || got.Errors[0].Status != "abandoned" || got.Errors[0].Attempts != 1 {
		t.Errorf("errors %+v; want TestA abandoned after 1 attempt, then TestB", got.Errors)
	}
	if !strings.Contains(got.Resume, "budget.max_error_attempts (now 1)") {
		t.Errorf("resume %q; want the budget to raise", got.Resume)
	}
}
