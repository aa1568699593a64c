package heal

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func obs(pairs ...string) []Observed {
	var out []Observed
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, Observed{Name: pairs[i], Message: pairs[i+1]})
	}
	return out
}

func statuses(t *Tracker) string {
	var parts []string
	for _, e := range t.Errors() {
		parts = append(parts, e.Name+"="+string(e.Status))
	}
	return strings.Join(parts, " ")
}

func TestObserveUpdatesStatuses(t *testing.T) {
	tests := []struct {
		name   string
		checks [][]Observed
		want   string
	}{
		{"first sight is new", [][]Observed{obs("a", "boom")}, "a=new"},
		{"seen again is active", [][]Observed{obs("a", "boom"), obs("a", "boom")}, "a=active"},
		{"gone is fixed", [][]Observed{obs("a", "boom"), nil}, "a=fixed"},
		{"back after fixed is regressed", [][]Observed{obs("a", "boom"), nil, obs("a", "boom")}, "a=regressed"},
		{"regressed seen again is active", [][]Observed{obs("a", "boom"), nil, obs("a", "boom"), obs("a", "boom")}, "a=active"},
		{"same error with other numbers is one error", [][]Observed{obs("a", "line 12: boom"), obs("a", "line 40: boom")}, "a=active"},
		{"duplicates in one check count once", [][]Observed{obs("a", "boom 1", "a", "boom 2")}, "a=new"},
		{"mixed", [][]Observed{obs("a", "x", "b", "y"), obs("b", "y", "c", "z")}, "a=fixed b=active c=new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(Budget{})
			for _, c := range tt.checks {
				tr.Observe(c)
			}
			if got := statuses(tr); got != tt.want {
				t.Errorf("statuses = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestObserveKeepsLatestMessage(t *testing.T) {
	tr := NewTracker(Budget{})
	tr.Observe(obs("a", "line 12: boom"))
	tr.Observe(obs("a", "line 40: boom"))
	e := tr.Errors()[0]
	if e.Message != "line 40: boom" || e.Normalized != "line <int>: boom" {
		t.Errorf("error = %+v, want the latest message and its normalized form", e)
	}
	if e.Fingerprint != Fingerprint("a", "line 12: boom") {
		t.Errorf("fingerprint %s is not Fingerprint(name, message)", e.Fingerprint)
	}
}

func TestNextPicksRegressedThenNewThenActive(t *testing.T) {
	tr := NewTracker(Budget{})
	tr.Observe(obs("r", "comes back", "a1", "stays", "a2", "stays too"))
	tr.Observe(obs("a1", "stays", "a2", "stays too", "n1", "first new", "n2", "second new"))
	// r fixed, a1 a2 active, n1 n2 new.
	tr.Observe(obs("a1", "stays", "a2", "stays too", "n1", "first new", "n2", "second new", "r", "comes back"))
	// Now r regressed, n1 n2 active (seen twice), a1 a2 active.
	e, ok := tr.Next()
	if !ok || e.Name != "r" || e.Status != StatusRegressed {
		t.Fatalf("Next = %+v, %v; want the regressed error r", e, ok)
	}

	tr2 := NewTracker(Budget{})
	tr2.Observe(obs("a", "old"))
	tr2.Observe(obs("a", "old", "n1", "new one", "n2", "new two"))
	e, ok = tr2.Next()
	if !ok || e.Name != "n1" {
		t.Fatalf("Next = %+v, %v; want n1, the first-seen new error ahead of the active one", e, ok)
	}

	tr3 := NewTracker(Budget{})
	tr3.Observe(obs("a", "one", "b", "two"))
	tr3.Observe(obs("b", "two", "a", "one"))
	e, ok = tr3.Next()
	if !ok || e.Name != "a" {
		t.Fatalf("Next = %+v, %v; want a: among active errors the first seen wins, whatever the check's order", e, ok)
	}
}

func TestNextReportsNothingWhenCheckPasses(t *testing.T) {
	tr := NewTracker(Budget{})
	tr.Observe(obs("a", "boom"))
	tr.Observe(nil)
	if e, ok := tr.Next(); ok {
		t.Fatalf("Next = %+v after a passing check, want nothing", e)
	}
	if err := tr.Err(); err != nil {
		t.Fatalf("Err = %v after a passing check, want nil", err)
	}
}

// runLoop drives the loop of the Tracker doc: check, pick, spend, re-ask.
// check returns the errors of round n (0 = the first generation's output).
func runLoop(tr *Tracker, rounds int, check func(n int) []Observed) (reasks int, err error) {
	for n := 0; n < rounds; n++ {
		errs := check(n)
		tr.Observe(errs)
		if len(errs) == 0 {
			return reasks, nil
		}
		e, ok := tr.Next()
		if !ok {
			return reasks, tr.Err()
		}
		if err := tr.Spend(e.Fingerprint, fmt.Sprintf("output %d", n)); err != nil {
			return reasks, err
		}
		reasks++
	}
	return reasks, errors.New("loop did not end")
}

func TestAlwaysInvalidMakesExactlyMaxErrorAttemptsReasks(t *testing.T) {
	tr := NewTracker(Budget{MaxErrorAttempts: 5, MaxAttempts: 100})
	reasks, err := runLoop(tr, 50, func(int) []Observed { return obs("schema", "missing property 'es'") })
	if reasks != 5 {
		t.Errorf("re-asks = %d, want exactly 5", reasks)
	}
	var stop *StopError
	if !errors.As(err, &stop) || stop.Reason != ReasonMaxErrorAttempts || !errors.Is(err, ErrBudget) {
		t.Fatalf("err = %v, want a StopError max_error_attempts wrapping ErrBudget", err)
	}
	if stop.Fingerprint != Fingerprint("schema", "missing property 'es'") {
		t.Errorf("StopError names %q, want the exhausted error's fingerprint", stop.Fingerprint)
	}
	if got := tr.Errors()[0].Attempts; got != 5 {
		t.Errorf("error attempts = %d, want 5", got)
	}
	if err := tr.Spend(stop.Fingerprint, "another"); !errors.Is(err, ErrBudget) {
		t.Errorf("Spend past the budget = %v, want ErrBudget", err)
	}
}

func TestDefaultBudgets(t *testing.T) {
	var tr Tracker // the zero Tracker uses the default budget
	reasks, err := runLoop(&tr, 50, func(int) []Observed { return obs("v", "bad") })
	if reasks != DefaultMaxErrorAttempts || !errors.Is(err, ErrBudget) {
		t.Errorf("zero Tracker: %d re-asks, err %v; want %d and ErrBudget", reasks, err, DefaultMaxErrorAttempts)
	}
	tr2 := NewTracker(Budget{})
	reasks, err = runLoop(tr2, 50, func(n int) []Observed { return obs("v", fmt.Sprintf("error kind %c", 'a'+n)) })
	if reasks != DefaultMaxAttempts || !errors.Is(err, ErrBudget) {
		t.Errorf("changing errors: %d re-asks, err %v; want %d and ErrBudget", reasks, err, DefaultMaxAttempts)
	}
}

func TestChangingErrorsHitMaxAttempts(t *testing.T) {
	tr := NewTracker(Budget{MaxAttempts: 4, MaxErrorAttempts: 3})
	// Each answer fixes the error it was asked about and makes a new one.
	reasks, err := runLoop(tr, 50, func(n int) []Observed { return obs("v", fmt.Sprintf("error kind %c", 'a'+n)) })
	if reasks != 4 {
		t.Errorf("re-asks = %d, want 4 (MaxAttempts)", reasks)
	}
	var stop *StopError
	if !errors.As(err, &stop) || stop.Reason != ReasonMaxAttempts || stop.Attempts != 4 {
		t.Fatalf("err = %v, want StopError max_attempts after 4 re-asks", err)
	}
	if tr.Attempts() != 4 {
		t.Errorf("Attempts() = %d, want 4", tr.Attempts())
	}
	for _, e := range tr.Errors()[:4] {
		if e.Attempts != 1 || e.Status != StatusFixed {
			t.Errorf("error %q: attempts %d status %s, want 1 and fixed", e.Message, e.Attempts, e.Status)
		}
	}
}

func TestPerErrorBudgetMovesOnToOtherErrors(t *testing.T) {
	tr := NewTracker(Budget{MaxErrorAttempts: 2, MaxAttempts: 10})
	tr.Observe(obs("a", "stubborn", "b", "other"))
	var picked []string
	for range 4 {
		e, ok := tr.Next()
		if !ok {
			break
		}
		picked = append(picked, e.Name)
		if err := tr.Spend(e.Fingerprint, "out "+fmt.Sprint(len(picked))); err != nil {
			t.Fatalf("Spend: %v", err)
		}
		tr.Observe(obs("a", "stubborn", "b", "other"))
	}
	if got := strings.Join(picked, ","); got != "a,a,b,b" {
		t.Errorf("picked %s, want a,a,b,b: each error gets its own budget", got)
	}
	if _, ok := tr.Next(); ok {
		t.Error("Next still offers an error after both budgets are spent")
	}
	if err := tr.Err(); !errors.Is(err, ErrBudget) {
		t.Errorf("Err = %v, want ErrBudget", err)
	}
}

func TestSpendDetectsRepeatedOutput(t *testing.T) {
	tests := []struct {
		name      string
		outputs   []string
		wantStuck bool
	}{
		{"same output after feedback", []string{"{}", "{}"}, true},
		{"different outputs", []string{"{}", `{"a":1}`, "{}"}, false},
		{"empty outputs are never compared", []string{"", ""}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := NewTracker(Budget{})
			var err error
			for _, out := range tt.outputs {
				tr.Observe(obs("v", "bad"))
				e, _ := tr.Next()
				if err = tr.Spend(e.Fingerprint, out); err != nil {
					break
				}
			}
			if got := errors.Is(err, ErrStuck); got != tt.wantStuck {
				t.Fatalf("err = %v, stuck %v, want stuck %v", err, got, tt.wantStuck)
			}
			if tt.wantStuck && tr.Attempts() != len(tt.outputs)-1 {
				t.Errorf("Attempts = %d: a refused Spend must not count", tr.Attempts())
			}
		})
	}
}

func TestStuckAfterUnchangedErrorSet(t *testing.T) {
	tr := NewTracker(Budget{StuckAfter: 2, MaxAttempts: 20, MaxErrorAttempts: 20})
	reasks, err := runLoop(tr, 20, func(int) []Observed { return obs("a", "x", "b", "y") })
	// Check 1 (no re-ask yet), re-ask, check 2 (run 1), re-ask, check 3 (run 2): stuck.
	if reasks != 2 || !errors.Is(err, ErrStuck) {
		t.Fatalf("re-asks %d, err %v; want 2 and ErrStuck", reasks, err)
	}

	off := NewTracker(Budget{MaxAttempts: 6, MaxErrorAttempts: 20})
	_, err = runLoop(off, 20, func(int) []Observed { return obs("a", "x", "b", "y") })
	if errors.Is(err, ErrStuck) {
		t.Fatalf("StuckAfter 0 must not detect an unchanged set; err %v", err)
	}

	changing := NewTracker(Budget{StuckAfter: 2, MaxAttempts: 6, MaxErrorAttempts: 20})
	_, err = runLoop(changing, 20, func(n int) []Observed {
		if n%2 == 0 {
			return obs("a", "x")
		}
		return obs("a", "x", "b", "y")
	})
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("a set that keeps changing is not stuck; err %v, want ErrBudget", err)
	}
}

func TestAuditRecordsEveryReaskAndItsResult(t *testing.T) {
	clock := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tr := NewTracker(Budget{Now: func() time.Time { clock = clock.Add(time.Second); return clock }})
	tr.Observe(obs("a", "one", "b", "two"))
	mustSpend(t, tr, "a", "out1")
	tr.Observe(obs("a", "one", "b", "two")) // a still failing
	mustSpend(t, tr, "a", "out2")
	tr.Observe(obs("b", "two")) // a fixed
	mustSpend(t, tr, "b", "out3")
	tr.Observe(obs("a", "one")) // b fixed but a regressed
	mustSpend(t, tr, "a", "out4")

	audit := tr.Audit()
	want := []string{ResultStillFailing, ResultFixed, ResultRegressed, ResultPending}
	if len(audit) != len(want) {
		t.Fatalf("audit has %d entries, want %d", len(audit), len(want))
	}
	for i, a := range audit {
		if a.Result != want[i] || a.Attempt != i+1 || len(a.OutputHash) != 16 {
			t.Errorf("audit[%d] = %+v, want result %q, attempt %d, a 16-char output hash", i, a, want[i], i+1)
		}
		if wantTime := time.Date(2025, 3, 1, 12, 0, i+1, 0, time.UTC); !a.Time.Equal(wantTime) {
			t.Errorf("audit[%d].Time = %v, want %v from Budget.Now", i, a.Time, wantTime)
		}
	}
}

func mustSpend(t *testing.T, tr *Tracker, name, out string) {
	t.Helper()
	for _, e := range tr.Errors() {
		if e.Name == name {
			if err := tr.Spend(e.Fingerprint, out); err != nil {
				t.Fatalf("Spend(%s): %v", name, err)
			}
			return
		}
	}
	t.Fatalf("no tracked error named %s", name)
}

func TestSpendOnUnknownFingerprintIsAnError(t *testing.T) {
	tr := NewTracker(Budget{})
	err := tr.Spend("0123456789abcdef", "x")
	var stop *StopError
	if err == nil || errors.As(err, &stop) {
		t.Fatalf("Spend(unknown) = %v, want a plain error, not a StopError", err)
	}
}

func TestTrackerJSONRoundTripResumes(t *testing.T) {
	b := Budget{MaxErrorAttempts: 3, StuckAfter: 3, Now: func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) }}
	tr := NewTracker(b)
	tr.Observe(obs("a", "one", "b", "two"))
	mustSpend(t, tr, "a", "out1")
	tr.Observe(obs("b", "two"))
	mustSpend(t, tr, "b", "out2")
	tr.Observe(obs("b", "two"))

	data, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	resumed := NewTracker(b)
	if err := json.Unmarshal(data, resumed); err != nil {
		t.Fatalf("Unmarshal: %v", err)
	}
	if !reflect.DeepEqual(resumed.Errors(), tr.Errors()) || resumed.Attempts() != tr.Attempts() {
		t.Fatalf("resumed errors %+v attempts %d, want %+v attempts %d", resumed.Errors(), resumed.Attempts(), tr.Errors(), tr.Attempts())
	}
	if !reflect.DeepEqual(resumed.Audit(), tr.Audit()) {
		t.Fatalf("resumed audit %+v, want %+v", resumed.Audit(), tr.Audit())
	}
	again, _ := json.Marshal(resumed)
	if string(again) != string(data) {
		t.Fatalf("re-encoded state differs:\n%s\n%s", again, data)
	}
	// The resumed tracker goes on as the original would: the same output
	// passed again is stuck, the index finds known fingerprints.
	e, ok := resumed.Next()
	if !ok || e.Name != "b" {
		t.Fatalf("resumed Next = %+v, %v; want b", e, ok)
	}
	if err := resumed.Spend(e.Fingerprint, "out2"); !errors.Is(err, ErrStuck) {
		t.Fatalf("resumed Spend with the last output = %v, want ErrStuck", err)
	}
}

func TestTrackedErrorJSONFieldNames(t *testing.T) {
	data, err := json.Marshal(TrackedError{Fingerprint: "f", Name: "n", Message: "m", Normalized: "z", Attempts: 2, Status: StatusActive})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"fingerprint":"f","name":"n","message":"m","normalized":"z","attempts":2,"status":"active"}`
	if string(data) != want {
		t.Fatalf("TrackedError JSON = %s, want %s", data, want)
	}
}

func TestUnmarshalRejectsBrokenState(t *testing.T) {
	for _, in := range []string{`{"errors":[{"fingerprint":""}]}`, `{"errors":[{"fingerprint":"a"},{"fingerprint":"a"}]}`, `[`} {
		if err := json.Unmarshal([]byte(in), NewTracker(Budget{})); err == nil {
			t.Errorf("Unmarshal(%s) succeeded, want an error", in)
		}
	}
}

// A byte-identical invalid answer stopped an item after one re-ask, and
// no setting could change the rule: Budget.MaxSameOutput does.
func TestTheSameOutputRuleIsABudgetSetting(t *testing.T) {
	tests := []struct {
		name          string
		maxSameOutput int
		reasks        int // re-asks made before Spend says stuck; -1 for never
	}{
		{"default: the second re-ask about one output is stuck", 0, 1},
		{"one, as the default", 1, 1},
		{"three re-asks about one output", 3, 3},
		{"off", -1, -1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tr := NewTracker(Budget{MaxAttempts: 20, MaxErrorAttempts: 10, MaxSameOutput: tc.maxSameOutput})
			tr.Observe([]Observed{{Name: "item", Message: "invalid: missing field"}})
			fp := tr.Errors()[0].Fingerprint
			made := 0
			for ; made < 10; made++ {
				err := tr.Spend(fp, `{"same": "answer"}`)
				if err != nil {
					if !errors.Is(err, ErrStuck) {
						t.Fatalf("Spend after %d re-asks: %v; want a stuck error or none", made, err)
					}
					break
				}
				tr.Observe([]Observed{{Name: "item", Message: "invalid: missing field"}})
			}
			want := tc.reasks
			if want < 0 {
				want = 10
			}
			if made != want {
				t.Errorf("%d re-asks about one output before the loop stopped; want %d", made, want)
			}
			// The run is part of the saved state.
			if tc.reasks > 1 {
				b, err := tr.MarshalJSON()
				if err != nil {
					t.Fatal(err)
				}
				back := NewTracker(Budget{MaxAttempts: 20, MaxErrorAttempts: 10, MaxSameOutput: tc.maxSameOutput})
				if err := back.UnmarshalJSON(b); err != nil {
					t.Fatal(err)
				}
				if err := back.Spend(fp, `{"same": "answer"}`); !errors.Is(err, ErrStuck) {
					t.Errorf("a restored tracker's Spend: %v; want stuck, the run counted", err)
				}
			}
		})
	}
}
