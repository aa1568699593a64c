package job_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
