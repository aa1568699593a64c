package jsonl

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/store"
)

// TestALineReadOverManyBuffersIsJudgedWhole: a line the fast path
// declines is decoded to be judged, also when the byte scanner read it
// through several fills of its buffer: its parts are kept, and a NUL deep
// in it is damage, as status finds it.
func TestALineReadOverManyBuffersIsJudgedWhole(t *testing.T) {
	long := strings.Repeat("lorem ipsum ", 50)
	for _, tc := range []struct {
		name, line string
		idx        int
		failed     bool
		corrupt    string
	}{
		{name: "a record", line: `{ "_idx": 3, "error": "` + long + `", "class": "item" }`, idx: 3, failed: true},
		{name: "a NUL deep in a string", line: `{ "_idx": 3, "output": "` + long + "\x00" + long + `" }`, corrupt: `invalid character '\x00' in string literal`},
		{name: "a field of the wrong type", line: `{ "_idx": 3, "output": "` + long + `", "attempts": "1" }`, corrupt: "cannot unmarshal string"},
	} {
		for _, size := range []int{7, 64, 1 << 16} {
			log := "{\"_idx\":1}\n" + tc.line + "\n"
			lr := newLogReaderBuf(strings.NewReader(log), "results.jsonl", 0, make([]byte, size))
			if _, err := lr.next(); err != nil {
				t.Fatalf("%s, buffer %d: the first line: %v", tc.name, size, err)
			}
			got, err := lr.next()
			var ce *CorruptError
			switch {
			case tc.corrupt != "":
				if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.corrupt) || ce.Line != 2 || ce.Offset != int64(len("{\"_idx\":1}\n")) {
					t.Errorf("%s, buffer %d: got %+v, %v; want line 2 at byte 11 refused saying %q", tc.name, size, got, err, tc.corrupt)
				}
			case err != nil || got.idx != tc.idx || got.failed != tc.failed:
				t.Errorf("%s, buffer %d: got %+v, %v; want _idx %d failed %v", tc.name, size, got, err, tc.idx, tc.failed)
			}
			if err == nil {
				if _, err := lr.next(); !errors.Is(err, io.EOF) {
					t.Errorf("%s, buffer %d: after the line: %v, want io.EOF", tc.name, size, err)
				}
			}
		}
	}
}

// TestDecodeRecordRefusesWhatTheScannerRefuses: the rule a reader of a
// single line applies (status and export through the index) starts with
// the scanner's reading of the line's shape, so a line without _idx or
// with a negative one is refused there too, not read as idx 0.
func TestDecodeRecordRefusesWhatTheScannerRefuses(t *testing.T) {
	for line, reason := range map[string]string{
		`{"error":"x"}`:                "it has no _idx",
		`{"_idx":-0}`:                  "_idx is negative",
		"{\"_idx\":1,\"o\":\"a\x00\"}": `invalid character '\x00'`,
		"   ":                          "the line is blank",
		`{"_idx":1,"o":{"a":1}`:        "the line ends inside the JSON object",
		`{"_idx":1,"class":"x"}`:       `unknown class "x"`,
	} {
		var rec store.Record
		err := decodeRecord("results.jsonl", 0, 40, bytes.Clone([]byte(line+"\n")), &rec)
		var ce *CorruptError
		if !errors.As(err, &ce) || !strings.Contains(ce.Reason, reason) || ce.Offset != 40 {
			t.Errorf("decodeRecord(%q) = %v, want a CorruptError at byte 40 saying %q", line, err, reason)
		}
	}
}
