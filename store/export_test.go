package store_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// newJob returns a job holding, in this order: idx 2 ok, idx 0 failed,
// idx 1 ok, then idx 0 ok (its latest) and idx 3 failed.
func newJob(t *testing.T) store.Job {
	t.Helper()
	s := &jsonl.Store{Home: t.TempDir()}
	j, err := s.Create(t.Context(), store.Manifest{Created: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	rec := func(idx int, out string, errMsg string) store.Record {
		r := store.Record{Idx: idx, ID: "id" + string(rune('a'+idx)), Input: json.RawMessage(`{"n":1}`), Attempts: idx + 1}
		if out != "" {
			r.Output = json.RawMessage(out)
		}
		if errMsg != "" {
			r.Error, r.Class = errMsg, classify.Item
		}
		return r
	}
	err = j.Append(t.Context(),
		rec(2, `{"b": [1, 2]}`, ""),
		rec(0, "", "first, failed"),
		rec(1, `"plain, \"quoted\""`, ""),
		rec(0, `{"a":0}`, ""),
		rec(3, "", "bad item"),
	)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestExportJSONLIsCompactedIdxOrderedAndFiltered(t *testing.T) {
	cases := []struct {
		name   string
		filter func(store.Record) bool
		want   []int
	}{
		{"all", nil, []int{0, 1, 2, 3}},
		{"succeeded only", func(r store.Record) bool { return !r.Failed() }, []int{0, 1, 2}},
		{"failed only", func(r store.Record) bool { return r.Failed() }, []int{3}},
	}
	j := newJob(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := store.Export(t.Context(), j, &out, store.FormatJSONL, tc.filter); err != nil {
				t.Fatalf("Export: %v", err)
			}
			var got []int
			for _, line := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				var r store.Record
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("exported line %q is not a record: %v", line, err)
				}
				if r.Idx == 0 && r.Failed() {
					t.Errorf("idx 0 was exported with its superseded failure")
				}
				got = append(got, r.Idx)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("exported idx = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestExportCSVHasDocumentedColumns(t *testing.T) {
	var out bytes.Buffer
	if err := store.Export(t.Context(), newJob(t), &out, store.FormatCSV, nil); err != nil {
		t.Fatalf("Export: %v", err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("exported CSV does not parse: %v", err)
	}
	want := [][]string{
		{"_idx", "id", "n", "class", "error", "attempts", "output"},
		{"0", "ida", "1", "", "", "1", `{"a":0}`},
		{"1", "idb", "1", "", "", "2", `plain, "quoted"`},
		{"2", "idc", "1", "", "", "3", `{"b":[1,2]}`},
		{"3", "idd", "1", "item", "bad item", "4", ""},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("CSV rows:\n got %q\nwant %q", rows, want)
	}
}

// TestExportCSVHasInputColumnsAndPlainText is the regression test of a CSV
// export without the input (rows could not be read without joining back
// to the input file) and with text outputs quoted as JSON ("\"hola\""):
// every input field gets a column, in first-seen order, and text is text.
func TestExportCSVHasInputColumnsAndPlainText(t *testing.T) {
	s := &jsonl.Store{Home: t.TempDir()}
	j, err := s.Create(t.Context(), store.Manifest{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	err = j.Append(t.Context(),
		store.Record{Idx: 0, ID: "u1", Input: json.RawMessage(`{"id": "u1", "word": "coche", "n": 3, "tags": ["a", "b"]}`), Output: json.RawMessage(`"car"`), Attempts: 1},
		store.Record{Idx: 1, Input: json.RawMessage(`{"word": "línea\nnueva", "error": "theirs", "extra": null}`), Output: json.RawMessage(`{"es": "x"}`), Attempts: 2},
		store.Record{Idx: 2, Input: json.RawMessage(`"a bad line"`), Error: "invalid JSON", Class: classify.Item},
	)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := store.Export(t.Context(), j, &out, store.FormatCSV, nil); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatalf("exported CSV does not parse: %v\n%s", err, out.String())
	}
	want := [][]string{
		{"_idx", "id", "word", "n", "tags", "input.error", "extra", "class", "error", "attempts", "output"},
		{"0", "u1", "coche", "3", `["a","b"]`, "", "", "", "", "1", "car"},
		{"1", "", "línea\nnueva", "", "", "theirs", "", "", "", "2", `{"es":"x"}`},
		{"2", "", "", "", "", "", "", "item", "invalid JSON", "0", ""},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("CSV rows:\n got %q\nwant %q", rows, want)
	}
}

func TestExportRejectsUnknownFormat(t *testing.T) {
	err := store.Export(t.Context(), newJob(t), &bytes.Buffer{}, "xml", nil)
	if err == nil || !strings.Contains(err.Error(), "jsonl") {
		t.Errorf("Export with format xml: err = %v, want one naming the formats", err)
	}
	path := filepath.Join(t.TempDir(), "out.xml")
	if err := store.WriteOutput(t.Context(), newJob(t), path, "xml", nil); err == nil {
		t.Errorf("WriteOutput with format xml succeeded")
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("WriteOutput with a bad format left a file at %s", path)
	}
}

func TestWriteOutputReplacesTheFileWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := store.WriteOutput(t.Context(), newJob(t), path, store.FormatJSONL, nil); err != nil {
		t.Fatalf("WriteOutput: %v", err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(b, []byte("\n")); n != 4 {
		t.Errorf("output holds %d lines, want 4:\n%s", n, b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("WriteOutput left %d files in the directory, want only the output", len(entries))
	}
}

// failingJob is a job whose Scan gives two records and then fails, having
// first let the test look at the output path midway.
type failingJob struct {
	store.Job
	midway func()
}

var errScan = errors.New("disk on fire")

func (f failingJob) Scan(ctx context.Context, fn func(store.Record) error) error {
	for idx := range 2 {
		if err := fn(store.Record{Idx: idx}); err != nil {
			return err
		}
	}
	f.midway()
	return errScan
}

func TestWriteOutputLeavesNoPartialFileUnderItsName(t *testing.T) {
	for _, existing := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "out.csv")
		if existing {
			if err := os.WriteFile(path, []byte("previous\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		checkUntouched := func(when string) {
			b, err := os.ReadFile(path)
			switch {
			case existing && string(b) != "previous\n":
				t.Errorf("%s: %s holds %q, want its previous content", when, path, b)
			case !existing && !errors.Is(err, os.ErrNotExist):
				t.Errorf("%s: %s exists (%q), want no file under the final name", when, path, b)
			}
		}
		j := failingJob{Job: newJob(t), midway: func() { checkUntouched("midway through the export") }}
		err := store.WriteOutput(t.Context(), j, path, store.FormatCSV, nil)
		if !errors.Is(err, errScan) {
			t.Errorf("WriteOutput over a failing scan: err = %v, want the scan's error", err)
		}
		checkUntouched("after the failed export")
		entries, _ := os.ReadDir(dir)
		if want := map[bool]int{false: 0, true: 1}[existing]; len(entries) != want {
			t.Errorf("a failed WriteOutput left %d files, want %d (its temporary file removed)", len(entries), want)
		}
	}
}

// TestWriteOutputRemovesTempFilesAKilledRunLeft: a kill during compaction
// left an empty .out.jsonl.tmp-* beside --output for good.
func TestWriteOutputRemovesTempFilesAKilledRunLeft(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out[1].jsonl")
	stale := []string{".out[1].jsonl.tmp-123456", ".out[1].jsonl.tmp-9"}
	keep := []string{".out[1].jsonl.tmp-notours", ".other.jsonl.tmp-123", "out[1].jsonl.tmp-5"}
	for _, n := range append(append([]string{}, stale...), keep...) {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err := store.WriteFileAtomic(path, 0o644, func(w io.Writer) error {
		_, err := io.WriteString(w, "x\n")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range stale {
		if _, err := os.Stat(filepath.Join(dir, n)); !os.IsNotExist(err) {
			t.Errorf("stale temp file %s is still there (err %v)", n, err)
		}
	}
	for _, n := range keep {
		if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
			t.Errorf("%s is not a temp file of %s, but it was removed: %v", n, path, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != len(keep)+1 {
		t.Errorf("directory holds %d entries, want the %d kept and the output", len(entries), len(keep))
	}
}
