package job_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
)

// TestDryRunShowsNoSecret: the dry run prints the task's URL and argv,
// where a spec may have expanded a token.
func TestDryRunShowsNoSecret(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("{\"id\": 1}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`
input: items.jsonl
task:
  type: http
  url: "https://api.example.com/v1/items/{{.id}}?api_key=${MY_API_KEY}"
`), 0o644)
	env := func(k string) (string, bool) {
		if k == "MY_API_KEY" {
			return "sekrit-123456", true
		}
		return "", false
	}
	var out strings.Builder
	if err := job.DryRun(context.Background(), filepath.Join(dir, "job.yaml"), job.Options{Home: t.TempDir(), Env: env}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "sekrit-123456") || !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("dry run output shows the key or no redaction:\n%s", out.String())
	}
}

// TestDryRunNamesAMissingTemplateField is the regression test of a dry run
// that passed {{.wrd}}, after which the real run failed every item with
// `map has no entry for key "wrd"`: the dry run renders the templates
// against the first items, names the missing field with the item's line,
// suggests the near miss, and fails as a usage error.
func TestDryRunNamesAMissingTemplateField(t *testing.T) {
	dir := t.TempDir()
	// Item #1 is on line 3 (a blank line before it) and is the only one
	// that lacks "word".
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("{\"id\": \"a\", \"word\": \"x\"}\n\n{\"id\": \"b\", \"wrd\": \"y\"}\n{\"id\": \"c\", \"word\": \"z\"}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(`
input: items.jsonl
task:
  type: llm
  provider: mock
  model: m
  prompt: "Translate {{.word}}"
`), 0o644)
	var out strings.Builder
	err := job.DryRun(context.Background(), filepath.Join(dir, "job.yaml"), job.Options{Home: filepath.Join(dir, "home")}, &out)
	var ue *job.UsageError
	if !errors.As(err, &ue) {
		t.Fatalf("dry run: %v; want a usage error (exit 2)\n%s", err, out.String())
	}
	for _, want := range []string{
		"templates: FAILED for the first 3 items of items.jsonl (1 problem)",
		`items.jsonl:3 (item #1): prompt uses {{.word}}, but the item has no field "word"; did you mean {{.wrd}}?`,
		"its fields: id, wrd",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dry run lacks %q:\n%s", want, out.String())
		}
	}
	if !strings.Contains(err.Error(), "items.jsonl:3") {
		t.Errorf("the error does not point at the line: %v", err)
	}
}

// TestEmptyInputIsRefusedUnlessAllowed is the regression test of an empty
// input that made a "completed" 0-item job and exited 0.
func TestEmptyInputIsRefusedUnlessAllowed(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("\n\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"), 0o644)
	opts := job.Options{Home: filepath.Join(dir, "home")}
	_, err := job.Run(context.Background(), filepath.Join(dir, "job.yaml"), opts)
	var ue *job.UsageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "has no items") || !strings.Contains(err.Error(), "--allow-empty") {
		t.Fatalf("empty input: %v; want a usage error that names --allow-empty", err)
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "home", "jobs")); len(entries) != 0 {
		t.Errorf("a refused empty input created %d job(s)", len(entries))
	}
	opts.AllowEmpty = true
	res, err := job.Run(context.Background(), filepath.Join(dir, "job.yaml"), opts)
	if err != nil || res.ExitCode != exitcode.OK {
		t.Fatalf("--allow-empty: %v, %+v", err, res)
	}
}
