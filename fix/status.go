package fix

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tenaxhq/tenax/heal"
)

// statusOrder is the order errors are listed in: the ones the loop picks
// first, then the fixed.
var statusOrder = []heal.Status{heal.StatusRegressed, heal.StatusNew, heal.StatusActive, heal.StatusFixed}

// Group is errors with the same normalized message in several tests or
// files: fixing one often fixes all.
type Group struct {
	Normalized string
	Errors     []heal.TrackedError
}

// Groups returns the groups of two or more unfixed errors sharing a
// normalized message, in first-seen order.
func Groups(errs []heal.TrackedError) []Group {
	var out []Group
	index := map[string]int{}
	for _, e := range errs {
		if e.Status == heal.StatusFixed {
			continue
		}
		i, ok := index[e.Normalized]
		if !ok {
			i = len(out)
			index[e.Normalized] = i
			out = append(out, Group{Normalized: e.Normalized})
		}
		out[i].Errors = append(out[i].Errors, e)
	}
	kept := out[:0]
	for _, g := range out {
		if len(g.Errors) > 1 {
			kept = append(kept, g)
		}
	}
	return kept
}

// TrackedErrors decodes the errors of a state's tracker.
func (st *State) TrackedErrors() ([]heal.TrackedError, error) {
	var t heal.Tracker
	if err := json.Unmarshal(st.Tracker, &t); err != nil {
		return nil, err
	}
	return t.Errors(), nil
}

// WriteStatus writes a fix run's state for people: its outcome, budgets,
// errors by status with their fingerprints and attempts, the groups, and
// how to resume or undo.
func WriteStatus(w io.Writer, dir string, st *State) error {
	errs, err := st.TrackedErrors()
	if err != nil {
		return err
	}
	var b strings.Builder
	outcome := CurrentOutcome(dir, st)
	fmt.Fprintf(&b, "Fix run %s (%s): %s", st.ID, st.Name, outcome)
	switch {
	case outcome == OutcomeStale:
		fmt.Fprintf(&b, ": the state says running, but no process holds the run any more (killed, or the machine stopped); tenax fix --resume %s continues it", st.ID)
	case st.Reason != "":
		fmt.Fprintf(&b, ": %s", st.Reason)
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "Workdir: %s\n", st.Workdir)
	spent := 0
	for _, a := range st.Attempts {
		spent = max(spent, a.Attempt)
	}
	if st.Pending != nil {
		spent = max(spent, st.Pending.Attempt)
	}
	fmt.Fprintf(&b, "Attempts: %d of %d (at most %d per error), checks: %d", spent, st.Budget.MaxAttempts, st.Budget.MaxErrorAttempts, st.Checks)
	if st.Usage.Total() > 0 {
		fmt.Fprintf(&b, ", tokens %d in / %d out", st.Usage.InputTokens, st.Usage.OutputTokens)
	}
	if st.CostUSD > 0 {
		fmt.Fprintf(&b, ", cost $%.4f", st.CostUSD)
	}
	b.WriteByte('\n')
	counts := map[heal.Status]int{}
	for _, e := range errs {
		counts[e.Status]++
	}
	parts := make([]string, 0, len(statusOrder))
	for _, s := range statusOrder {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	fmt.Fprintf(&b, "Errors: %s\n", strings.Join(parts, ", "))
	for _, s := range statusOrder {
		for _, e := range errs {
			if e.Status != s {
				continue
			}
			fmt.Fprintf(&b, "  %-9s  %s  %s (%d/%d attempts)%s\n", e.Status, e.Fingerprint, e.Name, e.Attempts, st.Budget.MaxErrorAttempts, statusMark(st, e))
			fmt.Fprintf(&b, "             %s\n", firstLine(e.Message))
		}
	}
	if gs := Groups(errs); len(gs) > 0 {
		b.WriteString("Groups (the same error in several places; fixing one often fixes all):\n")
		for _, g := range gs {
			names := make([]string, len(g.Errors))
			for i, e := range g.Errors {
				names[i] = e.Name
			}
			fmt.Fprintf(&b, "  %d× %s\n     in %s\n", len(g.Errors), firstLine(g.Normalized), strings.Join(names, ", "))
		}
	}
	var last string
	for _, a := range st.Attempts {
		if a.Patch != "" && !a.Reverted {
			last = a.Patch
		}
	}
	if last != "" {
		fmt.Fprintf(&b, "Undo an attempt's edit: git apply -R %s\n", filepath.Join(dir, filepath.FromSlash(last)))
	}
	if st.Outcome != OutcomePassed {
		fmt.Fprintf(&b, "Resume: tenax fix --resume %s\n", st.ID)
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// statusMark says when the operator's word sets e apart: skipped, or put
// first.
func statusMark(st *State, e heal.TrackedError) string {
	switch {
	case matchesAny(e.Fingerprint, st.Skip):
		return " [skipped]"
	case e.Status != heal.StatusFixed && matchesAny(e.Fingerprint, st.Priority):
		return " [first]"
	}
	return ""
}

// WriteResult writes how a fix run ended, as tenax fix prints it: the
// outcome with its attempts and checks, the remaining errors, where the
// run's files are, and how to resume.
func WriteResult(w io.Writer, r *Result) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Fix run %s: %s after %s and %s", r.ID, r.Outcome, plural(r.Attempts, "attempt"), plural(r.Checks, "check"))
	if r.Reason != "" && r.Outcome != OutcomePassed {
		fmt.Fprintf(&b, " (%s)", r.Reason)
	}
	b.WriteByte('\n')
	if r.Outcome != OutcomePassed && len(r.Remaining) > 0 {
		fmt.Fprintf(&b, "Remaining errors (%d):\n", len(r.Remaining))
		for _, e := range r.Remaining {
			fmt.Fprintf(&b, "  %s  %-9s %s (%s): %s\n", e.Fingerprint, e.Status, e.Name, plural(e.Attempts, "attempt"), firstLine(e.Message))
		}
	}
	fmt.Fprintf(&b, "State: %s (audit.jsonl, attempts/*.patch)\n", r.Dir)
	if r.Outcome != OutcomePassed {
		fmt.Fprintf(&b, "Resume: tenax fix --resume %s\n", r.ID)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural is n with noun, a regular English noun, in the singular or the
// plural: "1 error", "3 errors".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
