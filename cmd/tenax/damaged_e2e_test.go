package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestResumeRefusesTheDamagedLineStatusAndExportRefuse: resume read a
// record damaged mid-line (a NUL or a bad escape inside a string, a broken
// nested value, a field of the wrong type) with the log's structural
// scanner, which skims strings and nested values, and went on as if the
// item had its outcome; status and export decode the record and refused
// the job. All three now judge a line by one rule (store/jsonl
// decodeRecord): each refuses the same line of the same file, and resume
// neither cuts nor appends to the log.
func TestResumeRefusesTheDamagedLineStatusAndExportRefuse(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage rewrites the record line in place, keeping its length.
		damage func(line []byte) []byte
	}{
		{"a NUL inside a string", func(l []byte) []byte { return replaceAfter(l, `"finished_at":"`, "\x00") }},
		{"a bad escape inside a string", func(l []byte) []byte { return replaceAfter(l, `"finished_at":"`, `\x`) }},
		{"a broken nested value", func(l []byte) []byte { return replaceAfter(l, `"usage":{"input_tokens"`, ",") }},
		{"a literal damaged", func(l []byte) []byte { return replaceAfter(l, `"cache_hit":`, "fals0") }},
		{"a field of the wrong type", func(l []byte) []byte { return replaceAfter(l, `"cache_hit":`, `"fal"`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorkdir(t)
			w.items("items.jsonl", 5)
			w.write("job.yaml", "input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n", 0o644)
			ran := w.tenax("run", "job.yaml")
			if ran.code != 0 {
				t.Fatalf("run exits %d:\n%s", ran.code, ran.stderr)
			}
			id := jobID(t, ran)
			dir := filepath.Join(w.home, "jobs", id)
			log := filepath.Join(dir, "results.jsonl")
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			start := bytes.Index(b, []byte(`{"_idx":2,`))
			if start < 0 {
				t.Fatalf("no record of idx 2 in:\n%s", b)
			}
			end := start + bytes.IndexByte(b[start:], '\n')
			damaged := tc.damage(append([]byte(nil), b[start:end]...))
			if len(damaged) != end-start {
				t.Fatalf("the damage changed the line's length: %q", damaged)
			}
			copy(b[start:], damaged)
			if err := os.WriteFile(log, b, 0o644); err != nil {
				t.Fatal(err)
			}
			// The damage keeps the line's length, so results.idx would
			// still vouch for it: without it (an older tenax's job, or an
			// index a longer edit put out of step) every reader reads the
			// line itself.
			if err := os.Remove(filepath.Join(dir, "results.idx")); err != nil {
				t.Fatal(err)
			}
			where := fmt.Sprintf("results.jsonl:%d (byte %d)", bytes.Count(b[:start], []byte("\n"))+1, start)
			for _, args := range [][]string{{"resume", id}, {"status", id}, {"export", id}} {
				r := w.tenax(args...)
				if r.code == 0 || !strings.Contains(r.stderr, where) || !strings.Contains(r.stderr, "is not a tenax record") {
					t.Errorf("tenax %s exits %d, want an error naming %s as not a tenax record:\n%s", strings.Join(args, " "), r.code, where, r.stderr)
				}
			}
			after, err := os.ReadFile(log)
			if err != nil || !bytes.Equal(after, b) {
				t.Errorf("after the resume the log is %d bytes (%v), want it as damaged, %d bytes", len(after), err, len(b))
			}
		})
	}
}

// replaceAfter overwrites the bytes of line just after the first marker
// with with.
func replaceAfter(line []byte, marker, with string) []byte {
	at := bytes.Index(line, []byte(marker))
	if at < 0 {
		return line
	}
	copy(line[at+len(marker):], with)
	return line
}
