package heal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Status is where a tracked error stands after the latest check.
type Status string

// The statuses of a tracked error.
const (
	// StatusNew: present in the latest check, never seen before.
	StatusNew Status = "new"
	// StatusActive: present in the latest check and in the one before.
	StatusActive Status = "active"
	// StatusFixed: seen once, absent from the latest check.
	StatusFixed Status = "fixed"
	// StatusRegressed: was fixed, and the latest check has it again.
	StatusRegressed Status = "regressed"
)

// Defaults of Budget's zero fields, as in DESIGN's heal section.
const (
	DefaultMaxAttempts      = 8
	DefaultMaxErrorAttempts = 5
	DefaultMaxSameOutput    = 1
)

// TrackedError is one distinct error of a heal or fix loop, identified by
// its fingerprint.
type TrackedError struct {
	// Fingerprint is Fingerprint(Name, Message).
	Fingerprint string `json:"fingerprint"`
	// Name is the check, test or file the error belongs to.
	Name string `json:"name"`
	// Message is the error as the latest check reported it.
	Message string `json:"message"`
	// Normalized is Normalize(Message), what the fingerprint hashes.
	Normalized string `json:"normalized"`
	// Attempts counts the re-asks spent on this error (see Tracker.Spend).
	Attempts int `json:"attempts"`
	// Status is where the error stands after the latest check.
	Status Status `json:"status"`
}

// Observed is one error as a check reports it, before it is tracked.
type Observed struct {
	// Name is the check, test or file the error belongs to.
	Name string `json:"name"`
	// Message is the error's text; only its first two lines count toward
	// the fingerprint.
	Message string `json:"message"`
}

// Budget limits a heal or fix loop. Its zero value uses the defaults. It is
// a plain value, safe to share.
type Budget struct {
	// MaxAttempts is the most re-asks in all, for the item or the fix
	// run; 0 means DefaultMaxAttempts.
	MaxAttempts int
	// MaxErrorAttempts is the most re-asks spent on one fingerprint;
	// 0 means DefaultMaxErrorAttempts.
	MaxErrorAttempts int
	// StuckAfter, when above 0, stops the loop once this many consecutive
	// checks, each after a re-ask, observe the same set of fingerprints:
	// the fixes change nothing. 0 turns the rule off; fix loops, whose
	// checks are expensive, may enable it.
	StuckAfter int
	// MaxSameOutput is the most re-asks in a row about one byte-identical
	// output: the task answered the feedback with the very output it was
	// told was wrong. 0 means DefaultMaxSameOutput (1: the second re-ask
	// about the same output is stuck); a negative value turns the rule
	// off.
	MaxSameOutput int
	// Now stamps the audit trail; nil means time.Now.
	Now func() time.Time
}

func (b Budget) maxAttempts() int {
	if b.MaxAttempts > 0 {
		return b.MaxAttempts
	}
	return DefaultMaxAttempts
}

func (b Budget) maxErrorAttempts() int {
	if b.MaxErrorAttempts > 0 {
		return b.MaxErrorAttempts
	}
	return DefaultMaxErrorAttempts
}

// sameOutputStuck reports whether a re-ask about an output already re-asked
// about run times in a row is stuck.
func (b Budget) sameOutputStuck(run int) bool {
	switch {
	case b.MaxSameOutput < 0:
		return false
	case b.MaxSameOutput == 0:
		return run >= DefaultMaxSameOutput
	}
	return run >= b.MaxSameOutput
}

func (b Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// Sentinel causes of a StopError, for errors.Is.
var (
	// ErrBudget: a heal budget is exhausted (Reason max_attempts or
	// max_error_attempts).
	ErrBudget = errors.New("heal budget exhausted")
	// ErrStuck: the loop makes no progress (Reason stuck).
	ErrStuck = errors.New("heal loop stuck")
)

// The reasons of a StopError.
const (
	ReasonMaxAttempts      = "max_attempts"
	ReasonMaxErrorAttempts = "max_error_attempts"
	ReasonStuck            = "stuck"
)

// StopError says why a heal or fix loop must stop: the item or run ends
// failed, class invalid. It wraps ErrBudget or ErrStuck.
type StopError struct {
	// Reason is ReasonMaxAttempts, ReasonMaxErrorAttempts or ReasonStuck.
	Reason string
	// Fingerprint is the error the stop concerns, "" when it concerns the
	// whole loop (the global budget, an unchanging set of errors).
	Fingerprint string
	// Attempts is the number of re-asks made in all when the loop stopped.
	Attempts int
}

func (e *StopError) Error() string {
	var what string
	switch e.Reason {
	case ReasonMaxAttempts:
		what = "heal budget exhausted: all re-asks spent"
	case ReasonMaxErrorAttempts:
		what = "heal budget exhausted: every remaining error has spent its re-asks"
	case ReasonStuck:
		what = "heal loop stuck: re-asks change nothing"
	default:
		what = "heal loop stopped: " + e.Reason
	}
	s := fmt.Sprintf("%s (%d re-asks", what, e.Attempts)
	if e.Fingerprint != "" {
		s += ", error " + e.Fingerprint
	}
	return s + ")"
}

// Unwrap returns ErrStuck or ErrBudget.
func (e *StopError) Unwrap() error {
	if e.Reason == ReasonStuck {
		return ErrStuck
	}
	return ErrBudget
}

// Results of an audited attempt.
const (
	// ResultPending: no check has followed the attempt yet.
	ResultPending = "pending"
	// ResultFixed: the next check no longer had the error.
	ResultFixed = "fixed"
	// ResultStillFailing: the next check still had the error.
	ResultStillFailing = "still failing"
	// ResultRegressed: the error went away, but one fixed before came back.
	ResultRegressed = "regressed"
)

// AuditEntry records one re-ask and what the check after it found.
type AuditEntry struct {
	Time time.Time `json:"time"`
	// Attempt is the re-ask's number in the loop, from 1.
	Attempt int `json:"attempt"`
	// Fingerprint is the error the re-ask was about.
	Fingerprint string `json:"fingerprint"`
	// OutputHash is the first 16 hex characters of SHA-256 of the output
	// the re-ask was about.
	OutputHash string `json:"output_hash"`
	// Result is one of ResultPending, ResultFixed, ResultStillFailing,
	// ResultRegressed.
	Result string `json:"result"`
}

// Tracker follows the errors of one heal or fix loop across checks,
// chooses which one to re-ask about, and keeps the budgets. The loop is:
//
//	out := generate()
//	for {
//		t.Observe(check(out))             // statuses update
//		e, ok := t.Next()                 // nothing left: done or t.Err()
//		err := t.Spend(e.Fingerprint, out) // a budget or stuck: stop
//		out = reask(out, e)
//	}
//
// Counting: Attempts counts re-asks, not generations. The first
// generation is free; each Spend pays for one re-ask, so an output that is
// always invalid with one error makes exactly MaxErrorAttempts re-asks
// (1 + MaxErrorAttempts generations) before Next reports nothing left,
// and a loop makes at most MaxAttempts re-asks in all. Every output is
// checked, the last one included: the budgets never stop a loop between a
// re-ask and the check of its answer.
//
// The zero Tracker is ready to use with the default Budget. A Tracker is
// per-loop state, not safe for concurrent use.
type Tracker struct {
	budget   Budget
	errs     []TrackedError // in first-seen order
	index    map[string]int // fingerprint → position in errs
	attempts int
	audit    []AuditEntry

	// lastSpentHash is the hash of the output passed to the latest Spend;
	// sameOutputRun counts the Spends in a row that were passed it.
	lastSpentHash string
	sameOutputRun int
	// spentSinceCheck is set by Spend and cleared by Observe.
	spentSinceCheck bool
	// checks counts calls of Observe.
	checks int
	// lastSet is the sorted fingerprints present at the latest check;
	// sameSetRun counts consecutive checks after a re-ask that saw it
	// unchanged.
	lastSet    []string
	sameSetRun int
}

// NewTracker returns a Tracker with budget b.
func NewTracker(b Budget) *Tracker {
	return &Tracker{budget: b}
}

// Observe records the full result of one check: every error it reports.
// An error present now is new when never seen before, regressed when it
// had been fixed, active otherwise; a tracked error absent now is fixed.
// Errors with the same fingerprint count once, with the first message.
// An empty errs means the check passed.
func (t *Tracker) Observe(errs []Observed) {
	if t.index == nil {
		t.reindex()
	}
	present := make(map[string]bool, len(errs))
	regressed := false
	for _, o := range errs {
		normalized := Normalize(o.Message)
		fp := fingerprintNormalized(o.Name, normalized)
		if present[fp] {
			continue
		}
		present[fp] = true
		i, ok := t.index[fp]
		if !ok {
			t.index[fp] = len(t.errs)
			t.errs = append(t.errs, TrackedError{Fingerprint: fp, Name: o.Name, Message: o.Message, Normalized: normalized, Status: StatusNew})
			continue
		}
		e := &t.errs[i]
		e.Message = o.Message
		if e.Status == StatusFixed {
			e.Status = StatusRegressed
			regressed = true
		} else {
			e.Status = StatusActive
		}
	}
	for i := range t.errs {
		if !present[t.errs[i].Fingerprint] {
			t.errs[i].Status = StatusFixed
		}
	}

	if n := len(t.audit); n > 0 && t.audit[n-1].Result == ResultPending {
		a := &t.audit[n-1]
		switch {
		case present[a.Fingerprint]:
			a.Result = ResultStillFailing
		case regressed:
			a.Result = ResultRegressed
		default:
			a.Result = ResultFixed
		}
	}

	set := make([]string, 0, len(present))
	for fp := range present {
		set = append(set, fp)
	}
	slices.Sort(set)
	switch {
	case len(set) == 0 || t.checks == 0 || !slices.Equal(set, t.lastSet):
		t.sameSetRun = 0
	case t.spentSinceCheck:
		t.sameSetRun++
	}
	t.lastSet = set
	t.checks++
	t.spentSinceCheck = false
}

// Next returns the error to re-ask about: regressed errors first, then new,
// then active, the earliest seen first within each, and only errors that
// have spent fewer than MaxErrorAttempts re-asks. It returns false when no
// error is selectable: the check passed, a budget is spent, or the loop is
// stuck; Err tells which.
func (t *Tracker) Next() (TrackedError, bool) {
	if t.stuck() || t.attempts >= t.budget.maxAttempts() {
		return TrackedError{}, false
	}
	i := t.selectable()
	if i < 0 {
		return TrackedError{}, false
	}
	return t.errs[i], true
}

// NextFunc is Next among the errors allow accepts: a fix run's --skip and
// --only. The budgets and the stuck rule apply as in Next; false means no
// accepted error is selectable (Err still speaks of all errors).
func (t *Tracker) NextFunc(allow func(TrackedError) bool) (TrackedError, bool) {
	if t.stuck() || t.attempts >= t.budget.maxAttempts() {
		return TrackedError{}, false
	}
	i := t.selectableWhere(allow)
	if i < 0 {
		return TrackedError{}, false
	}
	return t.errs[i], true
}

// selectable returns the position of the error Next picks, -1 for none.
func (t *Tracker) selectable() int { return t.selectableWhere(nil) }

// selectableWhere is selectable among the errors allow accepts (all when
// allow is nil).
func (t *Tracker) selectableWhere(allow func(TrackedError) bool) int {
	best, bestRank := -1, 0
	limit := t.budget.maxErrorAttempts()
	for i := range t.errs {
		e := &t.errs[i]
		rank := statusRank(e.Status)
		if rank < 0 || e.Attempts >= limit || allow != nil && !allow(*e) {
			continue
		}
		if best < 0 || rank < bestRank {
			best, bestRank = i, rank
		}
	}
	return best
}

func statusRank(s Status) int {
	switch s {
	case StatusRegressed:
		return 0
	case StatusNew:
		return 1
	case StatusActive:
		return 2
	}
	return -1
}

func (t *Tracker) stuck() bool {
	return t.budget.StuckAfter > 0 && t.sameSetRun >= t.budget.StuckAfter
}

// Err says why the loop must stop: a *StopError when errors remain but the
// loop is stuck, the global budget is spent, or every present error has
// spent its own; nil when no error is present (the latest check passed) or
// Next still has one to offer.
func (t *Tracker) Err() error {
	if len(t.lastSet) == 0 {
		return nil
	}
	switch {
	case t.stuck():
		return &StopError{Reason: ReasonStuck, Attempts: t.attempts}
	case t.attempts >= t.budget.maxAttempts():
		return &StopError{Reason: ReasonMaxAttempts, Attempts: t.attempts}
	case t.selectable() < 0:
		return &StopError{Reason: ReasonMaxErrorAttempts, Fingerprint: t.firstPresent(), Attempts: t.attempts}
	}
	return nil
}

// firstPresent returns the fingerprint Next would pick were budgets
// unlimited: the one a report names.
func (t *Tracker) firstPresent() string {
	best, bestRank := "", 0
	for i := range t.errs {
		if rank := statusRank(t.errs[i].Status); rank >= 0 && (best == "" || rank < bestRank) {
			best, bestRank = t.errs[i].Fingerprint, rank
		}
	}
	return best
}

// Spend pays for one re-ask about fingerprint fp, before it is made;
// output is the failed output the re-ask is about. It returns a *StopError,
// and records nothing, when the re-ask must not be made:
//
//   - stuck: output is the same as the one passed to the previous
//     MaxSameOutput Spends (by default the previous one), so the re-asks
//     answered the feedback with what they were given (an empty output is
//     never compared: a fixer that edits files may print nothing), or
//     StuckAfter checks in a row saw the same errors;
//   - max_attempts: MaxAttempts re-asks were made in all;
//   - max_error_attempts: fp has had MaxErrorAttempts re-asks.
//
// Otherwise it counts the re-ask on fp and in all, and adds a pending
// entry to the audit trail, which the next Observe completes. An fp the
// tracker has never observed is an error, not a StopError.
func (t *Tracker) Spend(fp string, output string) error {
	if t.index == nil {
		t.reindex()
	}
	i, ok := t.index[fp]
	if !ok {
		return fmt.Errorf("heal: spend on unknown fingerprint %q", fp)
	}
	h := ""
	if output != "" {
		sum := sha256.Sum256([]byte(output))
		h = hex.EncodeToString(sum[:8])
	}
	e := &t.errs[i]
	switch {
	case h != "" && h == t.lastSpentHash && t.budget.sameOutputStuck(t.sameOutputRun), t.stuck():
		return &StopError{Reason: ReasonStuck, Fingerprint: fp, Attempts: t.attempts}
	case t.attempts >= t.budget.maxAttempts():
		return &StopError{Reason: ReasonMaxAttempts, Attempts: t.attempts}
	case e.Attempts >= t.budget.maxErrorAttempts():
		return &StopError{Reason: ReasonMaxErrorAttempts, Fingerprint: fp, Attempts: t.attempts}
	}
	e.Attempts++
	t.attempts++
	if h != "" && h == t.lastSpentHash {
		t.sameOutputRun++
	} else {
		t.sameOutputRun = 1
	}
	t.lastSpentHash = h
	t.spentSinceCheck = true
	t.audit = append(t.audit, AuditEntry{Time: t.budget.now(), Attempt: t.attempts, Fingerprint: fp, OutputHash: h, Result: ResultPending})
	return nil
}

// Errors returns every error tracked so far, fixed ones included, in the
// order they were first seen.
func (t *Tracker) Errors() []TrackedError {
	return slices.Clone(t.errs)
}

// Attempts returns the number of re-asks made in all.
func (t *Tracker) Attempts() int { return t.attempts }

// Audit returns the trail of every re-ask, oldest first.
func (t *Tracker) Audit() []AuditEntry {
	return slices.Clone(t.audit)
}

func (t *Tracker) reindex() {
	t.index = make(map[string]int, len(t.errs))
	for i, e := range t.errs {
		t.index[e.Fingerprint] = i
	}
}

// trackerState is the persisted form of a Tracker. The Budget is not part
// of it: a resumed loop runs under the budget it is given.
type trackerState struct {
	Errors          []TrackedError `json:"errors"`
	Attempts        int            `json:"attempts"`
	Checks          int            `json:"checks"`
	LastSpentHash   string         `json:"last_spent_hash,omitempty"`
	SameOutputRun   int            `json:"same_output_run,omitempty"`
	SpentSinceCheck bool           `json:"spent_since_check,omitempty"`
	LastSet         []string       `json:"last_set,omitempty"`
	SameSetRun      int            `json:"same_set_run,omitempty"`
	Audit           []AuditEntry   `json:"audit"`
}

// MarshalJSON encodes the tracker's whole state (errors, counters, audit
// trail, stuck detection), so a fix run can stop and resume. The Budget
// is not encoded.
func (t *Tracker) MarshalJSON() ([]byte, error) {
	st := trackerState{
		Errors:          t.errs,
		Attempts:        t.attempts,
		Checks:          t.checks,
		LastSpentHash:   t.lastSpentHash,
		SameOutputRun:   t.sameOutputRun,
		SpentSinceCheck: t.spentSinceCheck,
		LastSet:         t.lastSet,
		SameSetRun:      t.sameSetRun,
		Audit:           t.audit,
	}
	if st.Errors == nil {
		st.Errors = []TrackedError{}
	}
	if st.Audit == nil {
		st.Audit = []AuditEntry{}
	}
	return json.Marshal(st)
}

// UnmarshalJSON restores a state written by MarshalJSON, replacing the
// tracker's state and keeping its Budget.
func (t *Tracker) UnmarshalJSON(data []byte) error {
	var st trackerState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("heal: decode tracker state: %w", err)
	}
	seen := make(map[string]bool, len(st.Errors))
	for _, e := range st.Errors {
		if e.Fingerprint == "" || seen[e.Fingerprint] {
			return fmt.Errorf("heal: decode tracker state: missing or repeated fingerprint %q", e.Fingerprint)
		}
		seen[e.Fingerprint] = true
	}
	t.errs = st.Errors
	t.attempts = st.Attempts
	t.checks = st.Checks
	t.lastSpentHash = st.LastSpentHash
	t.sameOutputRun = st.SameOutputRun
	if t.sameOutputRun == 0 && t.lastSpentHash != "" {
		t.sameOutputRun = 1 // a state written before the run was counted
	}
	t.spentSinceCheck = st.SpentSinceCheck
	t.lastSet = st.LastSet
	t.sameSetRun = st.SameSetRun
	t.audit = st.Audit
	t.reindex()
	return nil
}
