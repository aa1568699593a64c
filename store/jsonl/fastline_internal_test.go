package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// slowLine reads line, with a newline added, with the byte-at-a-time
// scanner alone.
func slowLine(line []byte) (lineInfo, error) {
	data := append(append([]byte(nil), line...), '\n')
	lr := newLogReader(bytes.NewReader(data), "results.jsonl", 0)
	lr.slow = true
	return lr.next()
}

// FuzzFastLine: whatever fastLine is sure of, the byte-at-a-time scanner
// reads alike (the same _idx and outcome, and a record, not a damaged
// line), and decodeByRule, the rule, takes it as a record with the same
// _idx and outcome: the fast path never accepts a line status or export
// would refuse.
func FuzzFastLine(f *testing.F) {
	for _, rec := range []store.Record{
		{Idx: 7, Input: json.RawMessage(`{"n":7}`), Output: json.RawMessage(`{"text":"a \"quoted\" \\ word"}`), Attempts: 1},
		{Idx: 0, Input: json.RawMessage(`[1,{"a":"}"}]`), Error: "HTTP 422: \"bad\"\\", Class: classify.Item},
		{Idx: 2147483647, ID: "x\u00e9", Input: json.RawMessage(`"s"`), Class: classify.Unknown},
		{Idx: 3, Input: json.RawMessage(`null`), Tries: []store.Try{{Route: "a", Error: "e", Class: classify.Retryable}}},
	} {
		line, err := rec.AppendJSON(nil)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	for _, seed := range []string{
		`{"_idx":1,"error":"","class":"unknown"}`,
		`{"_idx":1,"class":"unkno\u0077n"}`,
		`{"_idx":1,"a":,"error":"x"}`,
		`{"_idx":01,"a":tru}`,
		`{"_idx":2147483648}`,
		`{"_idx":1,"_idx":2}`,
		`{"_idx":1} `,
		`{"_idx":1,"o":{"s":"\\"}}`,
		`{"_idx":1,"o":"\\\"}"}`,
		"{\"_idx\":1,\"output\":\"a\x00b\"}",
		`{"_idx":1,"output":"a\xb"}`,
		`{"_idx":1,"output":{"a":tru}}`,
		`{"_idx":1,"output":{"a":1]}`,
		`{"_idx":1,"attempts":"1"}`,
		`{"_idx":1,"attempts":1.5}`,
		`{"_idx":1,"Attempts":"x"}`,
		`{"_idx":1,"class":"itex"}`,
		`{"_idx":1,"usage":{"input_tokens":"x"}}`,
		`{"_idx":1,"finished_at":"2026-11-22T2:43:41Z"}`,
		`{"_idx":1,"finished_at":"2026-11-22T22:43:41.822814173Z"}`,
		`{"_idx":1,"finished_at":"2026-02-28T22:43:41+01:00"}`,
		`{"_idx":1,"cost_usd":1e999}`,
		`{"_idx":1,"cost_usd":` + strings.Repeat("9", 309) + `}`,
		`{"_idx":1,"tries":[{"route":"a","class":"item"},{"route":"b"}]}`,
		`{"_idx":1,"retryable":nul}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return
		}
		idx, failed, ok := fastLine(line)
		if !ok {
			return
		}
		slow, err := slowLine(line)
		if err != nil {
			t.Fatalf("line %q: fastLine read _idx %d (failed %v), the byte-at-a-time scanner: %v", line, idx, failed, err)
		}
		if slow.idx != idx || slow.failed != failed {
			t.Fatalf("line %q: fastLine read _idx %d failed %v, the byte-at-a-time scanner _idx %d failed %v", line, idx, failed, slow.idx, slow.failed)
		}
		checkAgainstJSON(t, line, idx, failed)
		var rec store.Record
		if err := decodeByRule("results.jsonl", 1, 0, line, &rec); err != nil {
			t.Fatalf("line %q: fastLine read _idx %d, the rule refuses it: %v", line, idx, err)
		}
		if rec.Idx != idx || rec.Failed() != failed {
			t.Fatalf("line %q: fastLine read _idx %d failed %v, the rule _idx %d failed %v", line, idx, failed, rec.Idx, rec.Failed())
		}
	})
}

// TestFastLineKnowsEveryFieldOfARecord: fastLine checks a field by the
// kind its key says; a field added to store.Record (or task.Usage, or
// store.Try) that it does not know would be taken whatever its value,
// and a resume would accept what status refuses. Each field's kind must
// be the one its Go type decodes.
func TestFastLineKnowsEveryFieldOfARecord(t *testing.T) {
	kindOfType := func(ty reflect.Type) (fieldKind, bool) {
		switch ty {
		case reflect.TypeFor[json.RawMessage]():
			return kindAny, true
		case reflect.TypeFor[classify.Class]():
			return kindClass, true
		case reflect.TypeFor[time.Time]():
			return kindTime, true
		case reflect.TypeFor[task.Usage]():
			return kindUsage, true
		case reflect.TypeFor[[]store.Try]():
			return kindTries, true
		case reflect.TypeFor[*task.AgentStats]():
			return kindUnchecked, true
		case reflect.TypeFor[*float64]():
			return kindNumber, true
		}
		switch ty.Kind() {
		case reflect.String:
			return kindString, true
		case reflect.Bool:
			return kindBool, true
		case reflect.Int:
			return kindInt, true
		case reflect.Int64:
			return kindInt64, true
		}
		return 0, false
	}
	for _, c := range []struct {
		of     reflect.Type
		kindOf func([]byte) fieldKind
	}{
		{reflect.TypeFor[store.Record](), recordKind},
		{reflect.TypeFor[task.Usage](), usageKind},
		{reflect.TypeFor[store.Try](), tryKind},
	} {
		for f := range c.of.Fields() {
			key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			want, ok := kindOfType(f.Type)
			switch {
			case key == "_idx":
				want, ok = kindDecline, true
			case key == "error" && c.of == reflect.TypeFor[store.Record]():
				want = kindError
			}
			if !ok {
				t.Errorf("%s.%s (%s, key %q): fastLine has no kind for its type: teach fastline.go to check it, or to decline it", c.of, f.Name, f.Type, key)
				continue
			}
			if got := c.kindOf([]byte(key)); got != want {
				t.Errorf("%s.%s (%s): fastLine checks key %q as kind %d, want %d", c.of, f.Name, f.Type, key, got, want)
			}
		}
	}
}

// TestFastLineTakesNoIntegerAnIntCannotHold: an int field (attempts and
// the other counts) holds 64 bits or 32 (386, arm), and the rule refuses a
// number past it; fastLine declines such a line on every platform, so a
// resume never accepts one that status and export refuse. The int64
// fields take 18 digits everywhere.
func TestFastLineTakesNoIntegerAnIntCannotHold(t *testing.T) {
	wide := strconv.IntSize == 64
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"_idx":1,"attempts":123456789}`, true},
		{`{"_idx":1,"heal_attempts":-123456789}`, true},
		{`{"_idx":1,"attempts":2147483648}`, wide},
		{`{"_idx":1,"generation_attempts":-2147483649}`, wide},
		{`{"_idx":1,"rate_limited":123456789012345678}`, wide},
		{`{"_idx":1,"attempts":1234567890123456789}`, false},
		{`{"_idx":1,"duration_ms":123456789012345678}`, true},
		{`{"_idx":1,"call_ms":-123456789012345678}`, true},
		{`{"_idx":1,"usage":{"input_tokens":123456789012345678}}`, true},
		{`{"_idx":1,"tries":[{"route":"a","call_ms":123456789012345678}]}`, true},
		{`{"_idx":1,"duration_ms":1234567890123456789}`, false},
	} {
		_, _, ok := fastLine([]byte(tc.line))
		if ok != tc.ok {
			t.Errorf("%s: fastLine ok = %v, want %v (an int of %d bits)", tc.line, ok, tc.ok, strconv.IntSize)
		}
		var rec store.Record
		if err := decodeByRule("results.jsonl", 1, 0, []byte(tc.line), &rec); ok && err != nil {
			t.Errorf("%s: fastLine takes it, the rule refuses it: %v", tc.line, err)
		}
	}
}

// checkAgainstJSON compares what fastLine read of line with what
// encoding/json decodes, when line is JSON without duplicate keys.
func checkAgainstJSON(t *testing.T, line []byte, idx int, failed bool) {
	t.Helper()
	var rec map[string]json.RawMessage
	if !json.Valid(line) || json.Unmarshal(line, &rec) != nil {
		return
	}
	for _, k := range []string{`"_idx"`, `"error"`, `"class"`} {
		if bytes.Count(line, []byte(k)) > 1 {
			return // perhaps a duplicate key, which encoding/json reads last-wins
		}
	}
	var got struct {
		Idx   int     `json:"_idx"`
		Error *string `json:"error"`
		Class *string `json:"class"`
	}
	if err := json.Unmarshal(line, &got); err != nil {
		return // error or class not a string: lineScan reads it as other bytes
	}
	want := got.Error != nil && *got.Error != "" || got.Class != nil && *got.Class != "" && *got.Class != "unknown"
	if got.Idx != idx || want != failed {
		t.Fatalf("line %q: fastLine read _idx %d failed %v, encoding/json _idx %d failed %v", line, idx, failed, got.Idx, want)
	}
}

// TestTheFastPathReadsWhatTenaxWrites: every record line AppendJSON writes
// is read by fastLine, not left to the byte-at-a-time scanner, so the
// fast path is the one a resume takes.
func TestTheFastPathReadsWhatTenaxWrites(t *testing.T) {
	for _, rec := range []store.Record{
		{Idx: 12, Input: json.RawMessage(`{"n":12}`), Output: json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`), Attempts: 1},
		{Idx: 10, Input: json.RawMessage(`{"n":10}`), Error: "HTTP 422: unprocessable", Class: classify.Item},
		{Idx: 1, Input: json.RawMessage(`{"n":1}`), Class: classify.Unknown, Route: "r", Tries: []store.Try{{Route: "a", Error: "e", Class: classify.Retryable}}},
	} {
		line, err := rec.AppendJSON(nil)
		if err != nil {
			t.Fatal(err)
		}
		idx, failed, ok := fastLine(line)
		wantFailed := rec.Error != "" || rec.Class != 0 && rec.Class != classify.Unknown
		if !ok || idx != rec.Idx || failed != wantFailed {
			t.Errorf("fastLine(%q) = %d, %v, %v; want %d, %v, true", line, idx, failed, ok, rec.Idx, wantFailed)
		}
	}
}

// TestALineTheFastPathDeclinesIsStillJudged: lines fastLine declines —
// damaged, or written by hand — get the byte-at-a-time scanner's answer
// from logReader, the reason for a damaged line included.
func TestALineTheFastPathDeclinesIsStillJudged(t *testing.T) {
	for _, tc := range []struct {
		line    string
		idx     int
		failed  bool
		corrupt string
	}{
		{line: `{ "_idx": 4, "error": "x" }`, idx: 4, failed: true},
		{line: `{"_idx":4,"class":"unknown"} ` + "\r", idx: 4},
		{line: `{"_idx":4,"_idx":5}`, idx: 5},
		{line: `{"_idx":-4}`, corrupt: "_idx is negative"},
		{line: `{"_idx":2147483648}`, corrupt: "_idx is larger than"},
		{line: `{"_idx":4,"o":{"a":1}`, corrupt: "the line ends inside the JSON object"},
		{line: `{"_idx":4}x`, corrupt: "text follows the record"},
		// A cost with more digits than a float64 holds, its exponent
		// written out: the rule refuses it, so must the fast path.
		{line: `{"_idx":4,"cost_usd":` + strings.Repeat("9", 309) + `}`, corrupt: "cannot unmarshal number"},
		{line: `{"_idx":4,"cost_usd":-` + strings.Repeat("9", 309) + `.5}`, corrupt: "cannot unmarshal number"},
		{line: `{"_idx":4,"cost_usd":` + strings.Repeat("9", 308) + `.` + strings.Repeat("9", 400) + `}`, idx: 4},
		// A control byte before the newline: the pass that finds the
		// newline finds it too, and the fast path declines the line.
		{line: "{\"_idx\":4,\"output\":\"a\x00b\"}", corrupt: "invalid character"},
		{line: "{\"_idx\":4,\"output\":{\"text\":\"" + strings.Repeat("lorem ", 40) + "\tx\"}}", corrupt: "invalid character"},
	} {
		lr := newLogReader(strings.NewReader(tc.line+"\n"), "results.jsonl", 0)
		got, err := lr.next()
		var ce *CorruptError
		switch {
		case tc.corrupt != "":
			if !errors.As(err, &ce) || !strings.Contains(ce.Reason, tc.corrupt) {
				t.Errorf("%q: got %+v, %v; want a CorruptError saying %q", tc.line, got, err, tc.corrupt)
			}
		case err != nil || got.idx != tc.idx || got.failed != tc.failed:
			t.Errorf("%q: got %+v, %v; want _idx %d failed %v", tc.line, got, err, tc.idx, tc.failed)
		}
		if _, err := lr.next(); err != nil && !errors.Is(err, io.EOF) {
			t.Errorf("%q: after the line: %v, want io.EOF", tc.line, err)
		}
	}
}

// TestFirstControlFindsTheFirstByteBelowASpace: the vector search (on
// amd64) and the word-at-a-time one give the index a byte-at-a-time one
// gives, for every control byte at every place of a line longer than two
// of their 64-byte steps, after bytes at and around the bound (0x20,
// 0x7f, 0x80, 0xff) that must not be taken for one, and before a later
// control byte it must not report instead.
func TestFirstControlFindsTheFirstByteBelowASpace(t *testing.T) {
	naive := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if b[i] < 0x20 {
				return i
			}
		}
		return len(b)
	}
	for _, search := range []struct {
		name string
		fn   func([]byte, int) int
	}{
		{"firstControl", firstControl},
		{"firstControlSWAR", firstControlSWAR},
		{"hasControl", func(b []byte, i int) int {
			if hasControl(b[i:]) {
				return naive(b, i)
			}
			return len(b)
		}},
	} {
		fillers := []byte{' ', '!', 0x7f, 0x80, 0xa0, 0xe0, 0xff, 'a'}
		for n := range 150 {
			line := make([]byte, n)
			for i := range line {
				line[i] = fillers[i%len(fillers)]
			}
			if got := search.fn(line, 0); got != n {
				t.Fatalf("%s: no control byte in %d bytes: got %d, want %d", search.name, n, got, n)
			}
			for at := range n {
				for c := range byte(0x20) {
					b := append([]byte(nil), line...)
					b[at] = c
					if at+3 < n {
						b[at+3] = '\n'
					}
					for from := range min(at+2, n) {
						if got, want := search.fn(b, from), naive(b, from); got != want {
							t.Fatalf("%s: byte %#x at %d of %d, from %d: got %d, want %d", search.name, c, at, n, from, got, want)
						}
					}
				}
			}
		}
	}
}

// BenchmarkLogReader reads a log of records of about 2 KB, one in ten
// failed (bench/cmd/resumejob's), from memory: "fast" as a resume's
// workers do (through a buffer of seqBuf, each copied in), "memory" from
// the log's bytes in place (as chunks were read when they were mapped),
// "slow" with the byte-at-a-time scanner alone, as before the fast path.
func BenchmarkLogReader(b *testing.B) {
	var log, line []byte
	output := json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`)
	const records = 10_000
	for i := range records {
		rec := store.Record{Idx: i, Input: json.RawMessage(`{"n":1}`), Output: output, Attempts: 1, GenerationAttempts: 1, DurationMS: 120}
		if i%10 == 0 {
			rec.Output, rec.Error, rec.Class = nil, "HTTP 422: "+strings.Repeat("unprocessable ", 140), classify.Item
		}
		line, _ = rec.AppendJSON(line[:0])
		log = append(append(log, line...), '\n')
	}
	buf := make([]byte, seqBuf)
	for _, name := range []string{"fast", "memory", "slow"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(log)))
			for b.Loop() {
				lr := newLogReaderBuf(bytes.NewReader(log), "results.jsonl", 0, buf)
				switch name {
				case "memory":
					lr = newLogReaderBytes(log, "results.jsonl", 0)
				case "slow":
					lr.slow = true
				}
				n := 0
				for {
					_, err := lr.next()
					if errors.Is(err, io.EOF) {
						break
					}
					if err != nil {
						b.Fatal(err)
					}
					n++
				}
				if n != records {
					b.Fatalf("read %d records, want %d", n, records)
				}
			}
		})
	}
}
