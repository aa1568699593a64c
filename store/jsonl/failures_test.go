package jsonl_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// copyDirWithoutTimes copies the files of dir into a new directory of the
// same name under home/jobs, as `cp -r` without -p does: new inodes, every
// file's time the time of the copy. results.jsonl is copied last and then
// dated an hour ahead, so that it is newer than failures.jsonl however
// fast the copy.
func copyDirWithoutTimes(t *testing.T, dir, home string) string {
	t.Helper()
	to := filepath.Join(home, "jobs", filepath.Base(dir))
	must(t, os.MkdirAll(to, 0o755))
	entries, err := os.ReadDir(dir)
	must(t, err)
	var names []string
	for _, e := range entries {
		if e.Name() != "results.jsonl" && e.Name() != "lock" {
			names = append(names, e.Name())
		}
	}
	for _, name := range append(names, "results.jsonl") {
		b, err := os.ReadFile(filepath.Join(dir, name))
		must(t, err)
		must(t, os.WriteFile(filepath.Join(to, name), b, 0o644))
	}
	future := time.Now().Add(time.Hour)
	must(t, os.Chtimes(filepath.Join(to, "results.jsonl"), future, future))
	return to
}

// TestAJobCopiedWithoutTimesResumesWithoutRewritingFailures: failures.jsonl
// was judged up to date by modification times alone, so a job directory
// copied without them (cp without -p, a restore) had a log newer than it,
// and the next resume with nothing to run rewrote the whole file (224 MB
// for a million records). failures.from now says which log it was made
// from: a copy of the same log keeps it; a log that really changed, in
// the copy or in place, gets it rewritten.
func TestAJobCopiedWithoutTimesResumesWithoutRewritingFailures(t *testing.T) {
	late := `{"_idx":0,"input":null,"output":null,"error":"late","class":"item","finished_at":"2024-06-07T08:09:10Z"}` + "\n"
	cases := []struct {
		name    string
		legacy  bool                           // the job has no failures.from, as an older tenax left it
		inPlace bool                           // the job is resumed where it is, not copied
		change  func(t *testing.T, dir string) // what happens to the log before the resume
		rewrite bool
	}{
		{name: "same log", rewrite: false},
		{name: "same log, older tenax's job copied with times first", legacy: true, rewrite: false},
		{name: "a record appended to the copy", change: func(t *testing.T, dir string) {
			appendToFile(t, filepath.Join(dir, "results.jsonl"), late)
		}, rewrite: true},
		{name: "the log edited in place far from its end, same length", inPlace: true, change: func(t *testing.T, dir string) {
			path := filepath.Join(dir, "results.jsonl")
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			must(t, err)
			b, err := os.ReadFile(path)
			must(t, err)
			at := strings.Index(string(b), `"HTTP 422"`)
			_, err = f.WriteAt([]byte(`"HTTP 423"`), int64(at))
			must(t, err)
			must(t, f.Close())
			future := time.Now().Add(2 * time.Hour)
			must(t, os.Chtimes(path, future, future))
		}, rewrite: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &jsonl.Store{Home: t.TempDir()}
			j := createJob(t, s)
			id := j.Manifest().ID
			bad := record(1)
			bad.Output, bad.Error, bad.Class = nil, "HTTP 422", classify.Item
			mustAppend(t, j, record(0), bad)
			// More than the 64 KiB of the log's end failures.from sums,
			// so that an edit near its start is found by the log's
			// modification time, not by its content.
			for i := 2; i < 2000; i++ {
				mustAppend(t, j, record(i))
			}
			must(t, j.Finish(t.Context()))
			mustClose(t, j)
			from := filepath.Join(j.Dir(), "failures.from")
			if _, err := os.Stat(from); err != nil {
				t.Fatalf("Finish wrote no failures.from: %v", err)
			}
			src := j.Dir()
			if tc.legacy {
				// An older tenax's job: no failures.from. Its first resume
				// judges by times, as that tenax did, and writes one.
				must(t, os.Remove(from))
				w, err := s.Open(t.Context(), id)
				must(t, err)
				must(t, w.Finish(t.Context()))
				mustClose(t, w)
				if _, err := os.Stat(from); err != nil {
					t.Fatalf("a Finish of a job without failures.from, its failures up to date, wrote none: %v", err)
				}
			}

			copied, dir := s, src
			if !tc.inPlace {
				copied = &jsonl.Store{Home: t.TempDir()}
				dir = copyDirWithoutTimes(t, src, copied.Home)
			}
			if tc.change != nil {
				tc.change(t, dir)
			}
			failures := filepath.Join(dir, "failures.jsonl")
			before, err := os.Stat(failures)
			must(t, err)
			w, err := copied.Open(t.Context(), id)
			must(t, err)
			must(t, w.Finish(t.Context()))
			mustClose(t, w)
			after, err := os.Stat(failures)
			must(t, err)
			if rewrote := !os.SameFile(before, after); rewrote != tc.rewrite {
				t.Errorf("a resume with nothing to run rewrote failures.jsonl: %v, want %v", rewrote, tc.rewrite)
			}
			b, err := os.ReadFile(failures)
			must(t, err)
			log, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
			must(t, err)
			wantErr := `"HTTP 422"`
			if strings.Contains(string(log), `"HTTP 423"`) {
				wantErr = `"HTTP 423"`
			}
			if !strings.Contains(string(b), wantErr) {
				t.Errorf("failures.jsonl after the resume:\n%s\nwant the failure as the log has it, %s", b, wantErr)
			}
		})
	}
}
