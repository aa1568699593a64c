package fix

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/heal"
)

// The kinds of Instruction: the operator's levers on a fix run.
const (
	// InstructSkip: never give the error to the fixer again, as --skip.
	InstructSkip = "skip"
	// InstructPrioritize: give the error to the fixer before any other,
	// as --prioritize; the latest one asked goes first.
	InstructPrioritize = "prioritize"
	// InstructContext: add Text to the context the fixer is given, on
	// every later attempt (on Fingerprint's attempts only, when set), as
	// --context.
	InstructContext = "context"
)

// controlFile is the run directory's queue of instructions: appended by
// whoever instructs (a web page, in this process or another), read by the
// loop between attempts.
const controlFile = "control.jsonl"

// maxInstructionText bounds an instruction's context: it goes into every
// later request.
const maxInstructionText = 8 << 10

// Instruction is an operator's word to a fix run while it works: skip an
// error, put one first, or add context for the next attempts. Instruct
// queues it in the run's control.jsonl; the loop applies what is queued
// before it picks each error, records it in state.json (Operator) and
// audit.jsonl (kind "operator"), and says so on the terminal. A run that
// is not running applies it when it resumes.
type Instruction struct {
	Time time.Time `json:"time"`
	// Kind is InstructSkip, InstructPrioritize or InstructContext.
	Kind string `json:"kind"`
	// Fingerprint names the error, in full or by a prefix of 4 or more
	// characters; optional for InstructContext.
	Fingerprint string `json:"fingerprint,omitempty"`
	// Text is the context of an InstructContext.
	Text string `json:"text,omitempty"`
	// By says who asked, for the record ("the web page").
	By string `json:"by,omitempty"`
}

// InstructionError is an instruction refused before it was queued: an
// unknown kind, a fingerprint that names no error of the run, a run that
// already passed.
type InstructionError struct {
	Err error
}

func (e *InstructionError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *InstructionError) Unwrap() error { return e.Err }

// Instruct checks in against the run's state and queues it in
// control.jsonl (one fsynced line), for the loop to apply before it picks
// its next error. It returns an *InstructionError for an instruction that
// cannot apply, a *StorageError when the file cannot be written.
func (s *Store) Instruct(in Instruction) error {
	st, err := s.Load()
	if err != nil {
		return err
	}
	if err := checkInstruction(st, &in); err != nil {
		return &InstructionError{Err: err}
	}
	if in.Time.IsZero() {
		in.Time = time.Now()
	}
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	// One write of a whole line: the loop reads complete lines only, so
	// it never applies half of one.
	return appendLine(filepath.Join(s.Dir, controlFile), b)
}

// checkInstruction refuses what could never apply: the loop would skip it
// in silence, and the operator would wait for an effect that never comes.
func checkInstruction(st *State, in *Instruction) error {
	if st.Outcome == OutcomePassed {
		return fmt.Errorf("fix: run %s passed: nothing is left to fix", st.ID)
	}
	in.Text = strings.TrimSpace(in.Text)
	switch in.Kind {
	case InstructSkip, InstructPrioritize:
		if in.Fingerprint == "" {
			return fmt.Errorf("fix: %s which error? give its fingerprint", in.Kind)
		}
	case InstructContext:
		if in.Text == "" {
			return errors.New("fix: the context is empty: write what the fixer should know")
		}
		if len(in.Text) > maxInstructionText || !utf8.ValidString(in.Text) {
			return fmt.Errorf("fix: the context must be UTF-8 text of at most %d bytes", maxInstructionText)
		}
	default:
		return fmt.Errorf("fix: unknown instruction %q: skip, prioritize or context", in.Kind)
	}
	if in.Fingerprint == "" {
		return nil
	}
	if !isFingerprintPrefix(in.Fingerprint) {
		return fmt.Errorf("fix: %q is no fingerprint: give an error's fingerprint or its first 4 or more characters", in.Fingerprint)
	}
	errs, err := st.TrackedErrors()
	if err != nil {
		return err
	}
	for _, e := range errs {
		if strings.HasPrefix(e.Fingerprint, in.Fingerprint) {
			if e.Status == heal.StatusFixed && in.Kind != InstructSkip {
				return fmt.Errorf("fix: %s (%s) is fixed", e.Name, e.Fingerprint[:8])
			}
			return nil
		}
	}
	return fmt.Errorf("fix: run %s has no error %s", st.ID, in.Fingerprint)
}

// Queued returns the instructions in control.jsonl that the run has not
// applied yet: what the next attempt will heed.
func (s *Store) Queued(st *State) ([]Instruction, error) {
	ins, _, err := s.readControl(st.ControlOffset)
	return ins, err
}

// readControl reads the complete lines of control.jsonl from offset on
// and returns their instructions and the offset after the last of them.
// A line being written (no newline yet) is left for the next read; a line
// that does not decode is passed over.
func (s *Store) readControl(offset int64) ([]Instruction, int64, error) {
	f, err := os.Open(filepath.Join(s.Dir, controlFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, offset, nil
	}
	if err != nil {
		return nil, offset, &StorageError{Err: err}
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, offset, &StorageError{Err: err}
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, offset, &StorageError{Err: err}
	}
	var out []Instruction
	for {
		line, rest, ok := bytes.Cut(b, []byte("\n"))
		if !ok {
			return out, offset, nil
		}
		offset += int64(len(line)) + 1
		b = rest
		var in Instruction
		if json.Unmarshal(line, &in) == nil && in.Kind != "" {
			out = append(out, in)
		}
	}
}

// heedOperator applies the instructions queued since the last call:
// between attempts, before the next error is picked. Each is recorded in
// the state and the audit trail and told to the terminal.
func (r *runner) heedOperator() error {
	ins, offset, err := r.store.readControl(r.state.ControlOffset)
	if err != nil || offset == r.state.ControlOffset {
		return err
	}
	st := r.state
	for _, in := range ins {
		target, _ := r.findPrefix(in.Fingerprint)
		switch in.Kind {
		case InstructSkip:
			r.cfg.Skip = mergeUnique(r.cfg.Skip, []string{in.Fingerprint})
			st.Skip = r.cfg.Skip
			st.Priority = removeMatching(st.Priority, in.Fingerprint)
		case InstructPrioritize:
			st.Priority = append([]string{in.Fingerprint}, removeMatching(st.Priority, in.Fingerprint)...)
		case InstructContext:
		default:
			continue
		}
		st.Operator = append(st.Operator, in)
		if err := r.store.Append(AuditRecord{Time: r.cfg.now(), Kind: "operator", Fingerprint: target.Fingerprint, Name: target.Name, Operator: &in}); err != nil {
			return err
		}
		r.emit(Event{Kind: EventNote, Message: describeInstruction(in, target)})
	}
	st.ControlOffset = offset
	return r.save()
}

// describeInstruction says what an applied instruction does, for the
// terminal.
func describeInstruction(in Instruction, e heal.TrackedError) string {
	who := in.By
	if who == "" {
		who = "the operator"
	}
	what := in.Fingerprint
	if e.Name != "" {
		what = fmt.Sprintf("%s %s", e.Fingerprint[:8], e.Name)
	}
	switch in.Kind {
	case InstructSkip:
		return fmt.Sprintf("%s skipped %s: it is no longer given to the fixer", who, what)
	case InstructPrioritize:
		return fmt.Sprintf("%s put %s first: it is given to the fixer next while under budget", who, what)
	}
	if in.Fingerprint != "" {
		return fmt.Sprintf("%s added context for %s: %s", who, what, firstLine(in.Text))
	}
	return fmt.Sprintf("%s added context for the next attempts: %s", who, firstLine(in.Text))
}

// findPrefix finds the tracked error a fingerprint or its prefix names.
func (r *runner) findPrefix(fp string) (heal.TrackedError, bool) {
	if fp == "" {
		return heal.TrackedError{}, false
	}
	for _, e := range r.tracker.Errors() {
		if strings.HasPrefix(e.Fingerprint, fp) {
			return e, true
		}
	}
	return heal.TrackedError{}, false
}

// pick is the error the next attempt is about: the first prioritized one
// the loop may give to the fixer (not skipped, under budget, not fixed),
// else the tracker's choice (regressed, new, active).
func (r *runner) pick() (heal.TrackedError, bool) {
	for _, p := range r.state.Priority {
		e, ok := r.tracker.NextFunc(func(e heal.TrackedError) bool {
			return strings.HasPrefix(e.Fingerprint, p) && r.allowed(e)
		})
		if ok {
			return e, true
		}
	}
	if r.cfg.Order == OrderStrict {
		return r.tracker.NextFunc(r.allowed)
	}
	// Round robin: the fewest attempts spent first, then the tracker's
	// order among them, so that no error waits while another spends its
	// whole budget.
	fewest := -1
	for _, e := range r.tracker.Errors() {
		if e.Status != heal.StatusFixed && e.Attempts < r.state.Budget.MaxErrorAttempts && r.allowed(e) && (fewest < 0 || e.Attempts < fewest) {
			fewest = e.Attempts
		}
	}
	return r.tracker.NextFunc(func(e heal.TrackedError) bool { return e.Attempts == fewest && r.allowed(e) })
}

// contextFor is the context the fixer gets for e: the spec's and
// --context, then what the operator added for every error or for e.
func (r *runner) contextFor(e heal.TrackedError) string {
	text := r.cfg.Context
	for _, in := range r.state.Operator {
		if in.Kind == InstructContext && (in.Fingerprint == "" || strings.HasPrefix(e.Fingerprint, in.Fingerprint)) {
			text = joinContext(text, in.Text)
		}
	}
	return text
}

// removeMatching drops the fingerprints (or prefixes) in list that name
// fp or that fp names.
func removeMatching(list []string, fp string) []string {
	var out []string
	for _, p := range list {
		if !strings.HasPrefix(p, fp) && !strings.HasPrefix(fp, p) {
			out = append(out, p)
		}
	}
	return out
}
