package input

import (
	"bytes"
	"encoding/json"
	"io"
	"reflect"
	"strings"
	"testing"
)

// freshFields decodes line as every line was decoded before the decoder
// was kept: a new json.Decoder, numbers as json.Number.
func freshFields(t *testing.T, line string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(strings.TrimSpace(line)))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		t.Fatalf("%q: %v", line, err)
	}
	return fields
}

func TestLinesDecodeAsEachByANewDecoder(t *testing.T) {
	lines := []string{
		`{"word": "w0"}`,
		`{"id": 12, "n": 1.50, "big": 123456789012345678901234567890, "neg": -0}`,
		`not json`,
		`{"nested": {"a": [1, {"b": null}], "c": true}, "s": "l\u2019\u00e9t\u00e9 \"q\"\n"}`,
		`[1, 2]`,
		`{"x": 1} {"y": 2}`,
		`  {"spaced": "out"}   `,
		`{"long": "` + strings.Repeat("z", maxReusedLine) + `"}`,
		`{}`,
		`{"after": "the long one", "日本": "語"}`,
	}
	src := strings.Join(lines, "\n") + "\n"
	r := NewReader(strings.NewReader(src), "in.jsonl", JSONL)
	for i, line := range lines {
		item, err := r.Next()
		if err == io.EOF {
			t.Fatalf("EOF at line %d", i+1)
		}
		if !json.Valid([]byte(line)) || strings.TrimSpace(line)[0] != '{' {
			if err == nil {
				t.Errorf("line %d %q read as an item, want a bad line", i+1, line)
			}
			continue
		}
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if want := freshFields(t, line); !reflect.DeepEqual(item.Fields, want) {
			t.Errorf("line %d decoded as %v, a new decoder gives %v", i+1, item.Fields, want)
		}
	}
	if _, err := r.Next(); err != io.EOF {
		t.Errorf("after the last line: %v, want io.EOF", err)
	}
}

// TestALineAllocatesNoDecoder guards the decoder kept from line to line:
// a new json.Decoder a line was 5 allocations and 900 B more, at every
// item of a run.
func TestALineAllocatesNoDecoder(t *testing.T) {
	if raceEnabled {
		t.Skip("-race instrumentation allocates")
	}
	line := []byte(`{"word": "w0", "id": 12, "text": "a longer piece of text to translate"}` + "\n")
	const n = 200
	r := NewReader(bytes.NewReader(bytes.Repeat(line, n+1)), "in.jsonl", JSONL)
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	// 17 since the decoder is kept (the map, its strings and numbers,
	// the decoding's own, the item's raw copy); 22 with a new decoder.
	const bound = 17
	if got := testing.AllocsPerRun(n-1, func() {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
	}); got > bound {
		t.Errorf("a line allocates %.0f times, want at most %d", got, bound)
	}
}
