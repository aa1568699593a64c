package fix

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// statusOrder is the order errors are listed in: the ones the loop picks
// first, then the fixed.
var statusOrder = []heal.Status{heal.StatusRegressed, heal.StatusNew, heal.StatusActive, StatusAbandoned, heal.StatusFixed}

// Group is errors with the same normalized message in the same test file
// or at the same location: fixing one often fixes all.
type Group struct {
	Normalized string
	Errors     []heal.TrackedError
}

// Groups returns the groups of two or more unfixed errors that share a
// normalized message and a file: the test file their names give
// (tests/test_a.py::test_b), or a file:line their messages name. A shared
// message alone groups nothing: `assert -1 == 5` in two unrelated tests is
// two errors, and the fixer must not be told that one fix may fix both.
// Groups are in first-seen order, and so are their errors.
func Groups(errs []heal.TrackedError) []Group {
	type cluster struct {
		first   int // the position in errs of its earliest error
		members []int
		files   map[string]bool
	}
	var clusters []*cluster
	for i, e := range errs {
		if e.Status == heal.StatusFixed {
			continue
		}
		files := errorFiles(e)
		if len(files) == 0 {
			continue
		}
		c := &cluster{first: i, members: []int{i}, files: map[string]bool{}}
		for _, f := range files {
			c.files[f] = true
		}
		// Merge every cluster of this message that shares a file with e.
		kept := clusters[:0]
		for _, o := range clusters {
			if errs[o.first].Normalized != e.Normalized || !sharesFile(o.files, files) {
				kept = append(kept, o)
				continue
			}
			c.first = min(c.first, o.first)
			c.members = append(c.members, o.members...)
			for f := range o.files {
				c.files[f] = true
			}
		}
		clusters = append(kept, c)
	}
	slices.SortFunc(clusters, func(a, b *cluster) int { return a.first - b.first })
	var out []Group
	for _, c := range clusters {
		if len(c.members) < 2 {
			continue
		}
		slices.Sort(c.members)
		g := Group{Normalized: errs[c.first].Normalized}
		for _, i := range c.members {
			g.Errors = append(g.Errors, errs[i])
		}
		out = append(out, g)
	}
	return out
}

// groupOf names the other errors of e's group (Groups), for the fixer.
func groupOf(errs []heal.TrackedError, e heal.TrackedError) []string {
	for _, g := range Groups(errs) {
		if !slices.ContainsFunc(g.Errors, func(o heal.TrackedError) bool { return o.Fingerprint == e.Fingerprint }) {
			continue
		}
		var names []string
		for _, o := range g.Errors {
			if o.Fingerprint != e.Fingerprint {
				names = append(names, o.Name)
			}
		}
		return names
	}
	return nil
}

// namedFile is a name that is a file's path (tsc's and eslint's errors are
// named by their file).
var namedFile = lazyregexp.New(`^[\w.\-@+/\\]*[\w\-@+]\.[A-Za-z]\w*$`)

// errorFiles are the files an error belongs to: the test file of its name
// (pytest's node id, jest's file title, a file name) and the files of the
// file:line locations in its message.
func errorFiles(e heal.TrackedError) []string {
	var out []string
	name, _, _ := strings.Cut(e.Name, "::")
	name, _, _ = strings.Cut(name, " › ")
	name, _, _ = strings.Cut(name, " > ")
	if namedFile().MatchString(name) {
		out = append(out, cleanFile(name))
	}
	for _, m := range locationPattern().FindAllStringSubmatch(e.Message, 20) {
		if f := cleanFile(m[1]); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

func cleanFile(p string) string {
	return strings.TrimPrefix(filepath.ToSlash(filepath.Clean(p)), "./")
}

func sharesFile(set map[string]bool, files []string) bool {
	for _, f := range files {
		if set[f] {
			return true
		}
	}
	return false
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
	spent := st.spent()
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
		counts[ShownStatus(e, st.Budget)]++
	}
	parts := make([]string, 0, len(statusOrder))
	for _, s := range statusOrder {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	fmt.Fprintf(&b, "Errors: %s\n", strings.Join(parts, ", "))
	for _, s := range statusOrder {
		for _, e := range errs {
			if ShownStatus(e, st.Budget) != s {
				continue
			}
			fmt.Fprintf(&b, "  %-9s  %s  %s (%d/%d attempts)%s\n", s, e.Fingerprint, e.Name, e.Attempts, st.Budget.MaxErrorAttempts, statusMark(st, e))
			fmt.Fprintf(&b, "             %s\n", firstLine(e.Message))
		}
	}
	if gs := Groups(errs); len(gs) > 0 {
		b.WriteString("Groups (the same error in the same file or place; fixing one often fixes all):\n")
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
		fmt.Fprintf(&b, "Resume: %s\n", ResumeHint(st, errs))
	}
	_, err = io.WriteString(w, b.String())
	return err
}

// ResumeHint says how to continue a run that has not passed. After a
// spent budget it names the setting to raise first, since a resume under
// the same budget can only stop again; a run whose errors are all
// skipped has nothing to resume.
func ResumeHint(st *State, errs []heal.TrackedError) string {
	resume := "tenax fix --resume " + st.ID
	spec := "SPEC"
	if st.Spec != "" {
		spec = st.Spec
	}
	b := st.Budget
	raise := func(settings ...string) string {
		return fmt.Sprintf("raise %s in %s, then %s", strings.Join(settings, " and "), spec, resume)
	}
	switch st.Stop {
	case StopMaxAttempts:
		settings := []string{fmt.Sprintf("budget.max_attempts (now %d)", b.MaxAttempts)}
		if !slices.ContainsFunc(errs, func(e heal.TrackedError) bool {
			return e.Status != heal.StatusFixed && e.Attempts < b.MaxErrorAttempts
		}) {
			settings = append(settings, fmt.Sprintf("budget.max_error_attempts (now %d)", b.MaxErrorAttempts))
		}
		return raise(settings...)
	case StopMaxErrorAttempts:
		return raise(fmt.Sprintf("budget.max_error_attempts (now %d)", b.MaxErrorAttempts))
	case StopStuck:
		return raise(fmt.Sprintf("budget.stuck_after (now %d; 0 turns the rule off)", b.StuckAfter))
	case StopSkipped:
		if slices.ContainsFunc(errs, func(e heal.TrackedError) bool {
			return e.Status != heal.StatusFixed && e.Attempts >= b.MaxErrorAttempts && !matchesAny(e.Fingerprint, st.Skip) &&
				(len(st.Only) == 0 || matchesAny(e.Fingerprint, st.Only))
		}) {
			return raise(fmt.Sprintf("budget.max_error_attempts (now %d) for the errors not skipped", b.MaxErrorAttempts))
		}
		return "nothing to resume: every error left under budget is skipped (--skip, --only and the page's skips stay with the run); start a new run with tenax fix " + spec
	case StopFixerFatal:
		return "once the fixer's failure above is fixed, " + resume
	}
	return resume
}

// spent is the attempts the run has made in all.
func (st *State) spent() int {
	n := 0
	for _, a := range st.Attempts {
		n = max(n, a.Attempt)
	}
	if st.Pending != nil {
		n = max(n, st.Pending.Attempt)
	}
	return n
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
	st := r.State
	if st == nil {
		st = &State{ID: r.ID}
	}
	if r.Outcome != OutcomePassed && len(r.Remaining) > 0 {
		fmt.Fprintf(&b, "Remaining errors (%d):\n", len(r.Remaining))
		for _, e := range r.Remaining {
			fmt.Fprintf(&b, "  %s  %-9s %s (%s)%s: %s\n", e.Fingerprint, ShownStatus(e, st.Budget), e.Name, plural(e.Attempts, "attempt"), statusMark(st, e), firstLine(e.Message))
		}
	}
	fmt.Fprintf(&b, "State: %s (audit.jsonl, attempts/*.patch)\n", r.Dir)
	if r.Outcome != OutcomePassed {
		fmt.Fprintf(&b, "Resume: %s\n", ResumeHint(st, r.Remaining))
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
