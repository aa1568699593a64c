package job

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tenaxhq/tenax/input"
)

// TestInputFormatWinsOverTheExtension: an input.format in the spec reads a
// file whose extension says nothing (items.log) in that format, here with
// the spec named by a relative path.
func TestInputFormatWinsOverTheExtension(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile("items.log", []byte("{\"n\": 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("job.yaml", []byte("input: {path: items.log, format: jsonl}\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := LoadSpec("job.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	f, err := formatOf(filepath.Join(dir, "items.log"), s)
	if err != nil || f != input.JSONL {
		t.Fatalf("format %q, %v; want jsonl from input.format", f, err)
	}
}
