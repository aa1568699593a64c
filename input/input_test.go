package input

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// got is one Next result, flattened for comparison.
type got struct {
	Idx    int
	ID     string
	Fields map[string]any
	Raw    string
	Err    string // the LineError's text, "" for a good item
}

// readAll reads every item of data until io.EOF, failing the test on any
// error that is not a *LineError.
func readAll(t *testing.T, data string, f Format) []got {
	t.Helper()
	r := NewReader(strings.NewReader(data), "in."+string(f), f)
	var out []got
	for {
		item, err := r.Next()
		if err == io.EOF {
			return out
		}
		g := got{Idx: item.Idx, ID: item.ID, Fields: item.Fields, Raw: string(item.Raw)}
		if err != nil {
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("Next: got a non-line error %v", err)
			}
			if le.Idx != item.Idx {
				t.Errorf("LineError.Idx = %d, but the item's Idx is %d", le.Idx, item.Idx)
			}
			g.Err = err.Error()
		}
		if !json.Valid(item.Raw) {
			t.Errorf("item %d: Raw is not valid JSON: %q", item.Idx, item.Raw)
		}
		out = append(out, g)
		if len(out) > 1000 {
			t.Fatal("Next never returned io.EOF")
		}
	}
}

func TestReaderReadsItems(t *testing.T) {
	type m = map[string]any
	tests := []struct {
		name   string
		format Format
		data   string
		want   []got
	}{
		{
			name:   "jsonl objects in order with ids and exact numbers",
			format: JSONL,
			data:   "{\"id\": \"a\", \"n\": 1}\n{\"id\": 7, \"n\": 12345678901234567890}\n",
			want: []got{
				{Idx: 0, ID: "a", Fields: m{"id": "a", "n": json.Number("1")}, Raw: `{"id": "a", "n": 1}`},
				{Idx: 1, ID: "7", Fields: m{"id": json.Number("7"), "n": json.Number("12345678901234567890")}, Raw: `{"id": 7, "n": 12345678901234567890}`},
			},
		},
		{
			name:   "jsonl id that is neither string nor number is no id",
			format: JSONL,
			data:   `{"id": true}`,
			want:   []got{{Idx: 0, Fields: m{"id": true}, Raw: `{"id": true}`}},
		},
		{
			name:   "jsonl with CRLF, BOM and no trailing newline",
			format: JSONL,
			data:   "\uFEFF{\"a\":1}\r\n{\"a\":2}",
			want: []got{
				{Idx: 0, Fields: m{"a": json.Number("1")}, Raw: `{"a":1}`},
				{Idx: 1, Fields: m{"a": json.Number("2")}, Raw: `{"a":2}`},
			},
		},
		{
			name:   "blank lines take no idx",
			format: JSONL,
			data:   "\n  \t\n{\"a\":1}\n\r\n\n{\"a\":2}\n\n",
			want: []got{
				{Idx: 0, Fields: m{"a": json.Number("1")}, Raw: `{"a":1}`},
				{Idx: 1, Fields: m{"a": json.Number("2")}, Raw: `{"a":2}`},
			},
		},
		{
			name:   "bad JSON takes an idx and names its physical line",
			format: JSONL,
			data:   "{\"a\":1}\n\n{\"a\":\n{\"a\":3}\n",
			want: []got{
				{Idx: 0, Fields: m{"a": json.Number("1")}, Raw: `{"a":1}`},
				{Idx: 1, Raw: `"{\"a\":"`, Err: "in.jsonl:3: invalid JSON: unexpected end of JSON input"},
				{Idx: 2, Fields: m{"a": json.Number("3")}, Raw: `{"a":3}`},
			},
		},
		{
			name:   "two values on one line are bad JSON",
			format: JSONL,
			data:   `{"a":1} {"b":2}`,
			want:   []got{{Idx: 0, Raw: `"{\"a\":1} {\"b\":2}"`, Err: `in.jsonl:1: invalid JSON: invalid character '{' after top-level value`}},
		},
		{
			name:   "non-object JSON is a bad line",
			format: JSONL,
			data:   "[1,2]\n42\n\"s\"\nnull\n",
			want: []got{
				{Idx: 0, Raw: `"[1,2]"`, Err: "in.jsonl:1: not a JSON object (got array)"},
				{Idx: 1, Raw: `"42"`, Err: "in.jsonl:2: not a JSON object (got number)"},
				{Idx: 2, Raw: `"\"s\""`, Err: "in.jsonl:3: not a JSON object (got string)"},
				{Idx: 3, Raw: `"null"`, Err: "in.jsonl:4: not a JSON object (got null)"},
			},
		},
		{
			name:   "invalid UTF-8 is a bad line",
			format: JSONL,
			data:   "{\"a\":\"\xff\"}\n{\"a\":1}\n",
			want: []got{
				{Idx: 0, Raw: `"{\"a\":\"\ufffd\"}"`, Err: "in.jsonl:1: invalid UTF-8"},
				{Idx: 1, Fields: m{"a": json.Number("1")}, Raw: `{"a":1}`},
			},
		},
		{
			name:   "empty file has no items",
			format: JSONL,
			data:   "",
		},
		{
			name:   "txt lines become text fields",
			format: TXT,
			data:   "\uFEFFhello \"world\"\r\n\n  indented\ttab\nlast",
			want: []got{
				{Idx: 0, Fields: m{"text": `hello "world"`}, Raw: `{"text":"hello \"world\""}`},
				{Idx: 1, Fields: m{"text": "  indented\ttab"}, Raw: `{"text":"  indented\ttab"}`},
				{Idx: 2, Fields: m{"text": "last"}, Raw: `{"text":"last"}`},
			},
		},
		{
			name:   "csv rows keyed by header, in header order in Raw",
			format: CSV,
			data:   "\uFEFFid,word,n\r\n1,hola,3\r\n\r\n2,\"a, b\",4\r\n",
			want: []got{
				{Idx: 0, ID: "1", Fields: m{"id": "1", "word": "hola", "n": "3"}, Raw: `{"id":"1","word":"hola","n":"3"}`},
				{Idx: 1, ID: "2", Fields: m{"id": "2", "word": "a, b", "n": "4"}, Raw: `{"id":"2","word":"a, b","n":"4"}`},
			},
		},
		{
			name:   "csv quoted fields span lines and errors name the record's first line",
			format: CSV,
			data:   "text,n\n\"two\nlines\",1\n\"three\n\nlines\",2\nshort\n",
			want: []got{
				{Idx: 0, Fields: m{"text": "two\nlines", "n": "1"}, Raw: `{"text":"two\nlines","n":"1"}`},
				{Idx: 1, Fields: m{"text": "three\n\nlines", "n": "2"}, Raw: `{"text":"three\n\nlines","n":"2"}`},
				{Idx: 2, Raw: `"short"`, Err: "in.csv:7: wrong number of fields: got 1, want 2"},
			},
		},
		{
			name:   "csv wrong field count is a bad line and reading goes on",
			format: CSV,
			data:   "a,b\n1,2,3\n   \n4,5\n",
			want: []got{
				{Idx: 0, Raw: `"1,2,3"`, Err: "in.csv:2: wrong number of fields: got 3, want 2"},
				{Idx: 1, Fields: m{"a": "4", "b": "5"}, Raw: `{"a":"4","b":"5"}`},
			},
		},
		{
			name:   "csv bare quote is a bad line and reading goes on",
			format: CSV,
			data:   "a,b\n1,x\"y\n4,5\n",
			want: []got{
				{Idx: 0, Raw: `""`, Err: `in.csv:2: bare " in non-quoted-field`},
				{Idx: 1, Fields: m{"a": "4", "b": "5"}, Raw: `{"a":"4","b":"5"}`},
			},
		},
		{
			name:   "csv invalid UTF-8 is a bad line",
			format: CSV,
			data:   "a\n\xfe\nok\n",
			want: []got{
				{Idx: 0, Raw: `"\ufffd"`, Err: "in.csv:2: invalid UTF-8"},
				{Idx: 1, Fields: m{"a": "ok"}, Raw: `{"a":"ok"}`},
			},
		},
		{
			name:   "csv with only a header has no items",
			format: CSV,
			data:   "a,b",
		},
		{
			name:   "empty csv has no items",
			format: CSV,
			data:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := readAll(t, tt.data, tt.format)
			if len(out) != len(tt.want) {
				t.Fatalf("got %d items, want %d:\n got %+v\nwant %+v", len(out), len(tt.want), out, tt.want)
			}
			for i := range out {
				if !reflect.DeepEqual(out[i], tt.want[i]) {
					t.Errorf("item %d:\n got %+v\nwant %+v", i, out[i], tt.want[i])
				}
			}
		})
	}
}

func TestBadCSVHeaderFailsTheRead(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"duplicate column", "a,b,a\n1,2,3\n", `in.csv:1: bad header: duplicate column "a"`},
		{"invalid UTF-8", "a,\xff\n1,2\n", "in.csv:1: bad header: invalid UTF-8"},
		{"bare quote", "a,b\"c\n", `in.csv:1: bad header: bare " in non-quoted-field`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewReader(strings.NewReader(tt.data), "in.csv", CSV).Next()
			var le *LineError
			if !errors.As(err, &le) || le.Idx != -1 {
				t.Fatalf("Next() error = %v, want a *LineError with Idx -1", err)
			}
			if err.Error() != tt.want {
				t.Errorf("error = %q, want %q", err, tt.want)
			}
		})
	}
}

func TestTenMegabyteLineIsRead(t *testing.T) {
	long := strings.Repeat("x", 10<<20)
	data := `{"a":1}` + "\n" + `{"big":"` + long + `"}` + "\n" + `{"a":3}` + "\n"
	out := readAll(t, data, JSONL)
	if len(out) != 3 {
		t.Fatalf("got %d items, want 3", len(out))
	}
	if out[1].Err != "" {
		t.Fatalf("the 10 MB line is bad: %s", out[1].Err)
	}
	if s, _ := out[1].Fields["big"].(string); s != long {
		t.Errorf("the 10 MB field has %d bytes, want %d", len(s), len(long))
	}
	if out[2].Idx != 2 || out[2].Fields["a"] != json.Number("3") {
		t.Errorf("the line after the long one reads as %+v", out[2])
	}
}

func TestLineOverTheCapIsABadLine(t *testing.T) {
	for _, f := range []Format{JSONL, TXT, CSV} {
		t.Run(string(f), func(t *testing.T) {
			header, short, wantLine := "", `{"a":1}`, 2
			if f == CSV {
				header, short, wantLine = "text\n", "plain", 3
			}
			// The long line spans several bufio buffers; the short lines
			// around it fit in one.
			long := `"` + strings.Repeat("y", 3*readBufferSize) + `"`
			data := header + short + "\n" + long + "\n" + short + "\n"
			r := NewReader(strings.NewReader(data), "in."+string(f), f)
			r.maxLine = readBufferSize
			var errs []error
			n := 0
			for {
				item, err := r.Next()
				if err == io.EOF {
					break
				}
				if item.Idx != n {
					t.Errorf("item %d has Idx %d", n, item.Idx)
				}
				if !json.Valid(item.Raw) || len(item.Raw) > rawPrefixBytes+16 {
					t.Errorf("item %d: Raw is %d bytes (valid JSON: %v), want a short JSON prefix", n, len(item.Raw), json.Valid(item.Raw))
				}
				errs = append(errs, err)
				n++
			}
			if n != 3 {
				t.Fatalf("got %d items, want 3", n)
			}
			var le *LineError
			if !errors.As(errs[1], &le) || !errors.Is(errs[1], ErrLineTooLong) {
				t.Fatalf("the long line's error is %v, want a *LineError wrapping ErrLineTooLong", errs[1])
			}
			if le.Line != wantLine {
				t.Errorf("the long line is reported on line %d, want %d", le.Line, wantLine)
			}
			if errs[0] != nil || errs[2] != nil {
				t.Errorf("the short lines around the long one failed: %v, %v", errs[0], errs[2])
			}
		})
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path string
		want Format
		ok   bool
	}{
		{"units.jsonl", JSONL, true},
		{"dir/units.NDJSON", JSONL, true},
		{"rows.csv", CSV, true},
		{"lines.txt", TXT, true},
		{"units.json", "", false},
		{"noext", "", false},
	}
	for _, tt := range tests {
		f, err := FormatOf(tt.path)
		if f != tt.want || (err == nil) != tt.ok {
			t.Errorf("FormatOf(%q) = %q, %v; want %q, ok=%v", tt.path, f, err, tt.want, tt.ok)
		}
	}
}

func TestScanCountsHashesAndCollectsBadLines(t *testing.T) {
	var b strings.Builder
	for i := range 30 {
		if i%2 == 0 {
			b.WriteString("{\"i\": 1}\n\n")
		} else {
			b.WriteString("not json\n")
		}
	}
	data := b.String()
	path := filepath.Join(t.TempDir(), "units.jsonl")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Scan(t.Context(), path, JSONL, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(data))
	if s.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("SHA256 = %s, want the hash of the file's bytes %x", s.SHA256, sum)
	}
	if s.Items != 30 || s.BadCount != 15 || len(s.BadLines) != 15 {
		t.Errorf("Items=%d BadCount=%d len(BadLines)=%d, want 30, 15, 15", s.Items, s.BadCount, len(s.BadLines))
	}
	if le := s.BadLines[0]; le.Line != 3 || le.Idx != 1 || le.Path != path {
		t.Errorf("first bad line = %+v, want line 3, idx 1, path %s", le, path)
	}
}

func TestScanKeepsOnlyTheFirstTwentyBadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lines.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("[]\n"), 25), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := Scan(t.Context(), path, JSONL, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Items != 25 || s.BadCount != 25 || len(s.BadLines) != 20 {
		t.Errorf("Items=%d BadCount=%d len(BadLines)=%d, want 25, 25, 20", s.Items, s.BadCount, len(s.BadLines))
	}
}

func TestOpenReadsAFileAndReportsAMissingOne(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "rows.csv")
	if err := os.WriteFile(path, []byte("id,x\nk1,v\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Open(path, CSV)
	if err != nil {
		t.Fatal(err)
	}
	item, err := r.Next()
	if err != nil || item.ID != "k1" {
		t.Errorf("Next() = %+v, %v; want the item with id k1", item, err)
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("second Next() error = %v, want io.EOF", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.csv"), CSV); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Open of a missing file: error %v, want os.ErrNotExist", err)
	}
	if _, err := Open(path, "xml"); err == nil {
		t.Error("Open with an unknown format succeeded")
	}
}

func BenchmarkReadJSONL(b *testing.B) {
	var buf bytes.Buffer
	const lines = 10000
	for i := range lines {
		buf.WriteString(`{"id": "unit_`)
		buf.WriteString(strings.Repeat("7", i%5+1))
		buf.WriteString(`", "simplified": "辆", "pinyin": "liàng", "level": 3}` + "\n")
	}
	data := buf.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		r := NewReader(bytes.NewReader(data), "bench.jsonl", JSONL)
		n := 0
		for {
			_, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			n++
		}
		if n != lines {
			b.Fatalf("read %d items, want %d", n, lines)
		}
	}
}

// TestLineLocatesEachItemInTheFile: Line is the physical line an item
// starts on, past a CSV header, blank lines and bad lines, so a message
// about an item can point into the file.
func TestLineLocatesEachItemInTheFile(t *testing.T) {
	cases := []struct {
		name  string
		data  string
		f     Format
		lines []int
	}{
		{"jsonl with blank and bad lines", "{\"a\":1}\n\n{oops\n{\"a\":2}\n", JSONL, []int{1, 3, 4}},
		{"csv after its header", "a,b\n1,2\n\n3,4\n", CSV, []int{2, 4}},
		{"txt", "x\n\ny\n", TXT, []int{1, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(strings.NewReader(c.data), "in."+string(c.f), c.f)
			var lines []int
			for {
				_, err := r.Next()
				if err == io.EOF {
					break
				}
				lines = append(lines, r.Line())
			}
			if !reflect.DeepEqual(lines, c.lines) {
				t.Errorf("lines %v, want %v", lines, c.lines)
			}
		})
	}
}
