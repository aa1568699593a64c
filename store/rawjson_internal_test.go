package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// rawSeeds are raw fields at the edges of what appendRaw must judge:
// blank space, escapes, unicode and bytes that are not UTF-8, control
// bytes, deep nesting, and numbers at and past the grammar's edges.
var rawSeeds = []string{
	`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`,
	`{"n":1}`, `"s"`, `0`, `-0`, `-0.0e-0`, `1e400`, `-1E+400`, `1.5e-7`,
	`01`, `-`, `1.`, `.5`, `1e`, `1e+`, `+1`, `0x1`, `1.e5`, `-01`, `00`,
	`true`, `false`, `null`, `tru`, `nul`, `truex`, `nullnull`, `[]`, `{}`,
	` 1`, `1 `, "\t{ \"pretty\" :\n  [ 1 ,\n 2 ] }\n", `{"a" :1}`, `[1, 2]`, `"a b"`,
	`"\"\\\/\b\f\n\r\t"`, `"\u00e9\uD83D\uDE00"`, `"\u12"`, `"\u12g4"`, `"\x"`, `"\`, `"\\"`, `"\\\"`,
	`"héllo wörld ☃ 😀"`, "\"\xff\xfe\"", "\"\xc3\"", "\"a\x00b\"", "\"a\x1fb\"", "\"a\x7fb\"", "\"tab\there\"", "\"\xe2\x80\xa8 <&>\"",
	`{"a":"}"}`, `[1,{"a":"]"}]`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a"}`, `{"a":}`, `{1:2}`, `{"a":1"b":2}`,
	`[1]]`, `{"a":1}}`, `[[`, `"unterminated`, `{"a":"b\"}`, `"a"b"`, "1\n", "\"a\"\r\n",
	strings.Repeat("[", 64) + strings.Repeat("]", 64),
	strings.Repeat("[", 65) + strings.Repeat("]", 65),
	strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200),
	strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
	strings.Repeat("[", 100) + strings.Repeat("]", 99),
}

// FuzzAppendRaw: appendRaw takes exactly what json.Valid takes, and
// writes what json.Compact writes for it; an invalid field is refused
// with dst unchanged, and an empty one is null. Whatever compactJSON, the
// fast path, is sure of is valid and already compact.
func FuzzAppendRaw(f *testing.F) {
	for _, s := range rawSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkAppendRaw(t, raw)
	})
}

func checkAppendRaw(t *testing.T, raw []byte) {
	t.Helper()
	got, err := appendRaw([]byte("kept"), "output", raw)
	switch {
	case len(raw) == 0:
		if err != nil || string(got) != "keptnull" {
			t.Fatalf("empty field: got %q, %v; want null", got, err)
		}
		return
	case !json.Valid(raw):
		if err == nil || !errors.Is(err, errInvalidRaw) || string(got) != "kept" {
			t.Fatalf("%q, which json.Valid refuses: got %q, %v; want dst unchanged and errInvalidRaw", raw, got, err)
		}
		if compactJSON(raw) {
			t.Fatalf("%q, which json.Valid refuses: compactJSON is sure of it", raw)
		}
		return
	}
	var want bytes.Buffer
	if err := json.Compact(&want, raw); err != nil {
		t.Fatalf("%q: json.Valid takes it, json.Compact refuses it: %v", raw, err)
	}
	if err != nil || string(got) != "kept"+want.String() {
		t.Fatalf("%q: got %q, %v; want %q", raw, got, err, "kept"+want.String())
	}
	if compactJSON(raw) && !bytes.Equal(raw, want.Bytes()) {
		t.Fatalf("%q: compactJSON is sure of it, but json.Compact makes it %q", raw, want.Bytes())
	}
}

// TestAppendRawAgreesWithEncodingJSON runs FuzzAppendRaw's check over its
// seeds, and over each seed within an object, an array and a string.
func TestAppendRawAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range rawSeeds {
		for _, raw := range []string{s, `{"k":` + s + `}`, `[` + s + `,` + s + `]`, `"` + s + `"`} {
			checkAppendRaw(t, []byte(raw))
		}
	}
}

// TestCompactJSONIsSureOfWhatEncodingJSONWrites: the fast path takes a
// compact field json.Marshal wrote, escapes and unicode included, and
// leaves what needs compacting (or deep nesting) to the slow one.
func TestCompactJSONIsSureOfWhatEncodingJSONWrites(t *testing.T) {
	marshaled, err := json.Marshal(map[string]any{
		"text": strings.Repeat("lorem ipsum ", 165), "quote": `a "b" \ c` + "\n\t\x01", "html": "<&>",
		"u": "héllo \u2028 😀", "n": []any{0, -1, 1.5e300, 1e-300, true, false, nil}, "o": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw  string
		sure bool
	}{
		{string(marshaled), true},
		{`{"text":"` + strings.Repeat(`a\"b\\c\n`, 300) + `"}`, true},
		{`-0.5e+10`, true},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), true},
		{strings.Repeat("[", 66) + strings.Repeat("]", 66), false},
		{`{"a": 1}`, false},
		{"[1,\n2]", false},
	} {
		if got := compactJSON([]byte(tc.raw)); got != tc.sure {
			t.Errorf("compactJSON(%.60q) = %v, want %v", tc.raw, got, tc.sure)
		}
		checkAppendRaw(t, []byte(tc.raw))
	}
}
