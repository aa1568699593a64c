package job

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/exitcode"
)

// TestBreakerCountLetsBadItemsPass is the regression test of a breaker
// that could not be told to ignore a class: with breaker.count: [fatal,
// retryable], a run of permanent item failures goes on to its end instead
// of tripping the breaker; without it, the same run stops at the
// threshold.
func TestBreakerCountLetsBadItemsPass(t *testing.T) {
	for _, c := range []struct {
		name, count     string
		failed, pending int
		exit            int
	}{
		{"every class counts by default", "", 3, 7, exitcode.Aborted},
		{"item failures do not count", "  count: [fatal, retryable]\n", 10, 0, exitcode.Failures},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			var items strings.Builder
			for i := range 10 {
				fmt.Fprintf(&items, "{\"n\": %d}\n", i)
			}
			write := func(name, body string, mode os.FileMode) {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
					t.Fatal(err)
				}
			}
			write("items.jsonl", items.String(), 0o644)
			write("bad.sh", "#!/bin/sh\necho \"item $1 is malformed\" >&2\nexit 3\n", 0o755)
			write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./bad.sh", "{{.n}}"]
  exit_codes: {item: [3]}
concurrency: {max: 1}
breaker:
  threshold: 3
  on_trip: abort
`+c.count, 0o644)
			res, err := Run(context.Background(), filepath.Join(dir, "job.yaml"), Options{Home: filepath.Join(dir, "home")})
			if err != nil {
				t.Fatal(err)
			}
			if res.Failed != c.failed || res.Pending != c.pending || res.ExitCode != c.exit {
				t.Errorf("failed %d, pending %d, exit %d; want %d, %d, %d", res.Failed, res.Pending, res.ExitCode, c.failed, c.pending, c.exit)
			}
		})
	}
}
