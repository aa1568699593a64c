package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileInputChangedMidRunStopsWithoutMixing: lines appended mid-run
// ran past the job's last item and left a job that status, export and
// resume refused; a file rewritten in place finished "completed" with old
// and new items under the old hash. Now the run stops with exit 4 and says
// so, every record is of the input the job hashed, and the job stays
// readable.
func TestHostileInputChangedMidRunStopsWithoutMixing(t *testing.T) {
	cases := []struct {
		name   string
		items  int
		pad    int    // bytes of padding an item, to make the file span blocks
		change string // shell run once, while item 0 runs
	}{
		{"appended", 30, 0, `printf '{"n": 90, "v": "new"}\n{"n": 91, "v": "new"}\n' >> items.jsonl`},
		// 40 items of 64 KiB: three 1 MiB blocks, the first read before
		// the change, the others after it.
		{"rewritten in place", 40, 64 << 10, `sed 's/"old"/"new"/' items.jsonl > tmp && cat tmp > items.jsonl`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := newWorkdir(t)
			var b strings.Builder
			for i := range c.items {
				fmt.Fprintf(&b, "{\"n\": %d, \"v\": \"old\", \"pad\": %q}\n", i, strings.Repeat("x", c.pad))
			}
			w.write("items.jsonl", b.String(), 0o644)
			w.write("item.sh", fmt.Sprintf(`#!/bin/sh
if [ "$1" = 0 ] && [ ! -e changed ]; then touch changed; %s; fi
echo "$2"
`, c.change), 0o755)
			w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./item.sh", "{{.n}}", "{{.v}}"]
concurrency: {max: 1}
`, 0o644)
			r := w.tenax("run", "job.yaml")
			if r.code != 4 {
				t.Fatalf("exit %d, want 4 (the input changed)\nstderr:\n%s", r.code, r.stderr)
			}
			if !strings.Contains(r.stderr, "changed while the job ran") {
				t.Errorf("stderr does not say the input changed while the job ran:\n%s", r.stderr)
			}
			id := jobID(t, r)
			st := w.tenax("status", id)
			if st.code != 0 {
				t.Errorf("status of the job exits %d, want 0:\n%s", st.code, st.stderr)
			}
			ex := w.tenax("export", id, "-o", "out.jsonl")
			if ex.code != 0 {
				t.Fatalf("export of the job exits %d, want 0:\n%s", ex.code, ex.stderr)
			}
			recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
			for _, rec := range recs {
				if rec.Idx >= c.items {
					t.Errorf("a record of idx %d, past the job's %d items", rec.Idx, c.items)
				}
				if strings.Contains(string(rec.Output), "new") {
					t.Errorf("item %d ran with the changed input's line %s", rec.Idx, rec.Output)
				}
			}
			res := w.tenax("resume", id)
			if res.code != 2 || !strings.Contains(res.stderr, "changed since job") {
				t.Errorf("resume exits %d, want 2 saying the input changed:\n%s", res.code, res.stderr)
			}
			if _, err := os.Stat(filepath.Join(w.dir, "changed")); err != nil {
				t.Fatalf("the script never changed the input: %v", err)
			}
		})
	}
}

// TestHostileOutputNamingTheInputIsRefused: `--output` or `export -o`
// naming the job's own input overwrote it with the results. Each is
// refused with exit 2, by its path or by another name for the same file,
// and the input is left as it was.
func TestHostileOutputNamingTheInputIsRefused(t *testing.T) {
	w := newWorkdir(t)
	input := w.items("items.jsonl", 5)
	before, err := os.ReadFile(input)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("items.jsonl", filepath.Join(w.dir, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["echo", "{{.n}}"]
`, 0o644)
	ran := w.tenax("run", "job.yaml")
	if ran.code != 0 {
		t.Fatalf("run exits %d:\n%s", ran.code, ran.stderr)
	}
	id := jobID(t, ran)
	for _, args := range [][]string{
		{"run", "job.yaml", "--output", "items.jsonl"},
		{"run", "job.yaml", "--output", "./link.jsonl"},
		{"resume", id, "--output", input},
		{"export", id, "-o", "items.jsonl"},
		{"export", "latest", "-o", "link.jsonl"},
	} {
		r := w.tenax(args...)
		if r.code != 2 || !strings.Contains(r.stderr, "would overwrite the input") {
			t.Errorf("tenax %v exits %d, want 2 refusing to overwrite the input:\n%s", args, r.code, r.stderr)
		}
		after, err := os.ReadFile(input)
		if err != nil || string(after) != string(before) {
			t.Fatalf("after tenax %v the input is %q (%v), want it unchanged", args, after, err)
		}
	}
}

// TestHostileStoreQueryPasswordIsNeverPrinted: a ?password= in the
// PostgreSQL store URL was printed in errors and in the "Run it with:
// tenax worker --store '…'" line.
func TestHostileStoreQueryPasswordIsNeverPrinted(t *testing.T) {
	const secret = "pw-SECRET-4242"
	refused := newWorkdir(t).tenax("status", "--store", "postgres://tenax@127.0.0.1:1/db?password="+secret)
	if refused.code != 4 || strings.Contains(refused.stdout+refused.stderr, secret) {
		t.Errorf("an unreachable store: exit %d, want 4 without the password:\n%s%s", refused.code, refused.stdout, refused.stderr)
	}
	pg := postgresStore(t)
	sep := "?"
	if strings.Contains(pg, "?") {
		sep = "&"
	}
	w := fixLaterWorkdir(t)
	r := w.tenax("run", "job.yaml", "--store", pg+sep+"password="+secret, "--workers", "0")
	if r.code != 0 {
		t.Fatalf("run --workers 0: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, secret) || !strings.Contains(r.stdout, "Run it with: tenax worker --store") {
		t.Errorf("run --workers 0 printed the store's password, or no worker command:\n%s%s", r.stdout, r.stderr)
	}
}

// TestHostileMockHelpDescribesTheQuotaReplyItGives: `tenax mock --help`
// said --quota answers Anthropic's wire with a 400 billing_error, the
// reply it gave before; it gives a 400 invalid_request_error whose message
// says the credit balance is too low (402 billing_error is
// --payment-required's).
func TestHostileMockHelpDescribesTheQuotaReplyItGives(t *testing.T) {
	r := newWorkdir(t).tenax("mock", "--help")
	var quota string
	for _, line := range strings.Split(r.stdout, "\n") {
		if strings.Contains(line, "--quota") {
			quota = line
		}
	}
	for _, want := range []string{"429 insufficient_quota", "400 invalid_request_error", "credit balance is too low", "ThrottlingException"} {
		if !strings.Contains(quota, want) {
			t.Errorf("mock --help says of --quota %q, want it to name %q", quota, want)
		}
	}
	if strings.Contains(quota, "billing_error") {
		t.Errorf("mock --help still says --quota answers billing_error: %q", quota)
	}
}
