package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readLines reads every line of data with a logReader and returns what it
// said of each, the end included.
func readLines(r io.Reader) []string { return readLinesBuf(r, 64<<10) }

// readLinesBuf is readLines through a buffer of size bytes.
func readLinesBuf(r io.Reader, size int) []string {
	lr := newLogReaderBuf(r, "results.jsonl", 0, make([]byte, size))
	var out []string
	for {
		li, err := lr.next()
		out = append(out, fmt.Sprintf("%+v %v torn=%d", li, err, lr.tornAt))
		if errors.Is(err, io.EOF) || err != nil && !strings.Contains(err.Error(), "not a tenax record") {
			return out
		}
	}
}

// FuzzLogReader: the scanner says the same of a log whether it reads it at
// once, a byte at a time (a state carried across the buffer's end) or
// through buffers shorter than its lines (a line cut by the buffer's end
// moved to its start and read on), and of a line that is valid JSON it
// reads the _idx encoding/json reads.
func FuzzLogReader(f *testing.F) {
	for _, seed := range []string{
		`{"_idx":1,"error":"x","class":"unknown","o":{"a":["\"",1]}}` + "\n",
		`{"_idx":2,"class":"unknown"}` + "\n" + `{"_idx":3,"class":"unknownx"}`,
		`{"_idx":-1}` + "\n",
		`{"_idx":"1"}` + "\n" + `{"_idx":2}`,
		"  {\"_idx\" : 3 , \"error\":\"\\\"\"}  \r\n\n" + `{"_i\"dx":1}` + "\n",
		`{"_idx":12a}` + "\n",
		`{"_idx":5,"out`,
		`{"o":[{"s":"}\\"]"}],"_idx":99999999999}` + "\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		whole := readLines(bytes.NewReader(data))
		bytewise := readLines(iotest.OneByteReader(bytes.NewReader(data)))
		if strings.Join(whole, "\n") != strings.Join(bytewise, "\n") {
			t.Fatalf("read at once:\n%s\nread a byte at a time:\n%s", strings.Join(whole, "\n"), strings.Join(bytewise, "\n"))
		}
		for _, size := range []int{1, 7, 40} {
			short := readLinesBuf(iotest.HalfReader(bytes.NewReader(data)), size)
			if strings.Join(whole, "\n") != strings.Join(short, "\n") {
				t.Fatalf("read at once:\n%s\nread through %d bytes:\n%s", strings.Join(whole, "\n"), size, strings.Join(short, "\n"))
			}
		}
		lr := newLogReader(bytes.NewReader(data), "results.jsonl", 0)
		for {
			li, err := lr.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				if !strings.Contains(err.Error(), "not a tenax record") {
					t.Fatal(err)
				}
				continue
			}
			line := data[li.start:li.end]
			var rec struct {
				Idx *int `json:"_idx"`
			}
			if json.Valid(line) && bytes.Count(line, []byte(`"_idx"`)) == 1 {
				if err := json.Unmarshal(line, &rec); err != nil || rec.Idx == nil || *rec.Idx != li.idx {
					t.Fatalf("line %q: the scanner read _idx %d, encoding/json %v (%v)", line, li.idx, rec.Idx, err)
				}
			}
		}
	})
}

// TestALineCutByTheBufferIsReadByTheFastPath: the line a buffer's end
// cuts in two went to the byte-at-a-time scanner and was then decoded
// with encoding/json, which allocates: one line in every buffer a resume
// read, a tenth of its scan's CPU. It is moved to the buffer's start and
// read on, so reading lines of every length through a buffer a few lines
// long allocates nothing, and says of each what the slow path says.
func TestALineCutByTheBufferIsReadByTheFastPath(t *testing.T) {
	var log []byte
	for i := range 50 {
		log = fmt.Appendf(log, `{"_idx":%d,"error":%q,"class":"item","output":{"a":[%q]}}`+"\n", i, strings.Repeat("e", i*7%23), strings.Repeat("o", i*13%61))
	}
	buf := make([]byte, 300)
	src := bytes.NewReader(log)
	lr := &logReader{}
	var got []lineInfo
	allocs := testing.AllocsPerRun(10, func() {
		src.Reset(log)
		*lr = *newLogReaderBuf(src, resultsFile, 0, buf)
		got = got[:0]
		for {
			line, err := lr.next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) < cap(got) {
				got = append(got, line)
			}
		}
	})
	if allocs > 0 {
		t.Errorf("reading 50 lines through a buffer of 300 bytes allocates %.0f times, want 0: a line the buffer cuts left the fast path", allocs)
	}
	got = make([]lineInfo, 0, 50)
	src.Reset(log)
	*lr = *newLogReaderBuf(src, resultsFile, 0, buf)
	for {
		line, err := lr.next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, line)
	}
	slow := newLogReader(bytes.NewReader(log), resultsFile, 0)
	slow.slow = true
	for i, g := range got {
		want, err := slow.next()
		if err != nil || g != want {
			t.Fatalf("line %d through 300 bytes: %+v, the byte-at-a-time scanner: %+v (%v)", i, g, want, err)
		}
	}
	if len(got) != 50 {
		t.Fatalf("read %d lines of 50", len(got))
	}
}

// TestReadingALineDoesNotAllocate: the byte scanner's state of a line
// escaped to the heap, one allocation per line read (a million for a
// resume of a million records), the fast path's lines included. A line
// the fast path declines is then decoded (decodeRecord), which allocates
// as encoding/json does: the byte scanner is measured without it.
func TestReadingALineDoesNotAllocate(t *testing.T) {
	lines := map[string]string{
		"fast path":    `{"_idx":1,"error":"x","class":"item","o":{"a":[1]}}`,
		"byte scanner": ` {"_idx" : 1, "error":"x"}`,
	}
	for name, line := range lines {
		t.Run(name, func(t *testing.T) {
			log := bytes.Repeat([]byte(line+"\n"), 200)
			lr := newLogReader(bytes.NewReader(log), "results.jsonl", 0)
			lr.noDecode = name == "byte scanner"
			allocs := testing.AllocsPerRun(100, func() {
				if _, err := lr.next(); err != nil {
					t.Fatal(err)
				}
			})
			if allocs > 0 {
				t.Errorf("reading a line allocates %.2f times, want 0", allocs)
			}
		})
	}
}
