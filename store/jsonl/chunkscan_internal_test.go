package jsonl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// logFile writes data to a file and opens it.
func logFile(t testing.TB, data []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), resultsFile)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// readOnce reads f from from to to as one logReader does, lineNo lines
// before from: the lines in order and the error that stopped it.
func readOnce(f *os.File, from, to int64, lineNo int) ([]indexEntry, error) {
	lr := newLogReader(io.NewSectionReader(f, from, to-from), resultsFile, from)
	lr.lineNo = lineNo
	var lines []indexEntry
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			return lines, nil
		}
		if err != nil {
			return lines, err
		}
		lines = append(lines, entryOf(line))
	}
}

// readChunked reads the same with chunkScan.
func readChunked(ctx context.Context, f *os.File, from, to int64, lineNo int, chunk int64, workers int) ([]indexEntry, error) {
	c := &chunkScan{f: f, path: resultsFile, from: from, to: to, lineNo: lineNo,
		workers: workers, chunk: chunk}
	var lines []indexEntry
	err := c.run(ctx, func(e indexEntry) { lines = append(lines, e) })
	return lines, err
}

// sameRead fails t unless the chunked read of data gives what one
// logReader gives, for chunks of many sizes up to past the log's and 1
// to 3 workers.
func sameRead(t *testing.T, data []byte, from int64, lineNo int) {
	t.Helper()
	f := logFile(t, data)
	to := int64(len(data))
	want, wantErr := readOnce(f, from, to, lineNo)
	// Every size up to 40 bytes, then a quarter larger each time.
	for chunk := int64(1); chunk <= to+1; chunk = max(chunk+1, chunk*5/4) {
		for workers := 1; workers <= 3; workers++ {
			got, err := readChunked(t.Context(), f, from, to, lineNo, chunk, workers)
			if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("chunks of %d bytes, %d workers:\n got %v, %v\nwant %v, %v",
					chunk, workers, got, err, want, wantErr)
			}
		}
	}
}

// TestParallelReadGivesWhatOneReaderGives: cut into chunks read at once,
// a log gives the lines one logReader gives, in its order, and stops at
// the same damaged line with the same error, whatever the chunks' size
// and wherever their boundaries fall (after a newline, on one, inside a
// line, inside blank lines, inside a line longer than several chunks).
func TestParallelReadGivesWhatOneReaderGives(t *testing.T) {
	rec := func(idx int) string { return fmt.Sprintf(`{"_idx":%d,"output":{"t":"ab\"c"}}`+"\n", idx) }
	failed := func(idx int) string {
		return fmt.Sprintf(`{"_idx":%d,"error":"HTTP 500","class":"retryable"}`+"\n", idx)
	}
	cases := []struct {
		name   string
		log    string
		from   int64 // a line's start
		lineNo int   // lines before from
	}{
		{"one line, shorter than a chunk", rec(0), 0, 0},
		{"several lines", rec(0) + failed(1) + rec(2) + rec(3), 0, 0},
		{"empty", "", 0, 0},
		{"the same idx twice, the later failed", rec(1) + rec(2) + failed(1) + rec(3), 0, 0},
		{"blank lines and blank space", "\n" + rec(0) + "\n\n  \t" + rec(1) + " \r\n" + rec(2) + "\n", 0, 0},
		{"a line longer than many chunks", rec(0) + `{"_idx":1,"output":"` + strings.Repeat("x", 300) + `"}` + "\n" + rec(2), 0, 0},
		{"a damaged line after others", rec(0) + rec(1) + "hello\n" + rec(3), 0, 0},
		{"a damaged line first", `{"_idx":"1"}` + "\n" + rec(1), 0, 0},
		{"a line with no _idx after blank lines", rec(0) + "\n\n" + `{"id":"x"}` + "\n" + rec(3), 0, 0},
		{"the last line torn", rec(0) + rec(1) + `{"_idx":2,"out`, 0, 0},
		{"the last line without its newline", rec(0) + rec(1) + `{"_idx":2}`, 0, 0},
		{"read from past an index's lines", rec(0) + rec(1) + rec(2) + "x\n" + rec(4), int64(2 * len(rec(0))), 2},
		{"lines the fast path declines", `{ "_idx" : 0 }` + "\n" + `{"_i\"dx":1,"_idx":1}` + "\n" + rec(2), 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sameRead(t, []byte(c.log), c.from, c.lineNo)
		})
	}
}

// TestParallelReadNamesADamagedLineInALaterChunk: a damaged line the
// second worker finds is reported by its line number in the whole log
// and its offset, after every line before it, and no line after it.
func TestParallelReadNamesADamagedLineInALaterChunk(t *testing.T) {
	var log bytes.Buffer
	for i := range 40 {
		fmt.Fprintf(&log, `{"_idx":%d}`+"\n", i)
	}
	badAt := log.Len()
	log.WriteString(`{"_idx":40,"out` + "\n")
	for i := 41; i < 80; i++ {
		fmt.Fprintf(&log, `{"_idx":%d}`+"\n", i)
	}
	f := logFile(t, log.Bytes())
	// Chunks of a third of the log: the damaged line is in the second.
	chunk := int64(log.Len() / 3)
	if badAt < int(chunk) || badAt >= int(2*chunk) {
		t.Fatalf("the damaged line at byte %d is not in the second chunk of %d bytes", badAt, chunk)
	}
	lines, err := readChunked(t.Context(), f, 0, int64(log.Len()), 0, chunk, 2)
	ce, ok := errors.AsType[*CorruptError](err)
	if !ok {
		t.Fatalf("read of a log whose line 41 is damaged: %v, want a *CorruptError", err)
	}
	if ce.Line != 41 || ce.Offset != int64(badAt) {
		t.Errorf("the damaged line is named as line %d at byte %d, want line 41 at byte %d", ce.Line, ce.Offset, badAt)
	}
	if len(lines) != 40 || lines[39].idx != 39 {
		t.Errorf("before the error the read gave %d lines, want the 40 before the damaged one", len(lines))
	}
}

// TestParallelReadGivesTheLaterLineOfAnIdxLast: of two lines of one idx
// in different chunks (a retried item), the later is given last, so it
// is the one Outcomes and the index keep.
func TestParallelReadGivesTheLaterLineOfAnIdxLast(t *testing.T) {
	var log bytes.Buffer
	fmt.Fprintf(&log, `{"_idx":7,"error":"HTTP 500","class":"retryable"}`+"\n")
	for i := range 30 {
		fmt.Fprintf(&log, `{"_idx":%d}`+"\n", 100+i)
	}
	laterAt := log.Len()
	fmt.Fprintf(&log, `{"_idx":7,"output":"ok"}`+"\n")
	f := logFile(t, log.Bytes())
	for workers := 1; workers <= 4; workers++ {
		lines, err := readChunked(t.Context(), f, 0, int64(log.Len()), 0, 64, workers)
		if err != nil {
			t.Fatal(err)
		}
		latest := map[int]indexEntry{}
		for _, e := range lines {
			latest[e.idx] = e
		}
		if e := latest[7]; e.failed || e.start != int64(laterAt) {
			t.Errorf("%d workers: idx 7's latest line is %+v, want the succeeded one at byte %d", workers, e, laterAt)
		}
	}
}

// TestParallelReadStopsWhenCanceled: a canceled read returns the
// context's error, its workers stopped.
func TestParallelReadStopsWhenCanceled(t *testing.T) {
	log := bytes.Repeat([]byte(`{"_idx":1}`+"\n"), 1000)
	f := logFile(t, log)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := readChunked(ctx, f, 0, int64(len(log)), 0, 100, 2); !errors.Is(err, context.Canceled) {
		t.Fatalf("read under a canceled context: %v, want context.Canceled", err)
	}
}

// FuzzParallelRead: a log read in chunks gives what one logReader gives
// (the lines, their order, the error that stops it), whatever the log,
// the chunks' size and the workers.
func FuzzParallelRead(f *testing.F) {
	for _, seed := range []string{
		`{"_idx":1,"error":"x","class":"unknown","o":{"a":["\"",1]}}` + "\n" + `{"_idx":1}` + "\n",
		`{"_idx":2,"class":"unknown"}` + "\n" + `{"_idx":3,"class":"unknownx"}`,
		"  {\"_idx\" : 3 , \"error\":\"\\\"\"}  \r\n\n" + `{"_i\"dx":1}` + "\n",
		`{"_idx":4}` + "\n" + `{"_idx":12a}` + "\n" + `{"_idx":5}` + "\n",
		`{"_idx":4}` + "\n" + `{"_idx":5,"out`,
	} {
		f.Add([]byte(seed), uint16(7), uint8(2))
	}
	f.Fuzz(func(t *testing.T, data []byte, chunk uint16, workers uint8) {
		file := logFile(t, data)
		to := int64(len(data))
		want, wantErr := readOnce(file, 0, to, 0)
		got, err := readChunked(t.Context(), file, 0, to, 0, int64(chunk%512)+1, int(workers%4)+1)
		if fmt.Sprint(got) != fmt.Sprint(want) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
			t.Fatalf("chunks of %d bytes, %d workers:\n got %v, %v\nwant %v, %v", chunk%512+1, workers%4+1, got, err, want, wantErr)
		}
	})
}
