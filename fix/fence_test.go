package fix_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
)

// recordingModel answers every call with answer and keeps the prompts.
type recordingModel struct {
	answer  string
	mu      sync.Mutex
	prompts []string
}

func (m *recordingModel) Run(_ context.Context, item task.Item) (task.Result, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, _ := item.Fields["prompt"].(string)
	m.prompts = append(m.prompts, p)
	out, _ := json.Marshal(m.answer)
	return task.Result{Output: out}, nil
}

// llmRun is a one-attempt fix run on r whose check prints line and fails,
// read by the generic parser, and whose fixer is m.
func llmRun(r *repo, line string, m fix.Model) fix.Config {
	return fix.Config{
		Name: "fence", Workdir: r.dir, Home: r.home,
		Check: fix.Check{Argv: []string{"sh", "-c", `echo "$LINE"; exit 1`}, Dir: r.dir, Env: map[string]string{"LINE": line},
			Parser: fix.ParserGeneric, Timeout: time.Minute},
		Fixer:  fix.LLMFixer{Model: m},
		Budget: heal.Budget{MaxAttempts: 1},
	}
}

// A check output line `filelink.txt:1:1: error: x`, where filelink.txt (or
// a directory on the path) links outside the repository, put the outside
// file's contents into the model's prompt: the write side followed links,
// the read side did not. tenax's own state and git-ignored files (.env)
// were quoted the same way.
func TestAFileOutsideTheTreeIsNeverQuotedToTheModel(t *testing.T) {
	t.Parallel()
	const secret = "SECRET-KEY-7f3a"
	tests := []struct {
		name, line string
		quoted     bool
	}{
		{"a file link outside", "filelink.txt:1:1: error: x", false},
		{"a directory link outside", "linkdir/secret.txt:1:1: error: x", false},
		{"tenax's own state", ".tenax/jobs/x/results.jsonl:1:1: error: x", false},
		{"a git-ignored file", ".env:1:1: error: x", false},
		{"a tracked file (the test's control)", "plain.txt:1:1: error: x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, nil)
			outside := t.TempDir()
			if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte(secret+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			for link, target := range map[string]string{"filelink.txt": filepath.Join(outside, "secret.txt"), "linkdir": outside} {
				if err := os.Symlink(target, filepath.Join(r.dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			r.write(".gitignore", ".tenax/\n.env\n", 0o644)
			r.write(".env", secret+"\n", 0o600)
			r.write("plain.txt", secret+"\n", 0o644)
			if err := os.MkdirAll(filepath.Join(r.home, "jobs", "x"), 0o755); err != nil {
				t.Fatal(err)
			}
			r.write(".tenax/jobs/x/results.jsonl", secret+"\n", 0o644)
			r.git("add", "-A")
			r.git("commit", "-qm", "links")

			m := &recordingModel{answer: "no edit"}
			if _, err := fix.Start(context.Background(), llmRun(r, tc.line, m)); err != nil {
				t.Fatal(err)
			}
			if len(m.prompts) == 0 {
				t.Fatal("the model was never asked")
			}
			for _, p := range m.prompts {
				if got := strings.Contains(p, secret); got != tc.quoted {
					t.Errorf("%s: the file's contents quoted: %v, want %v; prompt:\n%s", tc.line, got, tc.quoted, p)
				}
			}
		})
	}
}

// An LLM fixer's answer `FILE .tenax/jobs/x/results.jsonl` created the
// file: the audit said "the attempt changed no file" (tenax's home is left
// out of the snapshots), it was in no patch and never reverted. So was an
// edit of any file git ignores. Such an edit is now refused as an answer
// that does not apply, and nothing is written.
func TestAnLLMEditOfTenaxStateOrAnIgnoredFileIsRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, path, problem string
	}{
		{"tenax's home", ".tenax/jobs/x/results.jsonl", "tenax's own state"},
		{"another tenax home", "sub/.tenax/jobs/y/results.jsonl", "tenax's own state"},
		{"a link into tenax's home", "state/jobs/x/results.jsonl", "tenax's own state"},
		{"a git-ignored file", "build/out.txt", "git ignores the path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, nil)
			r.write(".gitignore", ".tenax/\nbuild/\n", 0o644)
			if err := os.MkdirAll(r.home, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(".tenax", filepath.Join(r.dir, "state")); err != nil {
				t.Fatal(err)
			}
			r.write("A.txt", "1\n", 0o644)
			r.git("add", "-A")
			r.git("commit", "-qm", "setup")

			m := &recordingModel{answer: "<<<<<<< FILE " + tc.path + "\n{\"_idx\": 0}\n>>>>>>> END\n"}
			res, err := fix.Start(context.Background(), llmRun(r, "A.txt:1:1: error: x", m))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(r.dir, tc.path)); !os.IsNotExist(err) {
				t.Errorf("%s was written (stat: %v)", tc.path, err)
			}
			atts := attemptsOf(audit(t, res))
			if len(atts) != 1 || !strings.Contains(atts[0].FixerError, tc.problem) {
				t.Fatalf("attempts %+v; want one whose fixer error says %q", atts, tc.problem)
			}
		})
	}
}

// tenax fix gave the error of a fenced file (.env) the location of another
// error's file, the first in the check's output: a fenced error has none.
func TestAFencedErrorGetsNoOtherErrorsLocation(t *testing.T) {
	t.Parallel()
	r := newRepo(t, nil)
	r.write(".gitignore", ".tenax/\n.env\n", 0o644)
	r.write(".env", "DB_PASSWORD=x\n", 0o600)
	r.write("plain.txt", "a\nb\nc\n", 0o644)
	r.write("check.sh", "#!/bin/sh\necho 'plain.txt:3:1: error: bad line'\necho '.env:1:1: error: bad variable'\nexit 1\n", 0o755)
	r.git("add", "-A")
	r.git("commit", "-qm", "two errors")
	cfg := r.config(heal.Budget{MaxAttempts: 2}, nil)
	cfg.Check.Parser = fix.ParserGeneric
	if _, err := fix.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	locations := map[string]string{}
	for _, q := range r.requests() {
		where := "none"
		if l := q.Error.Location; l != nil {
			where = fmt.Sprintf("%s:%d", l.File, l.Line)
		}
		locations[q.Error.Name] = where
	}
	if want := map[string]string{"plain.txt": "plain.txt:3", ".env": "none"}; !maps.Equal(locations, want) {
		t.Errorf("locations by error %v; want %v: the .env error's own file is fenced, and plain.txt is another error's", locations, want)
	}
}
