package storetest

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
)

// Run runs the conformance suite as subtests of t. open must return a new,
// empty store for each call, and release it with t.Cleanup.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		run  func(t *testing.T, s store.Store)
	}{
		{"CreateAssignsIDFromCreatedWithSuffixOnCollision", testCreateAssignsID},
		{"CreateWithTakenExplicitIDIsErrExists", testCreateExplicitIDTaken},
		{"CreateKeepsManifestFields", testCreateKeepsManifest},
		{"OpenUnknownIDIsErrNotFound", testOpenUnknown},
		{"ListIsOldestFirst", testListOldestFirst},
		{"AppendFlushReopenSeesEveryRecord", testAppendReopen},
		{"LatestRecordPerIdxWins", testLatestWins},
		{"HistoryHasEveryRecordOfAnIdxOldestFirst", testHistory},
		{"ScanIsInIdxOrder", testScanOrder},
		{"ScanStopsAtCallbackError", testScanStops},
		{"OutcomesSayFailedOrSucceeded", testOutcomes},
		{"SetStatePersistsAcrossReopen", testSetState},
		{"UpdateManifestKeepsIDAndCreated", testUpdateManifest},
		{"FailuresAreLatestFailedRecordsInIdxOrder", testFailures},
		{"ConcurrentAppendLosesNothing", testConcurrentAppend},
		{"RecordsRoundTripEveryField", testRoundTrip},
		{"OutputsAreKeptAsWritten", testOutputsVerbatim},
		{"AppendRefusesUnencodableRecord", testAppendRefusesBadRecord},
		{"ReadOnlyJobReadsButRefusesWrites", testReadOnly},
		{"ClosedJobRefusesUse", testClosed},
		{"NotesAreKeptInOrderPerKindAndJob", testNotes},
		{"StepsAreKeptInOrderPerIdxAcrossAReopen", testSteps},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.run(t, open(t))
		})
	}
}

// created is the creation time the suite's jobs share unless a test needs
// another.
var created = time.Date(2024, 3, 5, 14, 7, 9, 0, time.UTC)

func manifest(name string) store.Manifest {
	return store.Manifest{
		Name:        name,
		Created:     created,
		Version:     "v0.0.0-test",
		InputPath:   "input.jsonl",
		InputSHA256: "0123abcd",
		Items:       1000,
		State:       store.StateRunning,
	}
}

func create(t *testing.T, s store.Store, m store.Manifest) store.Job {
	t.Helper()
	j, err := s.Create(t.Context(), m)
	if err != nil {
		t.Fatalf("Create(%+v): %v", m, err)
	}
	t.Cleanup(func() { _ = j.Close() })
	return j
}

func reopen(t *testing.T, s store.Store, j store.Job) store.Job {
	t.Helper()
	id := j.Manifest().ID
	if err := j.Close(); err != nil {
		t.Fatalf("Close of job %s: %v", id, err)
	}
	j2, err := s.Open(t.Context(), id)
	if err != nil {
		t.Fatalf("Open(%q) after Close: %v", id, err)
	}
	t.Cleanup(func() { _ = j2.Close() })
	return j2
}

func appendRecs(t *testing.T, j store.Job, recs ...store.Record) {
	t.Helper()
	if err := j.Append(t.Context(), recs...); err != nil {
		t.Fatalf("Append of %d records: %v", len(recs), err)
	}
}

func flush(t *testing.T, j store.Job) {
	t.Helper()
	if err := j.Flush(t.Context()); err != nil {
		t.Fatalf("Flush: %v", err)
	}
}

func ok(idx int) store.Record {
	return store.Record{
		Idx:        idx,
		ID:         fmt.Sprintf("item-%d", idx),
		Input:      json.RawMessage(fmt.Sprintf(`{"n":%d}`, idx)),
		Output:     json.RawMessage(fmt.Sprintf(`{"double":%d}`, 2*idx)),
		Attempts:   1,
		FinishedAt: created.Add(time.Duration(idx) * time.Second),
	}
}

func failed(idx int, msg string) store.Record {
	r := ok(idx)
	r.Output = nil
	r.Error = msg
	r.Class = classify.Item
	r.Attempts = 3
	return r
}

func scanAll(t *testing.T, j store.Job) []store.Record {
	t.Helper()
	var recs []store.Record
	if err := j.Scan(t.Context(), func(r store.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatalf("Scan: %v", err)
	}
	return recs
}

func failuresOf(t *testing.T, j store.Job) []store.Record {
	t.Helper()
	var recs []store.Record
	if err := j.Failures(t.Context(), func(r store.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		t.Fatalf("Failures: %v", err)
	}
	return recs
}

func outcomes(t *testing.T, j store.Job) store.Outcomes {
	t.Helper()
	o, err := j.Outcomes(t.Context())
	if err != nil {
		t.Fatalf("Outcomes: %v", err)
	}
	return o
}

func idxs(recs []store.Record) []int {
	out := make([]int, len(recs))
	for i, r := range recs {
		out[i] = r.Idx
	}
	return out
}

func testCreateAssignsID(t *testing.T, s store.Store) {
	want := []string{"job_20240305_140709", "job_20240305_140709_2", "job_20240305_140709_3"}
	for _, w := range want {
		j := create(t, s, manifest("same second"))
		if got := j.Manifest().ID; got != w {
			t.Errorf("Create with Created %s assigned id %q, want %q", created, got, w)
		}
	}
	other := manifest("next second")
	other.Created = created.Add(time.Second)
	if got := create(t, s, other).Manifest().ID; got != "job_20240305_140710" {
		t.Errorf("Create one second later assigned id %q, want job_20240305_140710", got)
	}
}

func testCreateExplicitIDTaken(t *testing.T, s store.Store) {
	m := manifest("explicit")
	m.ID = "nightly"
	if got := create(t, s, m).Manifest().ID; got != "nightly" {
		t.Fatalf("Create with ID %q gave id %q", m.ID, got)
	}
	_, err := s.Create(t.Context(), m)
	if !errors.Is(err, store.ErrExists) {
		t.Fatalf("second Create with ID %q: err = %v, want store.ErrExists", m.ID, err)
	}
}

func testCreateKeepsManifest(t *testing.T, s store.Store) {
	m := manifest("keep")
	m.SpecPath = "spec.yaml"
	m.Spec = json.RawMessage(`{"task":{"type":"llm","model":"m"}}`)
	m.StopReason = ""
	j := create(t, s, m)
	id := j.Manifest().ID
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	list, err := s.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 {
		t.Fatalf("List after one Create returned %d manifests, want 1", len(list))
	}
	got := list[0]
	m.ID = id
	if msg := diffManifest(got, m); msg != "" {
		t.Errorf("manifest after Create and List differs from the one given: %s", msg)
	}
	j2, err := s.OpenReadOnly(t.Context(), id)
	if err != nil {
		t.Fatalf("OpenReadOnly(%q): %v", id, err)
	}
	defer j2.Close()
	if msg := diffManifest(j2.Manifest(), m); msg != "" {
		t.Errorf("manifest after reopen differs from the one given: %s", msg)
	}
}

// diffManifest compares the fields a store must keep; Updated is the
// store's own.
func diffManifest(got, want store.Manifest) string {
	var diffs []string
	check := func(field string, g, w any) {
		if !reflect.DeepEqual(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", field, g, w))
		}
	}
	check("ID", got.ID, want.ID)
	check("Name", got.Name, want.Name)
	if !got.Created.Equal(want.Created) {
		diffs = append(diffs, fmt.Sprintf("Created = %v, want %v", got.Created, want.Created))
	}
	check("Version", got.Version, want.Version)
	check("SpecPath", got.SpecPath, want.SpecPath)
	if !sameJSON(got.Spec, want.Spec) {
		diffs = append(diffs, fmt.Sprintf("Spec = %s, want %s", got.Spec, want.Spec))
	}
	check("InputPath", got.InputPath, want.InputPath)
	check("InputSHA256", got.InputSHA256, want.InputSHA256)
	check("Items", got.Items, want.Items)
	check("State", got.State, want.State)
	check("StopReason", got.StopReason, want.StopReason)
	return strings.Join(diffs, "; ")
}

func testOpenUnknown(t *testing.T, s store.Store) {
	for _, id := range []string{"job_19990101_000000", "../etc", ""} {
		if _, err := s.Open(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("Open(%q) of a job never created: err = %v, want store.ErrNotFound", id, err)
		}
		if _, err := s.OpenReadOnly(t.Context(), id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("OpenReadOnly(%q) of a job never created: err = %v, want store.ErrNotFound", id, err)
		}
	}
}

func testListOldestFirst(t *testing.T, s store.Store) {
	offsets := []time.Duration{3 * time.Hour, 0, 48 * time.Hour, time.Minute, -24 * time.Hour}
	for i, d := range offsets {
		m := manifest(fmt.Sprintf("job %d", i))
		m.Created = created.Add(d)
		create(t, s, m)
	}
	list, err := s.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != len(offsets) {
		t.Fatalf("List returned %d manifests, want %d", len(list), len(offsets))
	}
	if !sort.SliceIsSorted(list, func(a, b int) bool { return list[a].Created.Before(list[b].Created) }) {
		var got []string
		for _, m := range list {
			got = append(got, m.Created.Format(time.DateTime))
		}
		t.Errorf("List order by Created = %v, want oldest first", got)
	}
}

func testAppendReopen(t *testing.T, s store.Store) {
	j := create(t, s, manifest("append"))
	const n = 250
	for i := range n {
		appendRecs(t, j, ok(i))
	}
	appendRecs(t, j, failed(n, "boom"), ok(n+1))
	flush(t, j)
	j = reopen(t, s, j)
	recs := scanAll(t, j)
	if len(recs) != n+2 {
		t.Fatalf("after reopen Scan saw %d records, want %d", len(recs), n+2)
	}
	for i, r := range recs {
		if r.Idx != i {
			t.Fatalf("after reopen record %d has idx %d", i, r.Idx)
		}
	}
	// Appending after a reopen extends the same log.
	appendRecs(t, j, ok(n+2))
	flush(t, j)
	j = reopen(t, s, j)
	if got := len(scanAll(t, j)); got != n+3 {
		t.Errorf("after append on a reopened job and another reopen Scan saw %d records, want %d", got, n+3)
	}
}

func testHistory(t *testing.T, s store.Store) {
	j := create(t, s, manifest("history"))
	appendRecs(t, j, failed(0, "first run"), ok(1))
	appendRecs(t, j, failed(0, "second run"), failed(2, "other"))
	appendRecs(t, j, ok(0))
	flush(t, j)
	for _, phase := range []string{"before reopen", "after reopen"} {
		h, ok := j.(store.Historian)
		if !ok {
			t.Fatalf("the store's Job (%T) is no store.Historian", j)
		}
		var got []string
		if err := h.History(t.Context(), 0, func(r store.Record) error {
			if r.Idx != 0 {
				t.Errorf("%s: History(0) gave a record of idx %d", phase, r.Idx)
			}
			got = append(got, cmp.Or(r.Error, "ok"))
			return nil
		}); err != nil {
			t.Fatalf("%s: History: %v", phase, err)
		}
		if want := []string{"first run", "second run", "ok"}; !reflect.DeepEqual(got, want) {
			t.Errorf("%s: History(0) = %q, want every record of idx 0 oldest first, %q", phase, got, want)
		}
		var none int
		if err := h.History(t.Context(), 7, func(store.Record) error { none++; return nil }); err != nil || none != 0 {
			t.Errorf("%s: History of an idx without records: %d records, %v; want none, no error", phase, none, err)
		}
		var log []string
		if err := h.Log(t.Context(), func(r store.Record) error {
			log = append(log, fmt.Sprintf("%d:%s", r.Idx, cmp.Or(r.Error, "ok")))
			return nil
		}); err != nil {
			t.Fatalf("%s: Log: %v", phase, err)
		}
		if want := []string{"0:first run", "1:ok", "0:second run", "2:other", "0:ok"}; !reflect.DeepEqual(log, want) {
			t.Errorf("%s: Log = %q, want every record of every idx in the order appended, %q", phase, log, want)
		}
		j = reopen(t, s, j)
	}
}

func testLatestWins(t *testing.T, s store.Store) {
	j := create(t, s, manifest("latest"))
	appendRecs(t, j, failed(0, "first try"), ok(1), ok(2))
	appendRecs(t, j, ok(0), failed(1, "regressed"))
	second := ok(2)
	second.Output = json.RawMessage(`"second"`)
	appendRecs(t, j, second)
	flush(t, j)
	for _, phase := range []string{"before reopen", "after reopen"} {
		o := outcomes(t, j)
		want := []store.Outcome{store.Succeeded, store.Failed, store.Succeeded}
		for idx, w := range want {
			if got := o.Get(idx); got != w {
				t.Errorf("%s: Outcomes.Get(%d) = %v, want %v", phase, idx, got, w)
			}
		}
		recs := scanAll(t, j)
		if len(recs) != 3 {
			t.Fatalf("%s: Scan saw %d records, want one per idx (3)", phase, len(recs))
		}
		if recs[0].Failed() || !recs[1].Failed() || recs[1].Error != "regressed" || string(recs[2].Output) != `"second"` {
			t.Errorf("%s: Scan did not give the latest record per idx: %+v", phase, recs)
		}
		j = reopen(t, s, j)
	}
}

func testScanOrder(t *testing.T, s store.Store) {
	j := create(t, s, manifest("order"))
	order := rand.New(rand.NewPCG(1, 2)).Perm(40)
	for _, idx := range order {
		if idx%7 == 3 {
			continue // never finished: Scan skips it
		}
		appendRecs(t, j, ok(idx))
	}
	flush(t, j)
	got := idxs(scanAll(t, j))
	var want []int
	for i := range 40 {
		if i%7 != 3 {
			want = append(want, i)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Scan idx order = %v, want %v", got, want)
	}
}

func testScanStops(t *testing.T, s store.Store) {
	j := create(t, s, manifest("stop"))
	appendRecs(t, j, ok(0), ok(1), ok(2), ok(3))
	flush(t, j)
	stop := errors.New("enough")
	calls := 0
	err := j.Scan(t.Context(), func(r store.Record) error {
		calls++
		if r.Idx == 1 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Errorf("Scan whose callback failed returned %v, want the callback's error", err)
	}
	if calls != 2 {
		t.Errorf("Scan called its callback %d times after it failed at the second record, want 2", calls)
	}
}

func testOutcomes(t *testing.T, s store.Store) {
	j := create(t, s, manifest("outcomes"))
	failedRec := failed(4, "")
	failedRec.Class = classify.Fatal // a class without a message is a failure
	errOnly := ok(5)
	errOnly.Error = "no class" // and so is a message without a class
	appendRecs(t, j, ok(0), failed(2, "bad item"), failedRec, errOnly, ok(7))
	flush(t, j)
	o := outcomes(t, j)
	want := map[int]store.Outcome{0: store.Succeeded, 1: store.Pending, 2: store.Failed, 3: store.Pending,
		4: store.Failed, 5: store.Failed, 6: store.Pending, 7: store.Succeeded, 8: store.Pending, 1000: store.Pending}
	for idx, w := range want {
		if got := o.Get(idx); got != w {
			t.Errorf("Outcomes.Get(%d) = %v, want %v", idx, got, w)
		}
	}
	succ, fail, pend := o.Count(10)
	if succ != 2 || fail != 3 || pend != 5 {
		t.Errorf("Outcomes.Count(10) = %d succeeded, %d failed, %d pending; want 2, 3, 5", succ, fail, pend)
	}
	empty := create(t, s, manifest("empty"))
	if o := outcomes(t, empty); len(o) != 0 {
		t.Errorf("Outcomes of a job with no records has %d entries, want 0", len(o))
	}
}

func testSetState(t *testing.T, s store.Store) {
	j := create(t, s, manifest("state"))
	if err := j.SetState(t.Context(), store.StateCompleted); err != nil {
		t.Fatalf("SetState: %v", err)
	}
	if got := j.Manifest().State; got != store.StateCompleted {
		t.Errorf("Manifest().State right after SetState(completed) = %q", got)
	}
	j = reopen(t, s, j)
	if got := j.Manifest().State; got != store.StateCompleted {
		t.Errorf("Manifest().State after reopen = %q, want completed", got)
	}
	list, err := s.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].State != store.StateCompleted {
		t.Errorf("List after SetState(completed) = %+v, want the one job, completed", list)
	}
}

func testUpdateManifest(t *testing.T, s store.Store) {
	j := create(t, s, manifest("update"))
	id := j.Manifest().ID
	err := j.UpdateManifest(t.Context(), func(m *store.Manifest) {
		m.State = store.StateAborted
		m.StopReason = "breaker"
		m.InputSHA256 = "feedface"
		m.ID = "hijacked"
		m.Created = time.Time{}
	})
	if err != nil {
		t.Fatalf("UpdateManifest: %v", err)
	}
	j = reopen(t, s, j)
	m := j.Manifest()
	if m.ID != id || !m.Created.Equal(created) {
		t.Errorf("UpdateManifest changed the id or creation time: id %q, created %v; want %q, %v", m.ID, m.Created, id, created)
	}
	if m.State != store.StateAborted || m.StopReason != "breaker" || m.InputSHA256 != "feedface" {
		t.Errorf("after UpdateManifest and reopen: state %q, stop reason %q, input sha %q; want aborted, breaker, feedface",
			m.State, m.StopReason, m.InputSHA256)
	}
	if m.Updated.IsZero() {
		t.Errorf("Manifest().Updated is zero after UpdateManifest")
	}
}

func testFailures(t *testing.T, s store.Store) {
	j := create(t, s, manifest("failures"))
	appendRecs(t, j, failed(5, "five"), failed(1, "one, first"), ok(2), failed(3, "healed later"))
	appendRecs(t, j, ok(3), failed(1, "one, last"), failed(2, "two regressed"))
	if err := j.Finish(t.Context()); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	for _, phase := range []string{"after Finish", "after reopen"} {
		got := failuresOf(t, j)
		want := []struct {
			idx int
			err string
		}{{1, "one, last"}, {2, "two regressed"}, {5, "five"}}
		if len(got) != len(want) {
			t.Fatalf("%s: Failures gave idx %v, want %v", phase, idxs(got), []int{1, 2, 5})
		}
		for i, w := range want {
			if got[i].Idx != w.idx || got[i].Error != w.err {
				t.Errorf("%s: failure %d = idx %d %q, want idx %d %q", phase, i, got[i].Idx, got[i].Error, w.idx, w.err)
			}
		}
		j = reopen(t, s, j)
	}
}

func testConcurrentAppend(t *testing.T, s store.Store) {
	const workers, each = 16, 150
	m := manifest("concurrent")
	m.Items = workers * each
	j := create(t, s, m)
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				idx := w*each + i
				var err error
				if i%10 == 0 {
					err = j.Append(t.Context(), failed(idx, "x"), ok(idx))
				} else {
					err = j.Append(t.Context(), ok(idx))
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Append: %v", err)
	}
	flush(t, j)
	j = reopen(t, s, j)
	o := outcomes(t, j)
	if succ, fail, pend := o.Count(workers * each); succ != workers*each {
		t.Errorf("after %d concurrent Appends: %d succeeded, %d failed, %d pending; want all succeeded",
			workers*each, succ, fail, pend)
	}
	if got := len(scanAll(t, j)); got != workers*each {
		t.Errorf("Scan after concurrent Appends saw %d records, want %d", got, workers*each)
	}
}

// FullRecord returns a record with every field set, for round-trip tests.
func FullRecord(idx int) store.Record {
	cost := 0.000123
	return store.Record{
		Idx:                idx,
		ID:                 "ünïcode \"quoted\" \\ <tag> & \n\t line\u2028sep",
		Input:              json.RawMessage(`{ "text": "héllo\nworld", "n": [1, 2.5, -3e2], "nested": {"ok": true, "nil": null} }`),
		Output:             json.RawMessage(`{"es":"hola","list":["a","b"]}`),
		Error:              "validate: output is not JSON: unexpected end of JSON input",
		Class:              classify.Invalid,
		Retryable:          true,
		Attempts:           4,
		HealAttempts:       2,
		GenerationAttempts: 3,
		RateLimited:        5,
		CacheHit:           true,
		FinishReason:       "length",
		Stderr:             "Traceback (most recent call last):\n  File \"x.py\", line 1\nValueError: bad",
		Route:              "azure-eu",
		Model:              "gpt-4o-mini",
		Tries:              []store.Try{{Route: "openai \"us\"", Model: "gpt-4o-mini", Error: "503 Service Unavailable", Class: classify.Retryable, CallMS: 30012}, {Route: "b", Error: "x", Fallback: "context_window"}},
		CallMS:             842,
		Fingerprint:        "fp:3f2a9c",
		TrackedErrors:      json.RawMessage(`[{"fingerprint":"fp:3f2a9c","count":2,"message":"missing field \"es\""}]`),
		Usage:              task.Usage{InputTokens: 1234, OutputTokens: 56, CachedInputTokens: 1024, CacheWriteTokens: 7, ReasoningTokens: 30},
		CostUSD:            &cost,
		DurationMS:         98765,
		FinishedAt:         time.Date(2024, 3, 5, 14, 7, 9, 123456789, time.FixedZone("CET", 3600)),
	}
}

// Untimed returns rec without what the clock decides: its duration, call
// times (the record's and each try's) and the time it finished, for a
// test that compares the records of two runs (DiffRecord). rec's tries
// are copied, not changed.
func Untimed(rec store.Record) store.Record {
	rec.DurationMS, rec.CallMS, rec.FinishedAt = 0, 0, time.Time{}
	if rec.Tries != nil {
		rec.Tries = slices.Clone(rec.Tries)
		for i := range rec.Tries {
			rec.Tries[i].CallMS = 0
		}
	}
	return rec
}

// DiffRecord describes how got differs from want, "" when they are equal.
// Raw JSON fields compare by meaning (a store may reformat them) and times
// by instant.
func DiffRecord(got, want store.Record) string {
	var diffs []string
	raw := func(field string, g, w json.RawMessage) {
		if !sameJSON(g, w) {
			diffs = append(diffs, fmt.Sprintf("%s = %s, want %s", field, g, w))
		}
	}
	raw("Input", got.Input, want.Input)
	raw("Output", got.Output, want.Output)
	raw("TrackedErrors", got.TrackedErrors, want.TrackedErrors)
	if !got.FinishedAt.Equal(want.FinishedAt) {
		diffs = append(diffs, fmt.Sprintf("FinishedAt = %v, want %v", got.FinishedAt, want.FinishedAt))
	}
	if (got.CostUSD == nil) != (want.CostUSD == nil) || got.CostUSD != nil && *got.CostUSD != *want.CostUSD {
		diffs = append(diffs, fmt.Sprintf("CostUSD = %v, want %v", fmtCost(got.CostUSD), fmtCost(want.CostUSD)))
	}
	if !reflect.DeepEqual(got.Agent, want.Agent) {
		// Printed as JSON: %+v would show the pointers' addresses.
		g, _ := json.Marshal(got.Agent)
		w, _ := json.Marshal(want.Agent)
		diffs = append(diffs, fmt.Sprintf("Agent = %s, want %s", g, w))
	}
	got.Input, got.Output, got.TrackedErrors, got.FinishedAt, got.CostUSD, got.Agent = nil, nil, nil, time.Time{}, nil, nil
	want.Input, want.Output, want.TrackedErrors, want.FinishedAt, want.CostUSD, want.Agent = nil, nil, nil, time.Time{}, nil, nil
	if !reflect.DeepEqual(got, want) {
		diffs = append(diffs, fmt.Sprintf("other fields = %+v, want %+v", got, want))
	}
	return strings.Join(diffs, "; ")
}

func fmtCost(c *float64) string {
	if c == nil {
		return "nil"
	}
	return fmt.Sprint(*c)
}

// sameJSON reports whether a and b encode the same value; empty and null
// are the same.
func sameJSON(a, b json.RawMessage) bool {
	norm := func(r json.RawMessage) any {
		if len(bytes.TrimSpace(r)) == 0 {
			return nil
		}
		var v any
		if err := json.Unmarshal(r, &v); err != nil {
			return "invalid JSON: " + string(r)
		}
		return v
	}
	return reflect.DeepEqual(norm(a), norm(b))
}

func testRoundTrip(t *testing.T, s store.Store) {
	full := FullRecord(0)
	minimal := store.Record{Idx: 1, FinishedAt: created}
	zeroCost := ok(2)
	zeroCost.CostUSD = new(float64)
	j := create(t, s, manifest("round trip"))
	appendRecs(t, j, full, minimal, zeroCost)
	flush(t, j)
	j = reopen(t, s, j)
	recs := scanAll(t, j)
	if len(recs) != 3 {
		t.Fatalf("Scan saw %d records, want 3", len(recs))
	}
	for i, want := range []store.Record{full, minimal, zeroCost} {
		if msg := DiffRecord(recs[i], want); msg != "" {
			t.Errorf("record idx %d after a round trip: %s", i, msg)
		}
	}
	fails := failuresOf(t, j)
	if len(fails) != 1 {
		t.Fatalf("Failures gave %d records, want the one full record", len(fails))
	}
	if msg := DiffRecord(fails[0], full); msg != "" {
		t.Errorf("failure record after a round trip: %s", msg)
	}
}

// testOutputsVerbatim: an output comes back as written, whatever it holds:
// key order, a NUL that an exec task printed, non-ASCII text.
func testOutputsVerbatim(t *testing.T, s store.Store) {
	outputs := []string{
		`{"b":1,"a":2}`,
		`"a NUL \u0000 from stdout"`,
		`{"es":"vehículo","zh":"辆"}`,
	}
	j := create(t, s, manifest("verbatim"))
	for i, out := range outputs {
		r := ok(i)
		r.Output = json.RawMessage(out)
		appendRecs(t, j, r)
	}
	flush(t, j)
	j = reopen(t, s, j)
	for i, rec := range scanAll(t, j) {
		if string(rec.Output) != outputs[i] {
			t.Errorf("output %d came back as %s, want %s as written", i, rec.Output, outputs[i])
		}
	}
}

func testAppendRefusesBadRecord(t *testing.T, s store.Store) {
	j := create(t, s, manifest("bad record"))
	bad := ok(1)
	bad.Output = json.RawMessage(`{"truncated":`)
	if err := j.Append(t.Context(), ok(0), bad); err == nil {
		t.Errorf("Append of a record with invalid raw JSON output succeeded, want an error")
	}
	appendRecs(t, j, ok(2))
	flush(t, j)
	j = reopen(t, s, j)
	for _, r := range scanAll(t, j) {
		if r.Idx < 2 {
			t.Errorf("a record of the refused batch was stored: %+v", r)
		}
	}
	if o := outcomes(t, j); o.Get(2) != store.Succeeded {
		t.Errorf("a record appended after a refused one is %v, want succeeded", o.Get(2))
	}
}

func testReadOnly(t *testing.T, s store.Store) {
	w := create(t, s, manifest("read only"))
	appendRecs(t, w, ok(0), failed(1, "x"))
	flush(t, w)
	r, err := s.OpenReadOnly(t.Context(), w.Manifest().ID)
	if err != nil {
		t.Fatalf("OpenReadOnly while a writer has the job open: %v", err)
	}
	defer r.Close()
	if got := len(scanAll(t, r)); got != 2 {
		t.Errorf("read-only Scan saw %d records, want 2", got)
	}
	if o := outcomes(t, r); o.Get(1) != store.Failed {
		t.Errorf("read-only Outcomes.Get(1) = %v, want failed", o.Get(1))
	}
	ctx := t.Context()
	writes := map[string]error{
		"Append":         r.Append(ctx, ok(2)),
		"SetState":       r.SetState(ctx, store.StateFailed),
		"UpdateManifest": r.UpdateManifest(ctx, func(m *store.Manifest) { m.Name = "x" }),
		"Finish":         r.Finish(ctx),
	}
	for name, err := range writes {
		if !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("%s on a read-only job: err = %v, want store.ErrReadOnly", name, err)
		}
	}
	// The writer goes on, and a new reader sees its new records.
	appendRecs(t, w, ok(3))
	flush(t, w)
	r2, err := s.OpenReadOnly(ctx, w.Manifest().ID)
	if err != nil {
		t.Fatalf("OpenReadOnly: %v", err)
	}
	defer r2.Close()
	if o := outcomes(t, r2); o.Get(3) != store.Succeeded {
		t.Errorf("a read-only job opened after the writer's Flush: Outcomes.Get(3) = %v, want succeeded", o.Get(3))
	}
}

func testClosed(t *testing.T, s store.Store) {
	j := create(t, s, manifest("closed"))
	if err := j.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	ctx := t.Context()
	if err := j.Append(ctx, ok(0)); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Append after Close: err = %v, want store.ErrClosed", err)
	}
	if _, err := j.Outcomes(ctx); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Outcomes after Close: err = %v, want store.ErrClosed", err)
	}
	if err := j.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
}

// testNotes checks store.NoteKeeper, for the stores whose jobs offer it:
// notes come back in the order appended, each kind and each job apart,
// after a reopen, and a read-only job reads them but refuses to add one.
func testNotes(t *testing.T, s store.Store) {
	w := create(t, s, manifest("notes"))
	nw, ok := w.(store.NoteKeeper)
	if !ok {
		t.Skip("this store's jobs keep no notes (they have a directory for side files)")
	}
	other := create(t, s, manifest("other notes"))
	ctx := t.Context()
	for i, n := range []struct{ kind, note string }{
		{"batch", `{"n":1}`}, {"other", "x"}, {"batch", `{"n":2}`}, {"batch", "\x00binary\xff"},
	} {
		if err := nw.AppendNote(ctx, n.kind, []byte(n.note)); err != nil {
			t.Fatalf("AppendNote %d: %v", i, err)
		}
	}
	if err := other.(store.NoteKeeper).AppendNote(ctx, "batch", []byte("not mine")); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := s.OpenReadOnly(ctx, w.Manifest().ID)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	nr := r.(store.NoteKeeper)
	got, err := nr.Notes(ctx, "batch")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{`{"n":1}`, `{"n":2}`, "\x00binary\xff"}
	if len(got) != len(want) {
		t.Fatalf("Notes(batch) after a reopen = %q, want %q", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("note %d = %q, want %q", i, got[i], want[i])
		}
	}
	if none, err := nr.Notes(ctx, "absent"); err != nil || len(none) != 0 {
		t.Errorf("Notes of a kind never written = %q, %v; want none and no error", none, err)
	}
	if err := nr.AppendNote(ctx, "batch", []byte("x")); !errors.Is(err, store.ErrReadOnly) {
		t.Errorf("AppendNote on a read-only job: err = %v, want store.ErrReadOnly", err)
	}
}

// testSteps checks store.StepLog: entries come back in the order
// appended, each idx and each job apart, after a reopen and on a
// read-only job, which refuses to add one; an entry that is not compact
// JSON is refused whole.
func testSteps(t *testing.T, s store.Store) {
	ctx := t.Context()
	w := create(t, s, manifest("steps"))
	sw, ok := store.StepsOf(w)
	if !ok {
		t.Fatal("the store's jobs keep no agent steps (store.StepLog)")
	}
	if sw.StepsLocation() == "" {
		t.Error("StepsLocation is empty: a record's transcript would name no log")
	}
	other := create(t, s, manifest("other steps"))
	so, _ := store.StepsOf(other)
	if err := so.AppendSteps(ctx, 3, []byte(`"not mine"`)); err != nil {
		t.Fatal(err)
	}
	for _, a := range []struct {
		idx     int
		entries []string
	}{
		{3, []string{`{"n":1}`, `{"n":2,"s":"é\u2028"}`}}, {7, []string{`{"n":1}`}}, {3, []string{`[3]`}},
	} {
		var entries [][]byte
		for _, e := range a.entries {
			entries = append(entries, []byte(e))
		}
		if err := sw.AppendSteps(ctx, a.idx, entries...); err != nil {
			t.Fatalf("AppendSteps(%d, %s): %v", a.idx, a.entries, err)
		}
	}
	for _, bad := range []string{`{"torn":`, "{\n}"} {
		if err := sw.AppendSteps(ctx, 3, []byte(`{"fine":1}`), []byte(bad)); err == nil {
			t.Errorf("AppendSteps took %q, which is not one compact JSON value", bad)
		}
	}
	w.Close()
	want := map[int][]string{3: {`{"n":1}`, `{"n":2,"s":"é\u2028"}`, `[3]`}, 7: {`{"n":1}`}, 9: nil}
	for _, readOnly := range []bool{false, true} {
		var (
			r   store.Job
			err error
		)
		if readOnly {
			r, err = s.OpenReadOnly(ctx, w.Manifest().ID)
		} else {
			r, err = s.Open(ctx, w.Manifest().ID)
		}
		if err != nil {
			t.Fatal(err)
		}
		sr, _ := store.StepsOf(r)
		for idx, entries := range want {
			got, err := sr.Steps(ctx, idx)
			if err != nil {
				t.Fatalf("Steps(%d): %v", idx, err)
			}
			var gotS []string
			for _, g := range got {
				gotS = append(gotS, string(g))
			}
			if !slices.Equal(gotS, entries) {
				t.Errorf("Steps(%d) after a reopen (read-only %v) = %q, want %q", idx, readOnly, gotS, entries)
			}
		}
		err = sr.AppendSteps(ctx, 1, []byte(`{}`))
		if readOnly && !errors.Is(err, store.ErrReadOnly) {
			t.Errorf("AppendSteps on a read-only job: err = %v, want store.ErrReadOnly", err)
		}
		if !readOnly && err != nil {
			t.Errorf("AppendSteps after a reopen: %v", err)
		}
		want[1] = []string{`{}`}
		r.Close()
	}
}
