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
// with dst unchanged, and an empty one is null. Whatever scanJSON is sure
// of is valid, and compact already when it saw no blank space; both ways
// of compacting agree with json.Compact.
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
		if valid, _ := scanJSON(raw); valid {
			t.Fatalf("%q, which json.Valid refuses: scanJSON is sure of it", raw)
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
	for name, compact := range map[string]func([]byte, []byte) []byte{"appendCompacted": appendCompacted, "appendCompactedBytes": appendCompactedBytes} {
		if got := compact(nil, raw); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%q: %s makes it %q, json.Compact %q", raw, name, got, want.Bytes())
		}
	}
	if valid, blank := scanJSON(raw); valid && blank == bytes.Equal(raw, want.Bytes()) {
		t.Fatalf("%q: scanJSON is sure of it and saw blank space %v, but json.Compact makes it %q", raw, blank, want.Bytes())
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

// TestScanJSONIsSureOfWhatEncodingJSONAndPythonWrite: scanJSON takes a
// field json.Marshal wrote (escapes and unicode included) as valid and
// compact, so appendRaw copies it whole; blank space between tokens, as
// Python's json.dumps or an indented input has, it takes as valid and
// blank, to be compacted; deep nesting it leaves to json.Valid.
func TestScanJSONIsSureOfWhatEncodingJSONAndPythonWrite(t *testing.T) {
	marshaled, err := json.Marshal(map[string]any{
		"text": strings.Repeat("lorem ipsum ", 165), "quote": `a "b" \ c` + "\n\t\x01", "html": "<&>",
		"u": "héllo \u2028 😀", "n": []any{0, -1, 1.5e300, 1e-300, true, false, nil}, "o": map[string]any{},
	})
	if err != nil {
		t.Fatal(err)
	}
	indented, err := json.MarshalIndent(json.RawMessage(marshaled), " ", "\t")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		raw          string
		valid, blank bool
	}{
		{string(marshaled), true, false},
		{`{"text":"` + strings.Repeat(`a\"b\\c\n`, 300) + `"}`, true, false},
		{`-0.5e+10`, true, false},
		{strings.Repeat("[", 64) + strings.Repeat("]", 64), true, false},
		{strings.Repeat("[", 66) + strings.Repeat("]", 66), false, false},
		{`{"text": "a b", "n": [1, 2.5, {"k": null}]}`, true, true},
		{string(indented), true, true},
		{" \r\n\t1 \r\n\t", true, true},
		{`{"a" : 1 , "b" :[ ] }`, true, true},
		{"\"a\tb\"", false, false},
		{`{"a": 1,}`, false, true},
	} {
		if valid, blank := scanJSON([]byte(tc.raw)); valid != tc.valid || valid && blank != tc.blank {
			t.Errorf("scanJSON(%.60q) = %v, %v; want %v, %v", tc.raw, valid, blank, tc.valid, tc.blank)
		}
		checkAppendRaw(t, []byte(tc.raw))
	}
}
