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
func readLines(r io.Reader) []string {
	lr := newLogReader(r, "results.jsonl", 0)
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
// once or a byte at a time (a state carried across the buffer's end), and
// of a line that is valid JSON it reads the _idx encoding/json reads.
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
