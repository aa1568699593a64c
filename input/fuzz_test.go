package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReadJSONL feeds arbitrary bytes to the JSONL reader: it must never
// panic, must number items 0, 1, 2… with bad lines on increasing physical
// lines, must give every item a Raw that is valid JSON, and must report
// nothing but *LineError before io.EOF.
func FuzzReadJSONL(f *testing.F) {
	f.Add([]byte("{\"a\":1}\n{\"b\":[1,2]}\n"))
	f.Add([]byte("\uFEFF{\"id\":\"x\"}\r\n\r\n[1]\n"))
	f.Add([]byte("{\"a\":\"\xff\"}\nnot json"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := NewReader(bytes.NewReader(data), "fuzz.jsonl", JSONL)
		r.maxLine = 64 // exercise the over-long path too
		lastLine := 0
		for want := 0; ; want++ {
			item, err := r.Next()
			if err == io.EOF {
				return
			}
			if item.Idx != want {
				t.Fatalf("item has Idx %d, want %d", item.Idx, want)
			}
			if !json.Valid(item.Raw) {
				t.Fatalf("item %d: Raw is not valid JSON: %q", item.Idx, item.Raw)
			}
			if err == nil {
				if item.Fields == nil {
					t.Fatalf("item %d: good item without Fields", item.Idx)
				}
				continue
			}
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Next: non-line error %v", err)
			}
			if le.Line <= lastLine || le.Idx != item.Idx {
				t.Fatalf("bad line %+v after line %d for item %d", le, lastLine, item.Idx)
			}
			lastLine = le.Line
		}
	})
}
