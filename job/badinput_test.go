package job_test

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/job"
)

var update = flag.Bool("update", false, "rewrite the golden want.txt files of testdata/bad from what the code does now")

// badCase is one entry of the bad-input corpus in testdata/bad/<name>/.
type badCase struct {
	name string
	// spec is the spec path relative to the case directory; "" is
	// spec.yaml, "." the directory itself.
	spec string
	// run uses job.Run instead of job.DryRun.
	run bool
	// flagInput, when set, is passed as --input (relative to the case
	// directory).
	flagInput string
	// gen writes generated files (too large or too binary to commit)
	// into the case's copy at dir.
	gen func(t *testing.T, dir string)
	// items, when not -1, says the case must succeed with this many
	// items; -1 says it must fail with a usage error (exit 2) in dry-run
	// mode. Run cases check their own outcome in check.
	items int
	// check makes assertions beyond the golden file.
	check func(t *testing.T, o outcome)
	// gap, when set, says what tenax does wrong in this case today and
	// what it should do. The golden file still pins today's behaviour (a
	// change fails the test); the case then reports itself as skipped
	// with the gap, so `go test -run Reliability -v` lists every known
	// gap. Whoever fixes one removes the gap and rewrites the golden file.
	gap string
	// hangs says the case does not finish today: it is skipped without
	// running, with gap as the reason.
	hangs bool
}

// outcome is what a case produced: the error, the dry run's report, or the
// run's result and records.
type outcome struct {
	err     error
	report  string
	result  *job.Result
	records []record
}

// record is the part of a results.jsonl line the corpus checks.
type record struct {
	Idx    int             `json:"_idx"`
	Output json.RawMessage `json:"output"`
	Error  string          `json:"error"`
	Class  string          `json:"class"`
}

const fail = -1

func badCases() []badCase {
	return []badCase{
		// Specs.
		{name: "spec-unknown-key-typo", items: fail},
		{name: "spec-unknown-top-level-key", items: fail},
		{name: "spec-concurrency-max-string", items: fail},
		{name: "spec-concurrency-max-negative", items: fail},
		{name: "spec-jitter-typo", items: fail},
		{name: "spec-on-trip-never", items: fail},
		{name: "spec-task-type-sql", items: fail},
		{name: "spec-missing-task", items: fail},
		{name: "spec-llm-without-prompt", items: fail},
		{name: "spec-exec-empty-argv", items: fail},
		{name: "spec-missing-env-var", items: fail},
		{name: "spec-heal-hint-bad-regex", items: fail},
		{name: "spec-classify-bad-regex", items: fail},
		{name: "spec-duration-in-words", items: fail},
		{name: "spec-retry-max-attempts-zero", items: fail},
		{name: "spec-failure-rate-over-one", items: fail},
		{name: "spec-empty", items: fail},
		{name: "spec-binary-junk", items: fail, gen: genBinaryJunkSpec},
		{name: "spec-utf16", items: fail, gen: genUTF16Spec},
		{name: "spec-control-character", items: fail, gen: genControlCharSpec},
		{name: "spec-tabs", items: fail},
		{name: "spec-invalid-utf8", items: fail, gen: genInvalidUTF8Spec},
		{name: "spec-long-value", items: fail},
		{name: "spec-anchor-bomb", items: fail},
		// A spec over 1 MiB is refused before parsing, whatever its shape:
		// big data belongs in the input.
		{name: "spec-10mb", items: fail, gen: genHugeBlockSpec},
		{name: "spec-10mb-mapping", items: fail, gen: genHugeMappingSpec},
		// Under 1 MiB, a mapping of 100,000 keys would still take minutes
		// to parse: the token cap refuses it first.
		{name: "spec-many-keys", items: fail, gen: genManyKeysSpec},
		{name: "spec-json-schema-missing", items: fail},
		{name: "spec-json-schema-invalid", items: fail},
		{name: "spec-json-schema-not-json", items: fail},
		{name: "spec-exec-program-missing", items: fail},
		{name: "spec-exec-program-not-executable", items: fail},
		{name: "spec-validate-command-missing", items: fail},
		{name: "spec-path-missing", spec: "missing.yaml", items: fail},
		{name: "spec-is-directory", spec: ".", items: fail},

		// Inputs, each with a valid spec.
		{name: "input-invalid-json", items: fail},
		{name: "input-array-line", items: fail},
		{name: "input-invalid-utf8-line", items: fail, gen: genInvalidUTF8Input},
		{name: "input-10mb-line", items: 2, gen: genHugeLineInput},
		// An input without items is refused (exit 2) unless --allow-empty.
		{name: "input-empty-file", run: true, check: checkEmptyRefused},
		{name: "input-blank-lines", items: fail},
		{name: "input-crlf", items: 3},
		{name: "input-crlf-txt", run: true, check: checkCRLFRun},
		{name: "input-bom", items: 2},
		{name: "input-csv-wrong-field-count", items: fail},
		{name: "input-csv-header-only", items: fail},
		{name: "input-txt-three-lines", items: 3},
		{name: "input-one-item", items: 1},
		{name: "input-unknown-extension", items: fail},
		{name: "input-path-missing", items: fail},
		{name: "input-directory", items: fail},
		{name: "input-directory-with-format", items: fail},
		// --input replaces the spec's input, which then need not exist.
		{name: "input-flag-replaces-missing-spec-input", flagInput: "items.jsonl", items: 2},
		{name: "input-flag-missing", flagInput: "nothere.jsonl", items: fail},
		{name: "input-flag-directory", flagInput: "inputs", items: fail},
		{name: "input-bad-lines-recorded", run: true, check: checkBadLinesRecorded},
	}
}

// TestReliabilityBadInput runs every case of the bad-input corpus in
// testdata/bad and compares what a user would see with the case's
// want.txt. A bad spec or input must end in a clear usage error (exit 2),
// quickly, without a panic; a valid but unusual one must work.
func TestReliabilityBadInput(t *testing.T) {
	cases := badCases()
	checkCorpusMatchesTable(t, cases)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.hangs {
				t.Skipf("KNOWN GAP, not run because it would hang: %s", c.gap)
			}
			dir := filepath.Join(t.TempDir(), c.name)
			if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "bad", c.name))); err != nil {
				t.Fatalf("copying the case: %v", err)
			}
			if err := os.Remove(filepath.Join(dir, "want.txt")); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			if c.gen != nil {
				c.gen(t, dir)
			}
			home := t.TempDir()
			o := runCase(t, c, dir, home)
			got := normalize(render(c, o), dir, home)
			golden(t, filepath.Join("testdata", "bad", c.name, "want.txt"), got)

			switch {
			case c.run:
			case c.items == fail:
				var ue *job.UsageError
				if !errors.As(o.err, &ue) {
					t.Errorf("error %v (%T) is not a *job.UsageError: a bad spec or input must exit 2", o.err, o.err)
				}
			default:
				if o.err != nil {
					t.Fatalf("the dry run failed, want it to work: %v", o.err)
				}
				if n := reportedItems(t, o.report); n != c.items {
					t.Errorf("the dry run counted %d items, want %d", n, c.items)
				}
			}
			if c.check != nil {
				c.check(t, o)
			}
			if c.gap != "" {
				t.Skipf("KNOWN GAP (want.txt pins today's behaviour): %s", c.gap)
			}
		})
	}
}

// runCase runs the case under a deadline. There is deliberately no
// recover: a panic anywhere crashes the test binary, which fails the test.
func runCase(t *testing.T, c badCase, dir, home string) outcome {
	t.Helper()
	// No wall-clock deadline: a loaded machine may take as long as it
	// takes, and go test's -timeout catches a real hang with every
	// goroutine's stack.
	ctx := t.Context()
	specPath := filepath.Join(dir, cmp.Or(c.spec, "spec.yaml"))
	opts := job.Options{
		Home:   home,
		Env:    func(string) (string, bool) { return "", false },
		Logger: slog.New(slog.DiscardHandler),
	}
	if c.flagInput != "" {
		opts.Input = filepath.Join(dir, c.flagInput)
	}
	var o outcome
	if c.run {
		o.result, o.err = job.Run(ctx, specPath, opts)
	} else {
		var b strings.Builder
		o.err = job.DryRun(ctx, specPath, opts, &b)
		o.report = b.String()
	}
	if o.result != nil && o.result.Dir != "" {
		o.records = readRecords(t, filepath.Join(o.result.Dir, "results.jsonl"))
	}
	return o
}

// render writes an outcome as the golden text: the error exactly as the
// CLI prints it, or the dry run's report, or the run's counts and records.
func render(c badCase, o outcome) string {
	var b strings.Builder
	if c.run {
		b.WriteString("job.Run:\n")
		if o.result != nil {
			r := o.result
			fmt.Fprintf(&b, "exit %d; succeeded %d, failed %d, pending %d; resume command %q\n", r.ExitCode, r.Succeeded, r.Failed, r.Pending, strings.ReplaceAll(r.ResumeCommand, r.JobID, "$JOB"))
		}
	} else {
		b.WriteString("job.DryRun:\n")
	}
	if o.err != nil {
		var ue *job.UsageError
		kind := "other error"
		if errors.As(o.err, &ue) {
			kind = "usage error, exit 2"
		}
		fmt.Fprintf(&b, "error (%s):\n%s\n", kind, o.err)
	}
	b.WriteString(o.report)
	if c.run {
		fmt.Fprintf(&b, "results.jsonl: %d records\n", len(o.records))
		for _, r := range o.records {
			if r.Class != "" {
				fmt.Fprintf(&b, "#%d failed (%s): %s\n", r.Idx, r.Class, r.Error)
			} else {
				fmt.Fprintf(&b, "#%d succeeded: %s\n", r.Idx, r.Output)
			}
		}
	}
	return b.String()
}

// normalize replaces the temporary directories with $CASE and $HOME, and
// shortens lines too long to keep in a golden file (saying so).
func normalize(s, dir, home string) string {
	s = strings.ReplaceAll(s, dir, "$CASE")
	s = strings.ReplaceAll(s, home, "$HOME")
	const keep = 300
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		if len(l) > keep {
			cut := keep
			for cut > 0 && !isRuneStart(l[cut]) {
				cut--
			}
			lines[i] = fmt.Sprintf("%s… [golden file: line cut, %d bytes in all]", l[:cut], len(l))
		}
	}
	return strings.Join(lines, "\n")
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// golden compares got with the file at path, or rewrites it with -update.
func golden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no golden file (run go test -run Reliability -update, then read it): %v", err)
	}
	if got != string(want) {
		t.Errorf("what the user sees changed (go test -run Reliability -update rewrites %s):\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// checkCorpusMatchesTable fails when a directory of testdata/bad has no
// case in the table, or a case has no directory: an orphan would
// silently go untested.
func checkCorpusMatchesTable(t *testing.T, cases []badCase) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join("testdata", "bad"))
	if err != nil {
		t.Fatal(err)
	}
	var dirs, names []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	for _, c := range cases {
		names = append(names, c.name)
	}
	slices.Sort(names)
	for _, d := range dirs {
		if _, found := slices.BinarySearch(names, d); !found {
			t.Errorf("testdata/bad/%s has no case in badCases", d)
		}
	}
	if *update {
		return
	}
	for _, n := range names {
		if !slices.Contains(dirs, n) {
			t.Errorf("case %s has no directory testdata/bad/%s", n, n)
		}
	}
}

var itemsLine = regexp.MustCompile(`(?m)^input:  .*: (\d+) items? \(`)

// reportedItems reads the item count off a dry run's report.
func reportedItems(t *testing.T, report string) int {
	t.Helper()
	m := itemsLine.FindStringSubmatch(report)
	if m == nil {
		t.Fatalf("no item count in the dry run's report:\n%s", report)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// readRecords reads a job's results.jsonl; a missing file is no records.
func readRecords(t *testing.T, path string) []record {
	t.Helper()
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var recs []record
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: unreadable record %q: %v", path, sc.Text(), err)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	slices.SortStableFunc(recs, func(a, b record) int { return a.Idx - b.Idx })
	return recs
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// genBinaryJunkSpec writes what pointing tenax at a binary file looks
// like: a PNG signature, NULs and every byte value.
func genBinaryJunkSpec(t *testing.T, dir string) {
	junk := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00")
	for i := range 512 {
		junk = append(junk, byte(i*7+3))
	}
	writeFile(t, filepath.Join(dir, "spec.yaml"), junk)
}

// genInvalidUTF8Spec writes a valid spec but for a Latin-1 byte in the
// job's name (a file saved in the wrong encoding).
func genInvalidUTF8Spec(t *testing.T, dir string) {
	writeFile(t, filepath.Join(dir, "spec.yaml"), []byte("name: r\xe9sum\xe9s\ninput: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"))
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genHugeBlockSpec writes a valid 10 MB spec: an exec task whose stdin
// template is a 10 MB block scalar.
func genHugeBlockSpec(t *testing.T, dir string) {
	var b bytes.Buffer
	b.WriteString("input: items.jsonl\ntask:\n  type: exec\n  argv: [\"cat\"]\n  stdin: |\n")
	for i := 0; b.Len() < 10<<20; i++ {
		fmt.Fprintf(&b, "    line %07d of a long stdin template for item {{.n}}\n", i)
	}
	writeFile(t, filepath.Join(dir, "spec.yaml"), b.Bytes())
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genHugeMappingSpec writes a syntactically valid 10 MB spec: an exec
// task with an env mapping of about 338,000 variables.
func genHugeMappingSpec(t *testing.T, dir string) {
	var b bytes.Buffer
	b.WriteString("input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n  env:\n")
	for i := 0; b.Len() < 10<<20; i++ {
		fmt.Fprintf(&b, "    VAR_%07d: value-%07d\n", i, i)
	}
	writeFile(t, filepath.Join(dir, "spec.yaml"), b.Bytes())
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genUTF16Spec writes a valid spec saved as UTF-16 with a byte order
// mark, as some Windows editors do.
func genUTF16Spec(t *testing.T, dir string) {
	src := "input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"
	b := []byte{0xff, 0xfe}
	for _, r := range src {
		b = append(b, byte(r), 0)
	}
	writeFile(t, filepath.Join(dir, "spec.yaml"), b)
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genControlCharSpec writes a spec with a stray escape character (a
// terminal colour code pasted into the job's name).
func genControlCharSpec(t *testing.T, dir string) {
	writeFile(t, filepath.Join(dir, "spec.yaml"), []byte("name: \x1b[31mreviews\ninput: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"))
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genManyKeysSpec writes a spec just under the size limit whose exec task
// has an env mapping of about 100,000 short variables.
func genManyKeysSpec(t *testing.T, dir string) {
	var b bytes.Buffer
	b.WriteString("input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n  env:\n")
	for i := 0; b.Len() < 1<<20-32; i++ {
		fmt.Fprintf(&b, "    V%x: %d\n", i, i%10)
	}
	writeFile(t, filepath.Join(dir, "spec.yaml"), b.Bytes())
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte(`{"n": 1}`+"\n"))
}

// genInvalidUTF8Input writes three lines, the second holding Latin-1
// bytes.
func genInvalidUTF8Input(t *testing.T, dir string) {
	writeFile(t, filepath.Join(dir, "items.jsonl"), []byte("{\"n\": 1}\n{\"n\": \"caf\xe9\"}\n{\"n\": 3}\n"))
}

// genHugeLineInput writes a 10 MB first line (a valid object with one
// long string) and a short second one.
func genHugeLineInput(t *testing.T, dir string) {
	var b bytes.Buffer
	b.WriteString(`{"n": 1, "text": "`)
	b.Write(bytes.Repeat([]byte("abcdefghij"), 1<<20))
	b.WriteString("\"}\n{\"n\": 2}\n")
	writeFile(t, filepath.Join(dir, "items.jsonl"), b.Bytes())
}

// checkEmptyRefused is the regression test of an empty input that made a
// "completed" 0-item job and exited 0: the run is refused as a usage error
// and creates no job.
func checkEmptyRefused(t *testing.T, o outcome) {
	var ue *job.UsageError
	if !errors.As(o.err, &ue) || o.result != nil {
		t.Fatalf("run over an empty input: %v, %+v; want a usage error and no job", o.err, o.result)
	}
}

// checkCRLFRun: the "\r" of a CRLF line end never reaches the item.
func checkCRLFRun(t *testing.T, o outcome) {
	if o.err != nil {
		t.Fatalf("run over a CRLF input: %v", o.err)
	}
	if o.result.Succeeded != 3 {
		t.Errorf("succeeded %d items, want 3", o.result.Succeeded)
	}
	for _, r := range o.records {
		if bytes.Contains(r.Output, []byte(`\r`)) {
			t.Errorf("#%d: output %s holds the line end's \\r", r.Idx, r.Output)
		}
	}
}

// checkBadLinesRecorded: with on_bad_line: record, lines 2 and 4 of five
// become failed items of class item whose errors name their line, and the
// other three run.
func checkBadLinesRecorded(t *testing.T, o outcome) {
	if o.err != nil {
		t.Fatalf("run: %v", o.err)
	}
	r := o.result
	if r.Succeeded != 3 || r.Failed != 2 || r.Pending != 0 || r.ExitCode != exitcode.Failures {
		t.Errorf("succeeded %d, failed %d, pending %d, exit %d; want 3, 2, 0, exit 1", r.Succeeded, r.Failed, r.Pending, r.ExitCode)
	}
	wantLine := map[int]int{1: 2, 3: 4} // idx → line
	if len(o.records) != 5 {
		t.Fatalf("%d records, want 5", len(o.records))
	}
	for _, rec := range o.records {
		line, bad := wantLine[rec.Idx]
		switch {
		case bad && rec.Class != "item":
			t.Errorf("#%d: class %q, want item", rec.Idx, rec.Class)
		case bad && !strings.Contains(rec.Error, fmt.Sprintf("items.jsonl:%d: ", line)):
			t.Errorf("#%d: error %q does not name items.jsonl:%d", rec.Idx, rec.Error, line)
		case !bad && rec.Class != "":
			t.Errorf("#%d: failed (%s: %s), want success", rec.Idx, rec.Class, rec.Error)
		}
	}
}

// TestResumeNamesTheJobsInputWhenItIsGone: resume reads the input recorded
// in the manifest, not the spec's; when that file is gone the message says
// so, as a usage error.
func TestResumeNamesTheJobsInputWhenItIsGone(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "items.jsonl")
	writeFile(t, in, []byte(`{"n": 1}`+"\n"+`{"n": 2}`+"\n"))
	writeFile(t, filepath.Join(dir, "spec.yaml"), []byte("input: items.jsonl\ntask:\n  type: exec\n  argv: [\"echo\", \"{{.n}}\"]\n"))
	opts := job.Options{
		Home:   filepath.Join(dir, "home"),
		Env:    func(string) (string, bool) { return "", false },
		Logger: slog.New(slog.DiscardHandler),
		Limit:  1,
	}
	res, err := job.Run(t.Context(), filepath.Join(dir, "spec.yaml"), opts)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	// A --limit run reads only as far as it needs: the second item is not
	// counted yet, but the job is left to resume.
	if !res.InputUnread || res.ResumeCommand == "" {
		t.Fatalf("after a run limited to 1 item of 2: InputUnread %v, resume command %q; want the rest unread and a resume command", res.InputUnread, res.ResumeCommand)
	}
	if err := os.Remove(in); err != nil {
		t.Fatal(err)
	}
	opts.Limit = 0
	_, err = job.Resume(t.Context(), res.JobID, opts)
	want := "the job's input " + in + " not found (resume reads the input the job was created with)"
	var ue *job.UsageError
	if err == nil || err.Error() != want || !errors.As(err, &ue) {
		t.Errorf("resume with the input gone: error %v (%T), want the usage error %q", err, err, want)
	}
}
