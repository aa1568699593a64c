package job_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/classify"
)

// reviewScript is a file reviewer as users write them: it reviews one file,
// and on failure prints a Python-style traceback and exits 1, the code that
// says nothing. Files named reset-* lose the connection on their first
// call; missing-* files do not exist.
const reviewScript = `#!/bin/sh
f="$1"
mktemp "$STATE/calls/$(basename "$f").XXXXXX" >/dev/null
case "$(basename "$f")" in
reset-*)
	if mkdir "$STATE/seen-$(basename "$f")" 2>/dev/null; then
		cat >&2 <<EOT
Traceback (most recent call last):
  File "review.py", line 30, in <module>
    resp = client.review(path)
  File "client.py", line 12, in review
    return self.session.post(url, data=body)
ConnectionResetError: [Errno 104] Connection reset by peer
EOT
		exit 1
	fi
	;;
missing-*)
	cat >&2 <<EOT
Traceback (most recent call last):
  File "review.py", line 22, in <module>
    with open(path) as fh:
         ^^^^^^^^^^
FileNotFoundError: [Errno 2] No such file or directory: '$f'
EOT
	exit 1
	;;
esac
echo "reviewed $f: looks good"
`

// TestFileReviewerRetriesResetsAndNamesMissingFiles is the file-reviewer
// scenario end to end: an exec task over 150 files whose script fails with
// "connection reset" on some calls and "No such file" on others. The
// resets are retried and succeed; the missing files fail once, as item
// failures, their error the traceback's last line and their record
// keeping stderr's tail.
func TestFileReviewerRetriesResetsAndNamesMissingFiles(t *testing.T) {
	w := newLLMWorld(t)
	state := filepath.Join(w.dir, "state")
	if err := os.MkdirAll(filepath.Join(state, "calls"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.file("review.sh", reviewScript, 0o755)
	var files strings.Builder
	resets, missing := map[int]bool{}, map[int]bool{}
	for i := range 150 {
		name := fmt.Sprintf("src/file%03d.go", i)
		switch {
		case i%10 == 3:
			name, resets[i] = fmt.Sprintf("src/reset-%03d.go", i), true
		case i%25 == 7:
			name, missing[i] = fmt.Sprintf("src/missing-%03d.go", i), true
		}
		files.WriteString(name + "\n")
	}
	w.file("files.txt", files.String(), 0o644)
	w.file("review.yaml", fmt.Sprintf(`input: files.txt
task:
  type: exec
  argv: ["./review.sh", "{{.text}}"]
  env: {STATE: %q}
retry:
  max_attempts: 3
  backoff: {base: 1ms, max: 5ms}
breaker:
  threshold: 5
  on_trip: abort
concurrency: {max: 8}
`, state), 0o644)

	res := w.run("review.yaml")
	if res.Succeeded != 150-len(missing) || res.Failed != len(missing) || res.Pending != 0 {
		t.Fatalf("succeeded %d, failed %d, pending %d; want %d, %d, 0", res.Succeeded, res.Failed, res.Pending, 150-len(missing), len(missing))
	}
	calls, err := os.ReadDir(filepath.Join(state, "calls"))
	if err != nil {
		t.Fatal(err)
	}
	if want := 150 + len(resets); len(calls) != want {
		t.Errorf("the script ran %d times, want %d: once per file and once more per reset", len(calls), want)
	}
	for idx, rec := range w.records(res.JobID) {
		switch {
		case resets[idx]:
			if rec.Failed() || rec.Attempts != 2 {
				t.Errorf("#%d (a reset) ended %q after %d attempts; want success on the retry", idx, rec.Error, rec.Attempts)
			}
		case missing[idx]:
			want := fmt.Sprintf("/review.sh: exit 1: FileNotFoundError: [Errno 2] No such file or directory: 'src/missing-%03d.go'", idx)
			if rec.Class != classify.Item || rec.Attempts != 1 || !strings.HasSuffix(rec.Error, want) {
				t.Errorf("#%d (missing) ended %v after %d attempts with %q; want one item failure ending %q", idx, rec.Class, rec.Attempts, rec.Error, want)
			}
			if !strings.HasPrefix(rec.Stderr, "Traceback (most recent call last):") || !strings.Contains(rec.Stderr, "FileNotFoundError") {
				t.Errorf("#%d's record keeps stderr %q, want the traceback", idx, rec.Stderr)
			}
			if rec.Fingerprint == "" {
				t.Errorf("#%d has no fingerprint", idx)
			}
		default:
			if rec.Failed() || rec.Attempts != 1 {
				t.Errorf("#%d ended %q after %d attempts; want one good call", idx, rec.Error, rec.Attempts)
			}
		}
	}
}
