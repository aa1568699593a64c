package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestExamplesValidate checks that every spec in examples/ is one tenax
// accepts as shipped: a user's first contact with the tool is copying one.
// The provider examples read their keys from the environment, so the test
// gives them placeholders.
func TestExamplesValidate(t *testing.T) {
	specs, err := filepath.Glob(filepath.Join("..", "..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	fixSpecs, err := filepath.Glob(filepath.Join("..", "..", "examples", "fix", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	specs = append(specs, fixSpecs...)
	if len(specs) < 5 {
		t.Fatalf("found %d example specs (%v); is the test run from cmd/tenax?", len(specs), specs)
	}
	w := newWorkdir(t)
	keys := []string{"OPENAI_API_KEY=sk-placeholder", "ANTHROPIC_API_KEY=sk-ant-placeholder", "GEMINI_API_KEY=AIza-placeholder"}
	for _, spec := range specs {
		abs, err := filepath.Abs(spec)
		if err != nil {
			t.Fatal(err)
		}
		if r := w.tenaxEnv(keys, "validate", abs); r.code != 0 {
			t.Errorf("tenax validate %s: exit %d, want 0\n%s", spec, r.code, r.stderr)
		}
	}
}

// TestQuickstartBringsEveryItemToSuccess runs the README's first command,
// examples/quickstart.yaml with its faults on, and checks what the README
// promises of it: all 500 items succeed, and the faults really happened
// (retries and re-asks), so the example shows what it says it shows. Its
// 200 ms attempt timeout is raised to 2 s here: on a loaded machine a
// healthy mock answer can take longer than 200 ms, and the test is about
// outcomes, not speed (docs/benchmarks.md measures that).
func TestQuickstartBringsEveryItemToSuccess(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the 500-item quick start; without -short it does")
	}
	w := newWorkdir(t)
	for _, name := range []string{"quickstart.yaml", "quickstart.jsonl"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "quickstart.yaml" {
			spec := strings.Replace(string(b), "timeout: 200ms", "timeout: 2s", 1)
			if spec == string(b) {
				t.Fatal("examples/quickstart.yaml no longer says timeout: 200ms; update this test")
			}
			b = []byte(spec)
		}
		w.write(name, string(b), 0o644)
	}
	r := w.tenax("run", "quickstart.yaml", "--output", "out.jsonl")
	if r.code != 0 {
		t.Fatalf("tenax run quickstart.yaml: exit %d, want 0\n%s", r.code, r.stderr)
	}
	recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
	if len(recs) != 500 {
		t.Fatalf("--output holds %d records, want 500", len(recs))
	}
	var retried, healed int
	for _, rec := range recs {
		if rec.Error != "" || len(rec.Output) == 0 {
			t.Errorf("item %d ended without output: %+v", rec.Idx, rec)
		}
		if rec.Attempts > 1 {
			retried++
		}
		if rec.HealAttempts > 0 {
			healed++
		}
	}
	if retried == 0 || healed == 0 {
		t.Errorf("%d items retried and %d re-asked; the quick start's faults should cause both", retried, healed)
	}
	if !strings.Contains(r.stdout, "500 succeeded, 0 failed, 0 pending") {
		t.Errorf("the summary does not say all 500 succeeded:\n%s", r.stdout)
	}
}

// readmeRuns are the `tenax run examples/…` commands README.md shows, in
// its order.
func readmeRuns(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var specs []string
	for _, m := range regexp.MustCompile(`(?m)^tenax run (examples/\S+\.yaml)`).FindAllStringSubmatch(string(b), -1) {
		specs = append(specs, m[1])
	}
	return specs
}

// copyDir copies the directory tree from into to.
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(to, rel), 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(to, rel), b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReadmeRunExamplesSucceedFromACopy is the regression test of
// `tenax run examples/files.yaml`, which the README shows, failing on a
// source file that no longer existed: its input listed the repository's
// files. Every example the README runs must succeed from a copy of
// examples/ alone, as a newcomer's clone has it. The quick start is
// TestQuickstartBringsEveryItemToSuccess's (its 500 items and 200 ms
// timeouts want a loaded machine's allowance).
func TestReadmeRunExamplesSucceedFromACopy(t *testing.T) {
	specs := readmeRuns(t)
	if len(specs) < 2 {
		t.Fatalf("README.md shows %d `tenax run examples/…` commands (%v); want the quick start and files.yaml at least", len(specs), specs)
	}
	w := newWorkdir(t)
	copyDir(t, filepath.Join("..", "..", "examples"), filepath.Join(w.dir, "examples"))
	for _, spec := range specs {
		if spec == "examples/quickstart.yaml" {
			continue
		}
		t.Run(filepath.Base(spec), func(t *testing.T) {
			if r := w.tenax("run", "-q", spec); r.code != 0 {
				t.Errorf("tenax run %s: exit %d, want 0\n%s%s", spec, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// readmeFollowUps are the README's commands that act on the job a user
// just ran and need no file or server of theirs: `tenax status`, its
// --json, `tenax export latest`, `tenax resume latest --retry-failures`
// and `tenax --help`, each as its argv (the comment and a `| jq` pipe
// cut off).
func readmeFollowUps(t *testing.T) [][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cmds [][]string
	seen := map[string]bool{}
	re := regexp.MustCompile(`(?m)^tenax (status|export latest|resume latest --retry-failures|--help)[^\n#|]*`)
	for _, line := range re.FindAllString(string(b), -1) {
		line = strings.TrimSpace(line)
		if !seen[line] {
			seen[line] = true
			cmds = append(cmds, strings.Fields(line)[1:])
		}
	}
	return cmds
}

// TestReadmeFollowUpCommandsExitZero runs, after an example job from a
// copy of examples/, every README command that acts on the job just run
// and needs nothing of the user's: each must exit 0, and `status --json`
// must be the JSON the README pipes to jq, with .outcomes.succeeded.
func TestReadmeFollowUpCommandsExitZero(t *testing.T) {
	cmds := readmeFollowUps(t)
	if len(cmds) < 4 {
		t.Fatalf("README.md shows %d follow-up commands (%v); want status, status --json, export and resume at least", len(cmds), cmds)
	}
	w := newWorkdir(t)
	copyDir(t, filepath.Join("..", "..", "examples"), filepath.Join(w.dir, "examples"))
	if r := w.tenax("run", "-q", "examples/files.yaml"); r.code != 0 {
		t.Fatalf("tenax run examples/files.yaml: exit %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range cmds {
		t.Logf("tenax %s", strings.Join(args, " "))
		r := w.tenax(args...)
		if r.code != 0 {
			t.Errorf("tenax %s: exit %d, want 0\n%s%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
			continue
		}
		if slices.Equal(args, []string{"status", "--json"}) {
			var s struct {
				Outcomes struct {
					Succeeded *int `json:"succeeded"`
				} `json:"outcomes"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &s); err != nil || s.Outcomes.Succeeded == nil {
				t.Errorf("tenax status --json: no .outcomes.succeeded for jq (%v):\n%s", err, r.stdout)
			}
		}
	}
}
