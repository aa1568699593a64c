package report

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
)

// TestReportGroupsOutcomesByRoute: a routed job's status counts each
// route's successes, failures, tokens and cost, and how many items left
// it (their tries); a job without routes shows no route lines.
func TestReportGroupsOutcomesByRoute(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	cost := 0.002
	left := []store.Try{{Route: "a", Error: "503", Class: classify.Retryable}}
	recs := []store.Record{
		{Idx: 0, Output: json.RawMessage(`"x"`), Route: "b", Usage: task.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: &cost, Tries: left},
		{Idx: 1, Output: json.RawMessage(`"x"`), Route: "b", Usage: task.Usage{InputTokens: 10, OutputTokens: 5}, CostUSD: &cost},
		{Idx: 2, Output: json.RawMessage(`"x"`), Route: "c", Tries: left},
		{Idx: 3, Error: "400 bad", Class: classify.Item, Route: "c"},
	}
	if err := j.Append(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	r, err := BuildReport(ctx, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteReport{
		{Name: "b", Succeeded: 2, Usage: task.Usage{InputTokens: 20, OutputTokens: 10}, CostUSD: 0.004},
		{Name: "c", Succeeded: 1, Failed: 1},
		{Name: "a", Left: 2},
	}
	if !reflect.DeepEqual(r.Routes, want) {
		t.Fatalf("routes %+v, want %+v", r.Routes, want)
	}
	var b strings.Builder
	if err := r.WriteText(&b, 10); err != nil {
		t.Fatal(err)
	}
	if js := r.JSON(); len(js.Routes) != 3 || js.Routes[2].Name != "a" || js.Routes[2].Left != 2 || js.Routes[0].Succeeded != 2 {
		t.Errorf("status --json routes %+v; want b, c and a as above", js.Routes)
	}
	for _, line := range []string{"Routes:    b: 2 succeeded, 0 failed | 20 in, 10 out | $0.0040", "           a: 0 succeeded, 0 failed, left by 2 item(s)"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, b.String())
		}
	}
}

// TestAnItemThatLeftARouteTwiceCountsOnceAsLeavingIt: a record whose
// tries name a twice (it left a, came back when no other route could
// take it, and left again) is one item that left a, not two.
func TestAnItemThatLeftARouteTwiceCountsOnceAsLeavingIt(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(ctx, store.Manifest{Created: time.Now(), Items: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	tryA := store.Try{Route: "a", Error: "503", Class: classify.Retryable}
	rec := store.Record{Idx: 0, Output: json.RawMessage(`"x"`), Route: "b", Tries: []store.Try{tryA, {Route: "b", Error: "503"}, tryA}}
	if err := j.Append(ctx, rec); err != nil {
		t.Fatal(err)
	}
	r, err := BuildReport(ctx, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteReport{{Name: "b", Succeeded: 1, Left: 1}, {Name: "a", Left: 1}}
	if !reflect.DeepEqual(r.Routes, want) {
		t.Errorf("routes %+v, want a and b each left once by the one item", r.Routes)
	}
}

// TestARouteEveryCallOfWhichWasRefusedIsStillReported: a refused call
// leaves no record, so a route whose breaker turned every call away is in
// none; the counts the runs kept in the manifest still give it a line,
// and a route with records gets its counts beside them, summed over runs.
func TestARouteEveryCallOfWhichWasRefusedIsStillReported(t *testing.T) {
	ctx := context.Background()
	st := &jsonl.Store{Home: t.TempDir()}
	m := store.Manifest{Created: time.Now(), Items: 1}
	m.AddRouteBreaker("a", 3, 0)
	m.AddRouteBreaker("a", 2, 1) // a second run of the job
	m.AddRouteBreaker("c", 0, 7)
	m.AddRouteBreaker("b", 0, 0) // nothing to keep
	j, err := st.Create(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	left := []store.Try{{Route: "a", Error: "503", Class: classify.Retryable}}
	if err := j.Append(ctx, store.Record{Idx: 0, Output: json.RawMessage(`"x"`), Route: "b", Tries: left}); err != nil {
		t.Fatal(err)
	}
	r, err := BuildReport(ctx, j, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []RouteReport{
		{Name: "b", Succeeded: 1},
		{Name: "a", Left: 1, Breaker: store.RouteBreaker{Faults: 5, Refused: 1}},
		{Name: "c", Breaker: store.RouteBreaker{Refused: 7}},
	}
	if !reflect.DeepEqual(r.Routes, want) {
		t.Fatalf("routes %+v, want %+v", r.Routes, want)
	}
	var b strings.Builder
	if err := r.WriteText(&b, 10); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"a: 0 succeeded, 0 failed, left by 1 item(s) (see their tries) | breaker: 5 fault(s), 1 refused", "c: 0 succeeded, 0 failed | breaker: 0 fault(s), 7 refused"} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("status lacks %q:\n%s", line, b.String())
		}
	}
	for _, line := range strings.Split(b.String(), "\n") {
		if strings.Contains(line, " b: ") && strings.Contains(line, "breaker:") {
			t.Errorf("route b shows breaker counts it has none of: %q", line)
		}
	}
	js := r.JSON()
	if js.Routes[1].Faults != 5 || js.Routes[1].Refused != 1 || js.Routes[2].Refused != 7 || js.Routes[0].Faults != 0 {
		t.Errorf("status --json routes %+v; want a 5 faults 1 refused, c 7 refused, b none", js.Routes)
	}
}
