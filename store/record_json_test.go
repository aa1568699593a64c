package store_test

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/storetest"
	"github.com/tenaxhq/tenax/task"
)

// plain has Record's fields and tags but not its MarshalJSON, so
// json.Marshal of a plain is encoding/json's own encoding of a Record.
type plain store.Record

func TestAppendJSONMatchesEncodingJSON(t *testing.T) {
	full := storetest.FullRecord(7)
	weird := store.Record{
		Idx:        1 << 30,
		ID:         "bad utf-8 \xff\xfe, control \x01\x1f, quote \" backslash \\ and \u2029",
		Input:      json.RawMessage("\n\t{ \"pretty\" :\n  [ 1 ,\n 2 ] }\n"),
		Output:     json.RawMessage(`"a string with \" and \\n inside"`),
		Error:      "<html> & stuff",
		Class:      classify.Retryable,
		DurationMS: -1,
		FinishedAt: time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC),
	}
	tiny, huge := 1e-300, 1.7976931348623157e308
	withTiny, withHuge := store.Record{CostUSD: &tiny}, store.Record{CostUSD: &huge}
	cases := map[string]store.Record{
		"every field":                  full,
		"zero record":                  {},
		"escapes and odd values":       weird,
		"tiny cost":                    withTiny,
		"huge cost":                    withHuge,
		"empty tracked errors omitted": {TrackedErrors: json.RawMessage{}},
		"impossible usage noted":       {Usage: task.Usage{InputTokens: 12, OutputTokens: 100, Impossible: `prompt_tokens=-1e+06, "odd"`}},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := rec.AppendJSON(nil)
			if err != nil {
				t.Fatalf("AppendJSON: %v", err)
			}
			if bytes.ContainsAny(got, "\n\r") {
				t.Errorf("AppendJSON output spans lines: %s", got)
			}
			want, err := json.Marshal(plain(rec))
			if err != nil {
				t.Fatalf("json.Marshal: %v", err)
			}
			var g, w map[string]any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatalf("AppendJSON wrote invalid JSON %s: %v", got, err)
			}
			if err := json.Unmarshal(want, &w); err != nil {
				t.Fatalf("json.Unmarshal of encoding/json's output: %v", err)
			}
			if !reflect.DeepEqual(g, w) {
				t.Errorf("AppendJSON and encoding/json disagree:\n got %s\nwant %s", got, want)
			}
			var back store.Record
			if err := json.Unmarshal(got, &back); err != nil {
				t.Fatalf("decoding AppendJSON's output into a Record: %v", err)
			}
			var wantBack store.Record
			if err := json.Unmarshal(want, &wantBack); err != nil {
				t.Fatalf("decoding encoding/json's output into a Record: %v", err)
			}
			if msg := storetest.DiffRecord(back, wantBack); msg != "" {
				t.Errorf("the record decoded from AppendJSON differs from encoding/json's: %s", msg)
			}
		})
	}
}

func TestAppendJSONRefusesWhatWouldCorruptALog(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(-1)
	cases := map[string]store.Record{
		"invalid input":          {Input: json.RawMessage(`{"a":`)},
		"invalid output":         {Output: json.RawMessage(`not json`)},
		"invalid tracked errors": {TrackedErrors: json.RawMessage(`[1,`)},
		"NaN cost":               {CostUSD: &nan},
		"infinite cost":          {CostUSD: &inf},
		"year 10000":             {FinishedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"unnamed class":          {Class: classify.Class(200)},
	}
	for name, rec := range cases {
		t.Run(name, func(t *testing.T) {
			dst := []byte("kept")
			got, err := rec.AppendJSON(dst)
			if err == nil {
				t.Fatalf("AppendJSON succeeded with %s", got)
			}
			if string(got) != "kept" {
				t.Errorf("AppendJSON failed but changed dst to %q, want it unchanged", got)
			}
		})
	}
}

func TestAppendJSONDoesNotAllocate(t *testing.T) {
	if raceEnabled {
		t.Skip("-race instrumentation allocates")
	}
	rec := storetest.FullRecord(3)
	buf := make([]byte, 0, 4096)
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if buf, err = rec.AppendJSON(buf[:0]); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendJSON into a buffer with room allocates %.1f times per record, want 0", allocs)
	}
}

func BenchmarkAppendJSON(b *testing.B) {
	rec := storetest.FullRecord(3)
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = rec.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkAppendJSONResumeRecord encodes the record bench/cmd/resumejob
// writes a million of: a compact output of about 2 KB, whose raw field
// AppendJSON must check and compact (the checkpoint writer's and export's
// cost per record).
func BenchmarkAppendJSONResumeRecord(b *testing.B) {
	rec := store.Record{
		Idx: 12345, Input: json.RawMessage(`{"n":12345}`),
		Output:   json.RawMessage(`{"text":"` + strings.Repeat("lorem ipsum ", 165) + `"}`),
		Attempts: 1, GenerationAttempts: 1, DurationMS: 120,
		FinishedAt: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = rec.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

// BenchmarkAppendJSONBlankOutput is BenchmarkAppendJSONResumeRecord with
// the output as Python's json.dumps writes it, a space after each ':' and
// ',', which AppendJSON must take out.
func BenchmarkAppendJSONBlankOutput(b *testing.B) {
	rec := store.Record{
		Idx: 12345, Input: json.RawMessage(`{"n": 12345}`),
		Output:   json.RawMessage(`{"text": "` + strings.Repeat("lorem ipsum ", 165) + `", "scores": [1, 2.5, -3]}`),
		Attempts: 1, GenerationAttempts: 1, DurationMS: 120,
		FinishedAt: time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC),
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		var err error
		if buf, err = rec.AppendJSON(buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(buf)))
}

func TestOutcomesSetGrowsGeometrically(t *testing.T) {
	const n = 100_000
	allocs := testing.AllocsPerRun(1, func() {
		var o store.Outcomes
		for i := range n {
			o.Set(i, store.Succeeded)
		}
	})
	if allocs > 40 {
		t.Errorf("setting %d idx in order allocated %.0f times, want about log2(%d)", n, allocs, n)
	}
	var o store.Outcomes
	o.Set(5, store.Failed)
	o.Set(2, store.Succeeded)
	o.Set(3, store.Succeeded)
	o = o[:4] // a shorter view must not expose stale bytes when grown again
	o.Set(7, store.Succeeded)
	want := []store.Outcome{store.Pending, store.Pending, store.Succeeded, store.Succeeded, store.Pending, store.Pending, store.Pending, store.Succeeded}
	for i, w := range want {
		if got := o.Get(i); got != w {
			t.Errorf("Get(%d) = %v, want %v", i, got, w)
		}
	}
}

// An agent item's stats ride in the record as "agent" and read back
// whole; a record without them has no such key, as before agents.
func TestAgentStatsRoundTripInARecord(t *testing.T) {
	st := &task.AgentStats{Steps: 3, ToolCalls: map[string]int{"search": 2, "mock_unknown_tool": 1},
		ToolErrors: map[string]int{"mock_unknown_tool": 1}, ErrorsFedBack: 1, ConsecutiveErrorsPeak: 1,
		Errors:     []string{`mock_unknown_tool: unknown tool "mock_unknown_tool"`},
		Transcript: &task.Transcript{Log: "steps.jsonl", Idx: 1, N: 2}}
	rec := store.Record{Idx: 1, Input: json.RawMessage(`{}`), Output: json.RawMessage(`"x"`), Agent: st}
	b, err := rec.AppendJSON(nil)
	if err != nil {
		t.Fatal(err)
	}
	var back store.Record
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Agent, st) {
		t.Errorf("agent read back as %+v from %s, want %+v", back.Agent, b, st)
	}
	rec.Agent = nil
	if b, _ := rec.AppendJSON(nil); bytes.Contains(b, []byte(`"agent"`)) {
		t.Errorf("a record without agent stats says %s", b)
	}
}
