package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
)

// TestSeqReaderReadsItsStretchWhole: the hinted reader returns exactly the
// bytes of its stretch, long (hinted, read past several windows) or short,
// whatever the reads' sizes.
func TestSeqReaderReadsItsStretchWhole(t *testing.T) {
	data := make([]byte, 2*seqHintFrom+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cases := []struct {
		name     string
		off, end int64
		read     int
	}{
		{"long, hinted, in reads of its buffer", 100, int64(len(data)), seqBuf},
		{"long, in odd reads", 0, int64(len(data)), 70001},
		{"short, unhinted", 5000, 5000 + seqHintFrom/2, 64 << 10},
		{"empty", 10, 10, 1024},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newSeqReader(f, c.off, c.end, nil)
			if hinted := c.end-c.off >= seqHintFrom; r.hint != hinted {
				t.Errorf("hint = %v for a stretch of %d bytes, want %v", r.hint, c.end-c.off, hinted)
			}
			got, err := io.ReadAll(bufio.NewReaderSize(r, c.read))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data[c.off:c.end]) {
				t.Fatalf("read %d bytes that differ from the stretch [%d, %d) of the file", len(got), c.off, c.end)
			}
		})
	}
}

// TestSeqReaderReportsProgress: a long read says how far it is every
// progressEvery, and says once more when it ends, at the whole stretch.
func TestSeqReaderReportsProgress(t *testing.T) {
	data := bytes.Repeat([]byte("x"), 3*seqBuf)
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var reports []string
	r := newSeqReader(f, 0, int64(len(data)), func(read, total int64) {
		reports = append(reports, fmt.Sprintf("%d/%d", read, total))
	})
	buf := make([]byte, seqBuf)
	if _, err := r.Read(buf); err != nil {
		t.Fatal(err)
	}
	r.report.nextReport = time.Now().Add(-time.Millisecond) // progressEvery has passed
	for {
		if _, err := r.Read(buf); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	want := []string{fmt.Sprintf("%d/%d", 2*seqBuf, len(data)), fmt.Sprintf("%d/%d", len(data), len(data))}
	if strings.Join(reports, " ") != strings.Join(want, " ") {
		t.Fatalf("progress reports %q, want %q: one when progressEvery passed, one at the end", reports, want)
	}
}

// TestAJobWithoutIndexBuildsItFromALongLog: an older job's long log (past
// seqHintFrom, so read with the kernel's hints and the large buffer) is
// indexed line for line when the job is opened, and its outcomes read
// right through the index.
func TestAJobWithoutIndexBuildsItFromALongLog(t *testing.T) {
	s := &Store{Home: t.TempDir()}
	sj, err := s.Create(t.Context(), store.Manifest{Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	id := sj.Manifest().ID
	if err := sj.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(s.Home, "jobs", id)
	// About 2 KB a record, as in bench/resume.sh; every seventh failed.
	pad := strings.Repeat("lorem ipsum ", 170)
	var b bytes.Buffer
	n := 0
	for ; b.Len() < seqHintFrom+3*seqBuf; n++ {
		rec := store.Record{Idx: n, Input: json.RawMessage(`{}`), Output: json.RawMessage(`"` + pad + `"`), Attempts: 1, FinishedAt: time.Unix(1e9, 0)}
		if n%7 == 0 {
			rec.Error, rec.Class = "HTTP 422", classify.Item
		}
		line, err := rec.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, resultsFile), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, indexFile)); err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m, err := readManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	m.Items = n
	raw, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, manifestFile), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	j, err := s.open(t.Context(), id, false)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if fi, err := os.Stat(filepath.Join(dir, indexFile)); err != nil || fi.Size() != int64(len(indexHeader)+n*indexEntrySize) {
		t.Fatalf("results.idx after opening a job of %d records without one: %v, %v; want %d entries", n, fi, err, n)
	}
	o, err := j.Outcomes(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		want := store.Succeeded
		if i%7 == 0 {
			want = store.Failed
		}
		if got := o.Get(i); got != want {
			t.Fatalf("outcome of idx %d read through the built index = %v, want %v", i, got, want)
		}
	}
}

// TestStoreLoggerHearsHowFarALongReadIs: the progress of a job's long log
// read reaches Store.Logger as one line naming the job and how far it is;
// without a logger there is no report to make.
func TestStoreLoggerHearsHowFarALongReadIs(t *testing.T) {
	if (&Store{}).readProgress("job_1") != nil {
		t.Fatal("a store without a logger made a progress report")
	}
	var logged bytes.Buffer
	s := &Store{Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	s.readProgress("job_1")(1100<<20, 2200<<20)
	for _, want := range []string{"reading results.jsonl to index it", "job=job_1", "1100 of 2200 MB (50%)"} {
		if !strings.Contains(logged.String(), want) {
			t.Errorf("progress line %q lacks %q", logged.String(), want)
		}
	}
}

// TestCachedWholeTellsACachedStretchFromADroppedOne: a long read leaves a
// log that was all in the page cache there, and drops one that was not;
// cachedWhole is what tells them apart.
func TestCachedWholeTellsACachedStretchFromADroppedOne(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	data := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MB
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages are not dropped
		t.Fatal(err)
	}
	if _, err := io.ReadAll(f); err != nil {
		t.Fatal(err)
	}
	if !cachedWhole(f, 100, int64(len(data))-200) {
		t.Skip("cachestat(2) cannot say (not Linux 6.5 or later): a long read drops what it read")
	}
	adviseDontNeed(f, 0, int64(len(data)))
	if cachedWhole(f, 100, int64(len(data))-200) {
		t.Error("cachedWhole says a stretch just dropped from the page cache is all in it")
	}
}

// TestALongScanSaysHowManyRecordsItHasRead: status of a million-record
// job read its latest records for 15 s after the log's read, saying
// nothing. A Scan now tells Store.Logger how many items it has read the
// records of, as it goes and once at its end.
func TestALongScanSaysHowManyRecordsItHasRead(t *testing.T) {
	const n = 5000
	s, id := writeSucceeded(t, n)
	var logged bytes.Buffer
	s.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	j, err := s.OpenJob(t.Context(), id, true)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	j.decodedEvery = time.Nanosecond // every report is due
	scanned := 0
	if err := j.Scan(t.Context(), func(store.Record) error { scanned++; return nil }); err != nil || scanned != n {
		t.Fatalf("Scan: %d records, %v; want %d", scanned, err, n)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(logged.String()), "\n") {
		if strings.Contains(l, "reading the job's records") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 2 {
		t.Fatalf("a Scan of %d records logged %d progress lines, want one as it goes and one at its end:\n%s", n, len(lines), logged.String())
	}
	if last := lines[len(lines)-1]; !strings.Contains(last, "job="+id) || !strings.Contains(last, "5000 of 5000 items (100%)") {
		t.Errorf("the last progress line is %q, want it to name the job and all %d items read", last, n)
	}
}
