package fix

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestApplyEdits(t *testing.T) {
	const calc = "package calc\n\nfunc Add(a, b int) int {\n\treturn a - b\n}\n"
	tests := []struct {
		name    string
		answer  string
		want    map[string]string // file → content after
		problem string            // part of the error, "" for success
	}{
		{"search and replace", "<<<<<<< SEARCH calc.go\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n",
			map[string]string{"calc.go": strings.Replace(calc, "a - b", "a + b", 1)}, ""},
		{"text around blocks and fences is ignored", "Sure.\n```\n<<<<<<< SEARCH calc.go\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n```\nDone.",
			map[string]string{"calc.go": strings.Replace(calc, "a - b", "a + b", 1)}, ""},
		{"trailing spaces in the search are forgiven", "<<<<<<< SEARCH calc.go\n\treturn a - b   \n=======\n\treturn a + b\n>>>>>>> REPLACE\n",
			map[string]string{"calc.go": strings.Replace(calc, "a - b", "a + b", 1)}, ""},
		{"whole file", "<<<<<<< FILE calc.go\npackage calc\n>>>>>>> END\n", map[string]string{"calc.go": "package calc\n"}, ""},
		{"new file from an empty search", "<<<<<<< SEARCH sub/new.go\n=======\npackage sub\n>>>>>>> REPLACE\n", map[string]string{"sub/new.go": "package sub\n", "calc.go": calc}, ""},
		{"two edits of one file apply in order", "<<<<<<< SEARCH calc.go\n\treturn a - b\n=======\n\treturn a + b\n>>>>>>> REPLACE\n<<<<<<< SEARCH calc.go\nfunc Add(a, b int) int {\n=======\nfunc Sum(a, b int) int {\n>>>>>>> REPLACE\n",
			map[string]string{"calc.go": strings.Replace(strings.Replace(calc, "a - b", "a + b", 1), "Add", "Sum", 1)}, ""},
		{"search not found", "<<<<<<< SEARCH calc.go\nreturn a * b\n=======\nx\n>>>>>>> REPLACE\n", map[string]string{"calc.go": calc}, "does not occur"},
		{"missing file", "<<<<<<< SEARCH nope.go\nx\n=======\ny\n>>>>>>> REPLACE\n", map[string]string{"calc.go": calc}, "no such file"},
		{"path leaves the workdir", "<<<<<<< FILE ../evil.go\nx\n>>>>>>> END\n", map[string]string{"calc.go": calc}, "leaves the work directory"},
		{"path into .git", "<<<<<<< FILE .git/config\nx\n>>>>>>> END\n", map[string]string{"calc.go": calc}, ".git"},
		{"unclosed block", "<<<<<<< SEARCH calc.go\nx\n=======\ny\n", map[string]string{"calc.go": calc}, "has no"},
		{"no block at all", "I think you should add a plus sign.", map[string]string{"calc.go": calc}, "no edit block"},
		{"all or nothing", "<<<<<<< FILE other.go\npackage x\n>>>>>>> END\n<<<<<<< SEARCH calc.go\nnot there\n=======\ny\n>>>>>>> REPLACE\n",
			map[string]string{"calc.go": calc, "other.go": ""}, "does not occur"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "calc.go"), []byte(calc), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := applyAnswer(context.Background(), newFence(dir, nil), tc.answer)
			switch {
			case tc.problem == "" && err != nil:
				t.Fatalf("applying %q: %v", tc.answer, err)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Fatalf("applying %q: error %v; want one saying %q", tc.answer, err, tc.problem)
			}
			if tc.problem != "" && !errors.Is(err, ErrNoEdits) {
				var ee *EditError
				if !errors.As(err, &ee) {
					t.Errorf("error %v is not an *EditError", err)
				}
			}
			for name, want := range tc.want {
				b, err := os.ReadFile(filepath.Join(dir, name))
				if want == "" {
					if err == nil {
						t.Errorf("%s was written though another edit failed (edits apply all or nothing)", name)
					}
					continue
				}
				if err != nil || string(b) != want {
					t.Errorf("%s = %q (%v); want %q", name, b, err, want)
				}
			}
		})
	}
}

func TestAmbiguousSearchIsRefused(t *testing.T) {
	_, err := replaceOnce("}\n}\n", "}\n", "x\n")
	if err == nil || !strings.Contains(err.Error(), "occurs 2 times") {
		t.Fatalf("replaceOnce of an ambiguous search: %v; want it refused as occurring 2 times", err)
	}
}

func FuzzParseEdits(f *testing.F) {
	for _, seed := range []string{
		"<<<<<<< SEARCH a.go\nx\n=======\ny\n>>>>>>> REPLACE\n",
		"<<<<<<< FILE a.go\nx\n>>>>>>> END\n",
		"<<<<<<< SEARCH a.go\n=======\n",
		"text only",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, answer string) {
		edits, err := ParseEdits(answer)
		if err == nil && len(edits) == 0 {
			t.Fatal("no error and no edits")
		}
		for _, e := range edits {
			if strings.Contains(e.Path, "\n") {
				t.Fatalf("a path holds a newline: %q", e.Path)
			}
		}
	})
}

// A model's edit through a symbolic link in the tree (a linked vendor or
// docs directory) was written wherever the link pointed: outside the work
// tree, where no snapshot recorded it and no revert could undo it, or into
// .git (a hook git would run).
func TestEditsThroughSymbolicLinksStayInsideTheWorkTree(t *testing.T) {
	tests := []struct {
		name, path string
		problem    string // "" when the edit applies
	}{
		{"a link to a directory outside", "out/evil.txt", "leaves the work directory through a symbolic link"},
		{"a link to a file outside", "outfile.txt", "leaves the work directory through a symbolic link"},
		{"a link into .git", "hooks/pre-commit", ".git"},
		{"a dangling link", "dangling/x.txt", "symbolic link whose target is missing"},
		{"a link to a directory inside", "inside/new.txt", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, outside := t.TempDir(), t.TempDir()
			for _, d := range []string{".git/hooks", "sub"} {
				if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(outside, "file.txt"), []byte("theirs\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for link, target := range map[string]string{
				"out": outside, "outfile.txt": filepath.Join(outside, "file.txt"), "hooks": ".git/hooks",
				"dangling": filepath.Join(outside, "missing"), "inside": "sub",
			} {
				if err := os.Symlink(target, filepath.Join(dir, link)); err != nil {
					t.Fatal(err)
				}
			}
			_, err := applyAnswer(context.Background(), newFence(dir, nil), "<<<<<<< FILE "+tc.path+"\nwritten\n>>>>>>> END\n")
			switch {
			case tc.problem == "" && err != nil:
				t.Fatalf("%s: %v; want it written", tc.path, err)
			case tc.problem != "" && (err == nil || !strings.Contains(err.Error(), tc.problem)):
				t.Fatalf("%s: error %v; want one saying %q", tc.path, err, tc.problem)
			}
			if tc.problem == "" {
				return
			}
			entries, _ := os.ReadDir(outside)
			b, _ := os.ReadFile(filepath.Join(outside, "file.txt"))
			hooks, _ := os.ReadDir(filepath.Join(dir, ".git/hooks"))
			if len(entries) != 1 || string(b) != "theirs\n" || len(hooks) != 0 {
				t.Errorf("%s: something was written through the link (outside: %d entries, file.txt %q; .git/hooks: %d)", tc.path, len(entries), b, len(hooks))
			}
		})
	}
}
