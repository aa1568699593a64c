package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// checkFastDecode holds decodeRecord to decodeByRule for line: the same
// error, or the same record; and when fastDecode accepts the line, the
// rule accepts it too and decodes the same record. It reports whether
// fastDecode accepted it.
func checkFastDecode(t *testing.T, line []byte) bool {
	t.Helper()
	var want, got, fast store.Record
	wantErr := decodeByRule("results.jsonl", 1, 0, line, &want)
	gotErr := decodeRecord("results.jsonl", 1, 0, line, &got)
	var ce *CorruptError
	switch {
	case wantErr == nil && gotErr != nil:
		t.Fatalf("line %q: the rule reads it, decodeRecord refuses it: %v", line, gotErr)
	case wantErr != nil && (gotErr == nil || gotErr.Error() != wantErr.Error() || !errors.As(gotErr, &ce)):
		t.Fatalf("line %q: the rule refuses it (%v), decodeRecord says %v", line, wantErr, gotErr)
	case wantErr == nil && !reflect.DeepEqual(got, want):
		t.Fatalf("line %q: decodeRecord read\n%#v\nthe rule\n%#v", line, got, want)
	}
	if !fastDecode(bytes.TrimSuffix(line, []byte("\n")), &fast) {
		return false
	}
	if wantErr != nil {
		t.Fatalf("line %q: fastDecode reads it, the rule refuses it: %v", line, wantErr)
	}
	if !reflect.DeepEqual(fast, want) {
		t.Fatalf("line %q: fastDecode read\n%#v\nthe rule\n%#v", line, fast, want)
	}
	return true
}

// FuzzFastDecode: for any line, decodeRecord gives what decodeByRule, the
// rule as written, gives (the same record, or the same damage), and
// whatever fastDecode accepts the rule accepts and decodes to a record
// reflect.DeepEqual to fastDecode's. testdata/fuzz/FuzzFastDecode holds
// lines with escapes, nulls, nested output, tries, usage, repeated keys
// and keys differing in case.
func FuzzFastDecode(f *testing.F) {
	for _, rec := range []store.Record{resumeJobRecord(1), resumeJobRecord(10), everyField()} {
		line, err := rec.AppendJSON(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkFastDecode(t, line)
	})
}

// resumeJobRecord is a record of bench/cmd/resumejob's log: a 2 KB
// output, or for one idx in ten a 2 KB error.
func resumeJobRecord(i int) store.Record {
	rec := store.Record{
		Idx: i, Input: json.RawMessage(`{"n":1}`), Output: json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`),
		Attempts: 1, GenerationAttempts: 1, DurationMS: 120, FinishedAt: time.Date(2026, 11, 22, 22, 43, 41, 822814173, time.UTC),
	}
	if i%10 == 0 {
		rec.Output, rec.Error, rec.Class = nil, "HTTP 422: "+strings.Repeat("unprocessable ", 140), classify.Item
	}
	return rec
}

// everyField is a record with every field AppendJSON writes set, agent
// aside (fastLine declines one).
func everyField() store.Record {
	cost := 0.00125
	return store.Record{
		Idx: 42, ID: "u-42", Input: json.RawMessage(`{"word":"caf\u00e9","n":[1,2]}`), Output: json.RawMessage(`{"es":"hola \"mundo\""}`),
		Error: "HTTP 429: slow down", Class: classify.Retryable, Retryable: true,
		Attempts: 3, HealAttempts: 1, GenerationAttempts: 4, RateLimited: 2, CacheHit: true,
		FinishReason: "length", Stderr: "line 1\nline 2\ttabbed", Route: "fast", Model: "m-1",
		Tries:  []store.Try{{Route: "cheap", Model: "m-0", Error: "HTTP 503", Class: classify.Retryable, Fallback: "context_window", CallMS: 17}, {Route: "mid", Error: "e"}},
		CallMS: 250, Fingerprint: "fp:abc", TrackedErrors: json.RawMessage(`[{"type":"schema","n":2}]`),
		Usage:   task.Usage{InputTokens: 100, OutputTokens: 20, CachedInputTokens: 50, CacheWriteTokens: 5, ReasoningTokens: 7, Impossible: "prompt_tokens=-1"},
		CostUSD: &cost, DurationMS: 300, FinishedAt: time.Date(2026, 2, 3, 4, 5, 6, 7, time.FixedZone("", 3600)),
	}
}

// TestFastDecodeReadsEachKindOfField: every kind of field a record has,
// as tenax writes it and as a hand may, is read by fastDecode itself and
// read as encoding/json reads it.
func TestFastDecodeReadsEachKindOfField(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"the smallest record", `{"_idx":0}`},
		{"strings", `{"_idx":1,"id":"a","finish_reason":"stop","stderr":"","route":"r","model":"m","fingerprint":"f"}`},
		{"a string with escapes", `{"_idx":1,"error":"a\"b\\c\/d\b\f\n\r\t"}`},
		{"unicode escapes and a surrogate pair", `{"_idx":1,"error":"caf\u00e9 \u4e16 \ud83d\ude00"}`},
		{"a lone surrogate", `{"_idx":1,"id":"\ud800x"}`},
		{"UTF-8 as it is", `{"_idx":1,"id":"café 世界 😀"}`},
		{"bytes that are not UTF-8", "{\"_idx\":1,\"error\":\"a\xffb\xc3\"}"},
		{"raw JSON, nested", `{"_idx":2,"input":[],"output":{"a":[1,{"b":"c\"}"},null,true,false,-1.5]},"tracked_errors":{"x":{}}}`},
		{"raw JSON strings and numbers", `{"_idx":2,"input":"s","output":-0.5,"tracked_errors":7}`},
		{"nulls everywhere", `{"_idx":3,"id":null,"input":null,"output":null,"error":null,"class":null,"retryable":null,"attempts":null,"heal_attempts":null,"cache_hit":null,"usage":null,"tries":null,"cost_usd":null,"finished_at":null,"agent":null,"tracked_errors":null,"call_ms":null}`},
		{"booleans", `{"_idx":4,"retryable":true,"cache_hit":false}`},
		// 18 digits in the int64 fields only: an int of 32 bits (386, arm)
		// holds fewer, and the rule refuses them there.
		{"integers", `{"_idx":5,"attempts":-0,"heal_attempts":2147483647,"generation_attempts":-3,"rate_limited":0,"duration_ms":123456789012345678,"call_ms":-123456789012345678}`},
		{"each class", `{"_idx":6,"class":"canceled","tries":[{"class":"fatal"},{"class":"item"},{"class":"invalid"},{"class":"retryable"},{"class":"unknown"},{"class":""}]}`},
		{"a cost", `{"_idx":7,"cost_usd":0.0012}`},
		{"a negative zero cost", `{"_idx":7,"cost_usd":-0}`},
		{"a cost of many digits", `{"_idx":7,"cost_usd":` + strings.Repeat("9", 300) + `.5}`},
		{"a time in UTC", `{"_idx":8,"finished_at":"2026-11-22T22:43:41.822814173Z"}`},
		{"a time with an offset", `{"_idx":8,"finished_at":"2026-02-28T22:43:41+01:00"}`},
		{"a time without fraction", `{"_idx":8,"finished_at":"0001-01-01T00:00:00Z"}`},
		{"usage", `{"_idx":9,"usage":{"input_tokens":10,"output_tokens":-3,"cached_input_tokens":1,"cache_write_tokens":2,"reasoning_tokens":3,"impossible":"p=\u002d1","other":[1,{"a":"\\"}]}}`},
		{"an empty usage", `{"_idx":9,"usage":{}}`},
		{"empty tries", `{"_idx":10,"tries":[]}`},
		{"tries", `{"_idx":10,"tries":[{"route":"a","model":"m","error":"e\n","class":"fatal","fallback":"escalate","call_ms":5,"x":{"y":"}"}},{"route":null,"error":null},{}]}`},
		{"keys Record has not", `{"_idx":11,"zzz":{"error":"x","_idx":3},"note":"hi","n":1.5,"l":[true]}`},
		{"an empty error and class", `{"_idx":12,"error":"","class":""}`},
		{"the resumejob record", mustLine(t, resumeJobRecord(3))},
		{"the resumejob failure", mustLine(t, resumeJobRecord(30))},
		{"every field", mustLine(t, everyField())},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, line := range []string{tc.line, tc.line + "\n"} {
				if !checkFastDecode(t, []byte(line)) {
					t.Errorf("line %q: fastDecode left it to the rule, want it read fast", line)
				}
			}
		})
	}
}

// TestFastDecodeLeavesToTheRuleWhatItIsNotSureOf: a line fastLine
// declines, and one it takes with a field twice (which encoding/json
// replaces or merges) or a number a float64 cannot hold, is decoded by
// the rule: the same record or the same damage as before.
func TestFastDecodeLeavesToTheRuleWhatItIsNotSureOf(t *testing.T) {
	for _, tc := range []struct{ name, line string }{
		{"a string field twice", `{"_idx":1,"id":"a","id":"b"}`},
		{"raw JSON twice", `{"_idx":1,"output":1,"output":{"a":2}}`},
		{"usage twice, merged", `{"_idx":1,"usage":{"input_tokens":1},"usage":{"output_tokens":2}}`},
		{"tries twice, merged", `{"_idx":1,"tries":[{"route":"a"}],"tries":[{"model":"b"}]}`},
		{"a key twice in usage", `{"_idx":1,"usage":{"input_tokens":1,"input_tokens":2}}`},
		{"a key twice in a try", `{"_idx":1,"tries":[{"error":"a","error":"b"}]}`},
		{"a key differing in case", `{"_idx":1,"error":"x","Error":"y"}`},
		{"a key differing in case alone", `{"_idx":1,"ID":"x"}`},
		{"a key that folds to one of Record's", "{\"_idx\":1,\"\u017ftderr\":\"x\"}"},
		{"an escaped key", `{"_idx":1,"\u0065rror":"x"}`},
		{"an agent", `{"_idx":1,"agent":{"steps":2}}`},
		{"a cost past a float64", `{"_idx":1,"cost_usd":` + strings.Repeat("9", 400) + `}`},
		{"a blank between tokens", `{"_idx":1, "error":"x"}`},
		{"an exponent", `{"_idx":1,"n":1e99}`},
		{"a damaged line", `{"_idx":1,"output":{"a":1}`},
		{"a NUL", "{\"_idx\":1,\"output\":\"a\x00b\"}"},
		{"a class of no name", `{"_idx":1,"class":"x"}`},
		{"no _idx", `{"error":"x"}`},
		{"a blank line", "   "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, line := range []string{tc.line, tc.line + "\n"} {
				if checkFastDecode(t, []byte(line)) {
					t.Errorf("line %q: fastDecode read it, want it left to the rule", line)
				}
			}
		})
	}
}

// TestFastDecodeKnowsEveryFieldOfARecord: a record with every field of
// store.Record, task.Usage and store.Try set, encoded by encoding/json from
// the struct tags alone, is read by fastDecode as the rule reads it; a
// field added to the struct that fastDecode does not know fails here.
func TestFastDecodeKnowsEveryFieldOfARecord(t *testing.T) {
	var rec store.Record
	fillEveryField(t, reflect.ValueOf(&rec).Elem())
	rec.Agent = nil // fastLine declines an agent: the rule's to read
	// A type without Record's MarshalJSON: encoded from the tags alone.
	type plainRecord store.Record
	line, err := json.Marshal(plainRecord(rec))
	if err != nil {
		t.Fatal(err)
	}
	if !checkFastDecode(t, line) {
		t.Fatalf("line %q: fastDecode left it to the rule, want it read fast", line)
	}
	for f := range reflect.TypeFor[store.Record]().Fields() {
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key != "_idx" && recordField([]byte(key)) < 0 {
			t.Errorf("store.Record.%s (key %q): recordField has no number for it", f.Name, key)
		}
	}
}

// fillEveryField sets every field of v to a value not its zero.
func fillEveryField(t *testing.T, v reflect.Value) {
	t.Helper()
	switch v.Type() {
	case reflect.TypeFor[json.RawMessage]():
		v.SetBytes([]byte(`{"k":[1]}`))
		return
	case reflect.TypeFor[classify.Class]():
		v.Set(reflect.ValueOf(classify.Invalid))
		return
	case reflect.TypeFor[time.Time]():
		v.Set(reflect.ValueOf(time.Date(2026, 12, 4, 1, 2, 3, 4, time.UTC)))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString("s-" + v.Type().Name())
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(7)
	case reflect.Float64:
		v.SetFloat(0.5)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fillEveryField(t, v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fillEveryField(t, v.Index(i))
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fillEveryField(t, v.Field(i))
		}
	case reflect.Map:
		// AgentStats' maps: left empty, the agent is dropped anyway.
	default:
		t.Fatalf("fillEveryField: teach it to fill a %s", v.Type())
	}
}

func mustLine(t *testing.T, rec store.Record) string {
	t.Helper()
	line, err := rec.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	return string(line)
}

// BenchmarkDecodeRecord decodes the lines of bench/cmd/resumejob's log
// (10,000 records of about 2 KB, one in ten failed), as status and export
// do: "rule" by decodeByRule (checkShape, then encoding/json), as before
// fastDecode, "fast" by decodeRecord.
func BenchmarkDecodeRecord(b *testing.B) {
	const records = 10_000
	lines := make([][]byte, records)
	var size int64
	for i := range lines {
		rec := resumeJobRecord(i)
		line, err := rec.AppendJSON(nil)
		if err != nil {
			b.Fatal(err)
		}
		lines[i] = append(line, '\n')
		size += int64(len(lines[i]))
	}
	for _, bc := range []struct {
		name   string
		decode func(string, int, int64, []byte, *store.Record) error
	}{{"rule", decodeByRule}, {"fast", decodeRecord}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(size)
			b.ReportAllocs()
			var rec store.Record
			for b.Loop() {
				for i, line := range lines {
					if err := bc.decode("results.jsonl", 0, 0, line, &rec); err != nil || rec.Idx != i {
						b.Fatalf("line %d: _idx %d, %v", i, rec.Idx, err)
					}
				}
			}
			b.ReportMetric(float64(b.N)*records/b.Elapsed().Seconds(), "records/s")
		})
	}
}
