package fix_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
)

// operatorFixer fixes the error it is given by writing "ok" into its
// file, as fixer.sh does, and on the attempts listed in instruct gives the
// run those instructions, as the page does while the fixer works. It
// keeps every request.
type operatorFixer struct {
	dir, home string
	instruct  map[int][]fix.Instruction
	got       *[]fix.Request
	t         *testing.T
}

func (f operatorFixer) Fix(_ context.Context, req fix.Request) (fix.Answer, error) {
	*f.got = append(*f.got, req)
	for _, in := range f.instruct[req.Attempt] {
		st, err := fix.OpenStore(f.home, req.Run)
		if err != nil {
			f.t.Error(err)
			continue
		}
		if err := st.Instruct(in); err != nil {
			f.t.Errorf("attempt %d: instruct %s: %v", req.Attempt, in.Kind, err)
		}
	}
	name := strings.TrimPrefix(req.Error.Name, "Test") + ".txt"
	return fix.Answer{Summary: "wrote " + name}, os.WriteFile(filepath.Join(f.dir, name), []byte("ok\n"), 0o644)
}

// fp is the fingerprint of check.sh's error for X with value v.
func fp(x, v string) string {
	return heal.Fingerprint("Test"+x, "calc_test.go:7: "+x+"() = "+v+", want ok")
}

func TestOperatorInstructionsTakeEffectOnTheNextAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		instruct []fix.Instruction
		// order is the errors the fixer is asked about, in order.
		order   []string
		outcome string
	}{
		{
			name:     "skip",
			instruct: []fix.Instruction{{Kind: fix.InstructSkip, Fingerprint: fp("B", "2"), By: "the web page"}},
			order:    []string{"TestA", "TestC", "TestD"},
			outcome:  fix.OutcomeFailed,
		},
		{
			name:     "prioritize",
			instruct: []fix.Instruction{{Kind: fix.InstructPrioritize, Fingerprint: fp("C", "3")[:8]}},
			order:    []string{"TestA", "TestC", "TestB", "TestD"},
			outcome:  fix.OutcomePassed,
		},
		{
			name: "the latest put first goes first",
			instruct: []fix.Instruction{
				{Kind: fix.InstructPrioritize, Fingerprint: fp("C", "3")},
				{Kind: fix.InstructPrioritize, Fingerprint: fp("D", "4")},
			},
			order:   []string{"TestA", "TestD", "TestC", "TestB"},
			outcome: fix.OutcomePassed,
		},
		{
			name: "skip after put first",
			instruct: []fix.Instruction{
				{Kind: fix.InstructPrioritize, Fingerprint: fp("C", "3")},
				{Kind: fix.InstructSkip, Fingerprint: fp("C", "3")},
			},
			order:   []string{"TestA", "TestB", "TestD"},
			outcome: fix.OutcomeFailed,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3", "D": "4"})
			var got []fix.Request
			cfg := r.config(heal.Budget{}, nil)
			cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, instruct: map[int][]fix.Instruction{1: tc.instruct}, got: &got, t: t}
			res, err := fix.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if names := names(got); !slices.Equal(names, tc.order) {
				t.Fatalf("the fixer was asked about %v; want %v: the instructions given during attempt 1 decide attempt 2 on", names, tc.order)
			}
			if res.Outcome != tc.outcome {
				t.Errorf("outcome %s (%s); want %s", res.Outcome, res.Reason, tc.outcome)
			}
			// Recorded: in the state, and in the audit trail between
			// attempts 1 and 2.
			if len(res.State.Operator) != len(tc.instruct) {
				t.Errorf("the state records %d applied instructions; want %d", len(res.State.Operator), len(tc.instruct))
			}
			var kinds []string
			for _, rec := range audit(t, res) {
				switch {
				case rec.Kind == "attempt":
					kinds = append(kinds, "attempt")
				case rec.Kind == "operator" && rec.Operator != nil:
					kinds = append(kinds, rec.Operator.Kind)
					if rec.Name == "" {
						t.Errorf("the operator record names no error: %+v", rec)
					}
				}
			}
			want := append(append([]string{"attempt"}, kindsOf(tc.instruct)...), "attempt")
			if len(kinds) < len(want) || !slices.Equal(kinds[:len(want)], want) {
				t.Errorf("the audit trail's attempts and instructions are %v; want %v first", kinds, want)
			}
			queued, err := (&fix.Store{Dir: res.Dir}).Queued(res.State)
			if err != nil || len(queued) != 0 {
				t.Errorf("%d instructions still queued (%v); want none: each is applied once", len(queued), err)
			}
		})
	}
}

func kindsOf(ins []fix.Instruction) []string {
	var out []string
	for _, in := range ins {
		out = append(out, in.Kind)
	}
	return out
}

func TestOperatorContextReachesTheNextAttempts(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	var got []fix.Request
	cfg := r.config(heal.Budget{}, nil)
	cfg.Context = "From the spec."
	cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, got: &got, t: t, instruct: map[int][]fix.Instruction{1: {
		{Kind: fix.InstructContext, Text: "Every test reads ok."},
		{Kind: fix.InstructContext, Text: "C is special.", Fingerprint: fp("C", "3")},
	}}}
	if _, err := fix.Start(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"From the spec.",
		"From the spec.\n\nEvery test reads ok.",
		"From the spec.\n\nEvery test reads ok.\n\nC is special.",
	}
	if len(got) != len(want) {
		t.Fatalf("%d requests; want %d", len(got), len(want))
	}
	for i, req := range got {
		if req.Context != want[i] {
			t.Errorf("attempt %d (%s) got context %q; want %q", i+1, req.Error.Name, req.Context, want[i])
		}
	}
}

func TestPrioritizeFlagGoesFirstAndSurvivesResume(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
	cfg.Prioritize = []string{fp("C", "3")[:8]}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	// One attempt: on C. Raise the budget and resume with B put first:
	// B, then A (C is fixed).
	cfg = r.config(heal.Budget{MaxAttempts: 8}, nil)
	cfg.Prioritize = []string{fp("B", "2")[:8]}
	if _, err := fix.Resume(context.Background(), cfg, res.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := names(r.requests()), []string{"TestC", "TestB", "TestA"}; !slices.Equal(got, want) {
		t.Errorf("the fixer was asked about %v; want %v", got, want)
	}
}

func TestQueuedInstructionsApplyWhenTheRunResumes(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxAttempts: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	store, err := fix.OpenStore(r.home, res.ID)
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Instruct(fix.Instruction{Kind: fix.InstructSkip, Fingerprint: fp("B", "2")}); err != nil {
		t.Fatal(err)
	}
	st, err := store.Load()
	if err != nil {
		t.Fatal(err)
	}
	if q, err := store.Queued(st); err != nil || len(q) != 1 {
		t.Fatalf("queued %v (%v); want the skip, waiting for the run", q, err)
	}
	if _, err := fix.Resume(context.Background(), r.config(heal.Budget{}, nil), res.ID); err != nil {
		t.Fatal(err)
	}
	if got, want := names(r.requests()), []string{"TestA", "TestC"}; !slices.Equal(got, want) {
		t.Errorf("the fixer was asked about %v; want %v: the skip queued while the run was stopped applies on resume", got, want)
	}
}

func TestInstructionsThatCannotApplyAreRefused(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxAttempts: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	store := &fix.Store{Dir: res.Dir}
	tests := []struct {
		name string
		in   fix.Instruction
		want string
	}{
		{"an unknown kind", fix.Instruction{Kind: "delete", Fingerprint: fp("B", "2")}, "unknown instruction"},
		{"no error named", fix.Instruction{Kind: fix.InstructSkip}, "which error"},
		{"an error the run lacks", fix.Instruction{Kind: fix.InstructSkip, Fingerprint: "0123abcd"}, "has no error"},
		{"no fingerprint at all", fix.Instruction{Kind: fix.InstructPrioritize, Fingerprint: "TestB"}, "no fingerprint"},
		{"a fixed error put first", fix.Instruction{Kind: fix.InstructPrioritize, Fingerprint: fp("A", "1")}, "is fixed"},
		{"an empty context", fix.Instruction{Kind: fix.InstructContext, Text: "  \n"}, "empty"},
		{"a huge context", fix.Instruction{Kind: fix.InstructContext, Text: strings.Repeat("x", 9000)}, "at most"},
	}
	for _, tc := range tests {
		err := store.Instruct(tc.in)
		var ie *fix.InstructionError
		if !errors.As(err, &ie) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Instruct returned %v; want an *InstructionError saying %q", tc.name, err, tc.want)
		}
	}
	st, _ := store.Load()
	if q, _ := store.Queued(st); len(q) != 0 {
		t.Errorf("refused instructions were queued: %v", q)
	}
}

func TestAPassedRunTakesNoInstruction(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	if err != nil || res.Outcome != fix.OutcomePassed {
		t.Fatalf("outcome %v, %v; want passed", res, err)
	}
	err = (&fix.Store{Dir: res.Dir}).Instruct(fix.Instruction{Kind: fix.InstructContext, Text: "late"})
	if err == nil || !strings.Contains(err.Error(), "nothing is left to fix") {
		t.Errorf("Instruct on a passed run returned %v; want a refusal", err)
	}
}

// TestAHalfWrittenInstructionWaits: the loop reads control.jsonl while the
// page may be writing it: a line without its newline is not applied (nor
// lost) until it is whole.
func TestAHalfWrittenInstructionWaits(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{MaxAttempts: 1}, nil))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(res.Dir, "control.jsonl")
	line := `{"kind":"skip","fingerprint":"` + fp("B", "2") + `"}`
	if err := os.WriteFile(path, []byte(line[:20]), 0o644); err != nil {
		t.Fatal(err)
	}
	store := &fix.Store{Dir: res.Dir}
	if q, err := store.Queued(res.State); err != nil || len(q) != 0 {
		t.Fatalf("a half line reads as %v (%v); want nothing yet", q, err)
	}
	if err := os.WriteFile(path, []byte(line+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if q, err := store.Queued(res.State); err != nil || len(q) != 1 || q[0].Kind != fix.InstructSkip {
		t.Errorf("the whole line reads as %v (%v); want the skip", q, err)
	}
}

func TestEveryChecksOutputIsKept(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	res, err := fix.Start(context.Background(), r.config(heal.Budget{}, nil))
	if err != nil {
		t.Fatal(err)
	}
	var outputs []string
	for _, rec := range audit(t, res) {
		if rec.Check != nil && rec.Check.Output != "" {
			outputs = append(outputs, rec.Check.Output)
		}
	}
	if len(outputs) != res.Checks {
		t.Fatalf("%d checks name their output (%v); want all %d", len(outputs), outputs, res.Checks)
	}
	first, err := os.ReadFile(filepath.Join(res.Dir, outputs[0]))
	if err != nil || !strings.Contains(string(first), "--- FAIL: TestA") {
		t.Errorf("the first check's output %s reads %q (%v); want check.sh's FAIL lines", outputs[0], first, err)
	}
	last, _ := os.ReadFile(filepath.Join(res.Dir, outputs[len(outputs)-1]))
	if strings.TrimSpace(string(last)) != "ok" {
		t.Errorf("the last check's output reads %q; want the passing check's ok", last)
	}
}

func TestStatusMarksTheErrorsPutFirst(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2", "C": "3"})
	cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
	cfg.Prioritize = []string{fp("B", "2")[:8], fp("C", "3")[:8]}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if err := fix.WriteStatus(&out, res.Dir, res.State); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		first bool
	}{{"TestA", false}, {"TestB", false}, {"TestC", true}} {
		var line string
		for _, l := range strings.Split(out.String(), "\n") {
			if strings.Contains(l, " "+c.name+" ") {
				line = l
			}
		}
		if got := strings.HasSuffix(line, "[first]"); got != c.first {
			t.Errorf("%s's status line %q marked first: %v; want %v (B, put first, is fixed; C is next)", c.name, line, got, c.first)
		}
	}
}

func TestThePagesContextOutlivesAResume(t *testing.T) {
	t.Parallel()
	r := newRepo(t, map[string]string{"A": "1", "B": "2"})
	var got []fix.Request
	cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
	cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, got: &got, t: t, instruct: map[int][]fix.Instruction{1: {
		{Kind: fix.InstructContext, Text: "Every test reads ok."},
	}}}
	res, err := fix.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg = r.config(heal.Budget{MaxAttempts: 8}, nil)
	cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, got: &got, t: t}
	if _, err := fix.Resume(context.Background(), cfg, res.ID); err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[1].Context != "Every test reads ok." {
		t.Errorf("after the resume the fixer got %d requests, the last with context %q; want the page's context kept", len(got), got[len(got)-1].Context)
	}
}

// TestAResumeAddsToTheContextGivenBefore: a resume replaced the run's
// --context with the spec's context alone when --context was not given
// again (docs/fix.md says --context adds to the run's own).
func TestAResumeAddsToTheContextGivenBefore(t *testing.T) {
	t.Parallel()
	const spec, first, second = "The spec's context.", "Given at the start.", "Given at the resume."
	for _, c := range []struct {
		name   string
		resume string // --context at the resume
		want   string
	}{
		{"no --context at the resume", "", spec + "\n\n" + first},
		{"the same --context again", first, spec + "\n\n" + first},
		{"a new --context", second, spec + "\n\n" + first + "\n\n" + second},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t, map[string]string{"A": "1", "B": "2"})
			var got []fix.Request
			cfg := r.config(heal.Budget{MaxAttempts: 1}, nil)
			cfg.Context, cfg.AddedContext = spec+"\n\n"+first, first
			cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, got: &got, t: t}
			res, err := fix.Start(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			cfg = r.config(heal.Budget{MaxAttempts: 8}, nil)
			cfg.Context, cfg.AddedContext = spec, c.resume
			if c.resume != "" {
				cfg.Context = spec + "\n\n" + c.resume
			}
			cfg.Fixer = operatorFixer{dir: r.dir, home: r.home, got: &got, t: t}
			if _, err := fix.Resume(context.Background(), cfg, res.ID); err != nil {
				t.Fatal(err)
			}
			if len(got) < 2 || got[len(got)-1].Context != c.want {
				t.Errorf("after the resume the fixer got %d requests, the last with context %q; want %q", len(got), got[len(got)-1].Context, c.want)
			}
		})
	}
}
