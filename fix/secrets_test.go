package fix_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/spec"
)

// A check.env ${DB_PASSWORD} that the check printed went to the LLM fixer
// verbatim and landed in audit.jsonl and state.json (issue 41 item 5).
func TestACheckEnvSecretNeverLeavesTheCheck(t *testing.T) {
	t.Parallel()
	const password = "pg-hunter2-9c1e"
	r := newRepo(t, nil)
	r.write("check.sh", "#!/bin/sh\necho \"db.py:1:1: error: cannot connect as app:$DB_PASSWORD@db\"\nexit 1\n", 0o755)
	r.write("db.py", "x = 1\n", 0o644)
	r.git("add", "-A")
	r.git("commit", "-qm", "db")
	src := "check:\n  argv: [./check.sh]\n  parser: generic\n  env: {DB_PASSWORD: \"${DB_PASSWORD}\"}\n" +
		"fixer: {type: llm, provider: mock}\nbudget: {max_attempts: 1}\n"
	s, err := spec.ParseFix(filepath.Join(r.dir, "fix.yaml"), []byte(src), r.dir, func(k string) (string, bool) { return password, k == "DB_PASSWORD" })
	if err != nil {
		t.Fatal(err)
	}
	m := &recordingModel{answer: "I cannot fix this: " + password}
	cfg, err := fix.FromSpec(s, fix.Options{Home: r.home, NewModel: func(spec.Fixer) (fix.Model, error) { return m, nil }})
	if err != nil {
		t.Fatal(err)
	}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.prompts) == 0 || !strings.Contains(m.prompts[0], "app:[redacted]@db") {
		t.Fatalf("the fixer was asked %q; want the check's error with the password redacted", m.prompts)
	}
	for _, p := range m.prompts {
		if strings.Contains(p, password) {
			t.Errorf("the fixer's prompt holds the password:\n%s", p)
		}
	}
	_ = filepath.WalkDir(res.Dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), password) {
			t.Errorf("%s holds the password:\n%s", path, b)
		}
		return nil
	})
}
