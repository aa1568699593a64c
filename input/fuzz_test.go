package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// FuzzNextRawAgreesWithNext reads the same bytes with Next and with
// NextRaw, as JSONL, TXT and CSV: NextRaw must return the same Idx, ID and
// Raw and the same error for every item, and no Fields; Scan's check must
// find the same bad lines.
func FuzzNextRawAgreesWithNext(f *testing.F) {
	f.Add([]byte("{\"id\":\"x\",\"a\":1}\n{\"b\":[1,{\"id\":2}],\"id\":-3.5e2}\n"))
	f.Add([]byte("{\"i\\u0064\":\"\\ud800y\", \"id\" : true}\n{\"id\":\"a\",\"id\":\"b\"}\n[1]\n"))
	f.Add([]byte("id,b\nx,\"y\nz\"\n1,2,3\n"))
	f.Add([]byte("{\"a\":\"\xff\"}\nnot json\n{ \"id\" :\t\"q\\\"}\" }"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, format := range []Format{JSONL, TXT, CSV} {
			full := NewReader(bytes.NewReader(data), "fuzz", format)
			raw := NewReader(bytes.NewReader(data), "fuzz", format)
			check := NewReader(bytes.NewReader(data), "fuzz", format)
			for _, r := range []*Reader{full, raw, check} {
				r.maxLine = 64
			}
			for {
				want, wantErr := full.Next()
				got, gotErr := raw.NextRaw()
				checked, checkErr := check.next(decodeCheck)
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) || fmt.Sprint(checkErr) != fmt.Sprint(wantErr) {
					t.Fatalf("%s: Next says %v, NextRaw %v, the check %v", format, wantErr, gotErr, checkErr)
				}
				if wantErr == io.EOF {
					break
				}
				if got.Idx != want.Idx || got.ID != want.ID || !bytes.Equal(got.Raw, want.Raw) || got.Fields != nil || checked.Idx != want.Idx {
					t.Fatalf("%s: NextRaw gave idx %d id %q raw %q fields %v (the check idx %d); Next idx %d id %q raw %q",
						format, got.Idx, got.ID, got.Raw, got.Fields, checked.Idx, want.Idx, want.ID, want.Raw)
				}
			}
		}
	})
}
