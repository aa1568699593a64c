package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// copyImportFixtures copies spec/testdata/import into w.
func copyImportFixtures(t *testing.T, w *workdir) {
	t.Helper()
	dir := filepath.Join("..", "..", "spec", "testdata", "import")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w.write(e.Name(), string(b), 0o644)
	}
}

// onTheMock rewrites an imported spec's provider and model to the built-in
// mock's, the one change a user would make to rehearse it without a key.
func onTheMock(t *testing.T, w *workdir, name string) {
	t.Helper()
	p := filepath.Join(w.dir, name)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	s := regexp.MustCompile(`(?m)^  provider: \w+$`).ReplaceAllString(string(b), "  provider: mock")
	s = regexp.MustCompile(`(?m)^  model: .*$`).ReplaceAllString(s, "  model: mock-echo")
	if s == string(b) {
		t.Fatalf("%s names no provider or model to replace:\n%s", name, b)
	}
	w.write(name, s, 0o644)
}

// TestImportedConfigsValidateAndRun: the designs' own config files were
// refused outright (unknown key "llm", unknown key "agents"). tenax
// import turns each into a spec that `tenax validate` accepts as written
// and that runs every item to success on the built-in mock.
func TestImportedConfigsValidateAndRun(t *testing.T) {
	tests := []struct {
		config string
		args   []string // import's flags: -o, or none for stdout
		spec   string
		input  []string // run's --input, when the config names none
		items  string   // the run's summary
		says   string   // one line of the key-by-key report
	}{
		{"translator.yaml", []string{"-o", "translate.yaml"}, "translate.yaml", nil, "6 succeeded, 0 failed, 0 pending",
			"translator.yaml:15:3: processing.max_retries: 3 → retry.max_attempts: 4 (max_attempts counts the first attempt too"},
		{"reviewer.yaml", nil, "review.yaml", []string{"--input", "files.jsonl"}, "5 succeeded, 0 failed, 0 pending",
			"reviewer.yaml:14:7: agents.reviewer.batch_processing.file_delay: 0.2 → pacing.item_delay: 200ms"},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			w := newWorkdir(t)
			copyImportFixtures(t, w)
			r := w.tenax(append([]string{"import", tt.config}, tt.args...)...)
			if r.code != 0 {
				t.Fatalf("tenax import %s: exit %d\n%s", tt.config, r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, tt.says) {
				t.Errorf("the import's report lacks %q:\n%s", tt.says, r.stderr)
			}
			if tt.args == nil {
				w.write(tt.spec, r.stdout, 0o644)
			}
			keys := []string{"OPENAI_API_KEY=sk-placeholder", "ANTHROPIC_API_KEY=sk-ant-placeholder"}
			if r := w.tenaxEnv(keys, "validate", tt.spec); r.code != 0 {
				t.Fatalf("tenax validate %s: exit %d\n%s", tt.spec, r.code, r.stderr)
			}
			onTheMock(t, w, tt.spec)
			r = w.tenaxEnv(keys, append([]string{"run", "-q", tt.spec}, tt.input...)...)
			if r.code != 0 || !strings.Contains(r.stdout, tt.items) {
				t.Fatalf("tenax run %s on the mock: exit %d, want 0 and %q\n%s%s", tt.spec, r.code, tt.items, r.stdout, r.stderr)
			}
		})
	}
}

// TestImportRefusesToOverwriteWithoutForce: -o names a file that may be
// the user's own spec.
func TestImportRefusesToOverwriteWithoutForce(t *testing.T) {
	w := newWorkdir(t)
	copyImportFixtures(t, w)
	w.write("translate.yaml", "# mine\n", 0o644)
	r := w.tenax("import", "translator.yaml", "-o", "translate.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "translate.yaml exists: give --force to overwrite it") {
		t.Errorf("import over an existing file: exit %d, want 2 and a refusal\n%s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(w.dir, "translate.yaml")); string(b) != "# mine\n" {
		t.Errorf("the file was changed:\n%s", b)
	}
	if r := w.tenax("import", "translator.yaml", "-o", "translate.yaml", "--force"); r.code != 0 {
		t.Errorf("import --force: exit %d\n%s", r.code, r.stderr)
	}
}
