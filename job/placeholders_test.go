package job_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/job"
)

// TestDryRunPassedABraceTemplateThatWentOutLiterally is the regression test
// of the translator's `Translate '{text}' to Spanish.`: validate and the
// dry run said OK and every item was sent the same literal text. A {name}
// that names an item's field is now an error at its file:line:col with the
// {{.name}} meant; one that names none is a warning that does not fail the
// check, and JSON braces are neither. The dry run shows the first call.
func TestDryRunPassedABraceTemplateThatWentOutLiterally(t *testing.T) {
	tests := []struct {
		name    string
		prompt  string
		wantErr bool
		want    []string
		notWant []string
	}{
		{"a field in single braces is an error", "    Translate '{text}' to Spanish.\n", true,
			[]string{
				"first call (item #0, first attempt):\n  prompt:\n    Translate '{text}' to Spanish.\n",
				"templates: 1 template rendered for the first 2 items of items.jsonl: FAILED (a {name} in single braces names a field of the items, and goes out as written)\n",
				`  job.yaml:8:16: task.prompt: {text} is sent as written, braces and all, though the items have a field "text" (did you mean "{{.text}}"?)`,
			}, nil},
		{"another name is a warning", "    Translate {{.text}} for {audience}.\n", false,
			[]string{
				"first call (item #0, first attempt):\n  prompt:\n    Translate hello for {audience}.\n",
				"templates: 1 template rendered for the first 2 items of items.jsonl: OK\n",
				`  job.yaml:8:29: warning: task.prompt: {audience} is sent as written, braces and all; ignore this if the braces are meant (did you mean "{{.audience}}"?)`,
			}, nil},
		{"JSON braces are no placeholder", "    Translate {{.text}}; reply as {\"es\": \"...\"}\n", false,
			[]string{"templates: 1 template rendered for the first 2 items of items.jsonl: OK\n"},
			[]string{"warning", "sent as written"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("{\"text\": \"hello\"}\n{\"text\": \"bye\"}\n"), 0o644)
			spec := "input: items.jsonl\ntask:\n  type: llm\n  provider: mock\n  model: m\n  max_tokens: 10\n  prompt: |\n" + tt.prompt
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte(spec), 0o644)
			var out strings.Builder
			err := job.DryRun(context.Background(), filepath.Join(dir, "job.yaml"), job.Options{Home: filepath.Join(dir, "home")}, &out)
			if tt.wantErr {
				var ue *job.UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), "job.yaml:8:16): write {{.text}}") {
					t.Errorf("DryRun: %v, want a usage error that says to write {{.text}}", err)
				}
			} else if err != nil {
				t.Errorf("DryRun: %v, want no error", err)
			}
			got := strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "")
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the dry run shows no\n%s\nin:\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(got, w) {
					t.Errorf("the dry run shows %q:\n%s", w, got)
				}
			}
		})
	}
}

// TestDryRunShowsTheFirstCallOfEachTaskType: an exec task's argv, stdin
// and env, and an http task's request, rendered for the first item.
func TestDryRunShowsTheFirstCallOfEachTaskType(t *testing.T) {
	tests := []struct {
		name, task, want string
	}{
		{"exec", "  type: exec\n  argv: [python3, t.py, \"{{.text}}\"]\n  stdin: \"{{.id}}\"\n  env: {TO: es}\n",
			"first call (item #0, first attempt):\n  argv: [\"python3\" \"t.py\" \"hello\"]\n  stdin: a1\n  env TO: es\n"},
		{"http", "  type: http\n  url: \"http://127.0.0.1:9/t/{{.id}}\"\n  headers: {X-Text: \"{{.text}}\"}\n  body: '{\"q\": \"{{.text}}\"}'\n",
			"first call (item #0, first attempt):\n  request: POST http://127.0.0.1:9/t/a1\n  header X-Text: hello\n  body: {\"q\": \"hello\"}\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.WriteFile(filepath.Join(dir, "items.jsonl"), []byte("{\"id\": \"a1\", \"text\": \"hello\"}\n"), 0o644)
			os.WriteFile(filepath.Join(dir, "job.yaml"), []byte("input: items.jsonl\ntask:\n"+tt.task), 0o644)
			var out strings.Builder
			if err := job.DryRun(context.Background(), filepath.Join(dir, "job.yaml"), job.Options{Home: filepath.Join(dir, "home")}, &out); err != nil {
				t.Fatalf("DryRun: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("the dry run shows no\n%s\nin:\n%s", tt.want, out.String())
			}
		})
	}
}
