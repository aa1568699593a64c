package report

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// TestReportGroupsFailuresByFingerprintWithHints: failures whose messages
// differ only in numbers form one group; each group lists the heal hints
// its example matches.
func TestReportGroupsFailuresByFingerprintWithHints(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	spec := json.RawMessage(`{"heal": {"hints": [{"match": "end of JSON", "hint": "Answer with complete JSON."}, {"match": "quota", "hint": "Raise the quota."}]}}`)
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 6, Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	recs := []store.Record{
		{Idx: 0, Output: json.RawMessage(`"ok"`), Usage: task.Usage{InputTokens: 1000, OutputTokens: 50, CachedInputTokens: 800, ReasoningTokens: 20}},
		{Idx: 1, Error: "unexpected end of JSON input at offset 12", Class: classify.Invalid},
		{Idx: 2, Error: "unexpected end of JSON input at offset 40", Class: classify.Invalid},
		{Idx: 3, Error: "unexpected end of JSON input at offset 7", Class: classify.Invalid},
		{Idx: 4, Error: "exit 2: file not found", Class: classify.Item},
	}
	if err := j.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	r, err := BuildReport(ctx, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Succeeded != 1 || r.Failed != 4 || r.Pending != 1 {
		t.Fatalf("succeeded %d failed %d pending %d, want 1, 4, 1", r.Succeeded, r.Failed, r.Pending)
	}
	if len(r.Groups) != 2 || r.Groups[0].Count != 3 || r.Groups[1].Count != 1 {
		t.Fatalf("groups %+v, want two groups of 3 and 1", r.Groups)
	}
	if g := r.Groups[0]; len(g.Hints) != 1 || g.Hints[0] != "Answer with complete JSON." {
		t.Errorf("the JSON group's hints are %q, want the one hint that matches", g.Hints)
	}
	if g := r.Groups[1]; len(g.Hints) != 0 {
		t.Errorf("the exit group's hints are %q, want none", g.Hints)
	}
	var b strings.Builder
	if err := r.WriteText(&b, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1 succeeded, 4 failed, 1 pending", "invalid 3", "hint: Answer with complete JSON.", "e.g. #1: unexpected end of JSON input at offset 12",
		"Tokens:    1000 in (800 from the prompt cache, 0 written to it), 50 out (20 reasoning)"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status text lacks %q:\n%s", want, b.String())
		}
	}
}

// TestStatusRateCountsFromTheRunsStart is the regression test of a rate
// measured from the first to the last finish (889.9 items/s for a 15 ms
// run of concurrent items): the time runs from the earliest item's start,
// or is the summed length of the job's runs when the manifest has it.
func TestStatusRateCountsFromTheRunsStart(t *testing.T) {
	ctx := context.Background()
	start := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		state      store.State
		runSeconds float64
		want       float64
	}{
		// Ten items of 10 s each, all in flight at once, finishing over
		// one second: ten items in 11 s, not in 1 s.
		{"from the earliest start", store.StateRunning, 0, 10.0 / 11},
		{"over the runs' length", store.StateCompleted, 20, 10.0 / 20},
		{"a stale job's runs are incomplete", store.StateStale, 20, 10.0 / 11},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			st := &jsonl.Store{Home: t.TempDir()}
			j, err := st.Create(ctx, store.Manifest{Created: start, Items: 10, State: c.state, RunSeconds: c.runSeconds})
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			for i := range 10 {
				rec := store.Record{Idx: i, Output: json.RawMessage(`"ok"`), DurationMS: 10_000,
					FinishedAt: start.Add(10*time.Second + time.Duration(i)*111*time.Millisecond)}
				if err := j.Append(ctx, rec); err != nil {
					t.Fatal(err)
				}
			}
			r, err := BuildReport(ctx, j, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := r.Rate(); got < c.want*0.99 || got > c.want*1.01 {
				t.Errorf("rate %.3f items/s, want %.3f", got, c.want)
			}
		})
	}
}
