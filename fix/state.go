package fix

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
)

// The outcomes of a fix run.
const (
	// OutcomeRunning: the run has not ended (or was killed).
	OutcomeRunning = "running"
	// OutcomePassed: the check passes.
	OutcomePassed = "passed"
	// OutcomeFailed: a budget ended the run with errors left.
	OutcomeFailed = "failed"
	// OutcomeStuck: the latest attempts changed nothing.
	OutcomeStuck = "stuck"
	// OutcomeInterrupted: a signal stopped the run; it resumes.
	OutcomeInterrupted = "interrupted"
)

// The rules that end a run with errors left (State.Stop).
const (
	// StopMaxAttempts: budget.max_attempts is spent.
	StopMaxAttempts = heal.ReasonMaxAttempts
	// StopMaxErrorAttempts: every remaining error spent its
	// budget.max_error_attempts.
	StopMaxErrorAttempts = heal.ReasonMaxErrorAttempts
	// StopStuck: budget.stuck_after checks in a row saw the same errors.
	StopStuck = heal.ReasonStuck
	// StopSkipped: every remaining error under budget is skipped.
	StopSkipped = "skipped"
	// StopFixerFatal: the fixer failed in a way no attempt can help.
	StopFixerFatal = "fixer_fatal"
)

// StatusAbandoned is how an error the loop gives up on is shown: not
// fixed, its budget.max_error_attempts spent (as the run's page shows it).
const StatusAbandoned heal.Status = "abandoned"

// ShownStatus is e's status as reports show it: StatusAbandoned for an
// unfixed error that has spent its per-error budget of b, else e's own.
func ShownStatus(e heal.TrackedError, b Budget) heal.Status {
	if e.Status != heal.StatusFixed && b.MaxErrorAttempts > 0 && e.Attempts >= b.MaxErrorAttempts {
		return StatusAbandoned
	}
	return e.Status
}

// State is a fix run's state.json: everything a resumed run needs, written
// atomically (temporary file, fsync, rename) after every step.
type State struct {
	ID      string    `json:"id"`
	Name    string    `json:"name"`
	Spec    string    `json:"spec,omitempty"`
	Workdir string    `json:"workdir"`
	Version string    `json:"tenax_version,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Outcome string    `json:"outcome"`
	Reason  string    `json:"reason,omitempty"`
	// Stop says which rule ended a failed or stuck run, for the resume
	// hint: one of the Stop* constants, "" otherwise.
	Stop    string `json:"stop,omitempty"`
	Budget  Budget `json:"budget"`
	Context string `json:"context,omitempty"`
	// AddedContext is the part of Context given with --context, to which
	// a resume adds (Config.AddedContext).
	AddedContext string   `json:"added_context,omitempty"`
	Skip         []string `json:"skip,omitempty"`
	Only         []string `json:"only,omitempty"`
	// Priority are the errors (fingerprints or prefixes) given to the
	// fixer before any other, first first: --prioritize and the
	// operator's "put first".
	Priority []string `json:"priority,omitempty"`
	// Operator are the instructions applied while the run worked, in
	// order (see Instruction); ControlOffset is how far control.jsonl
	// has been read.
	Operator      []Instruction `json:"operator,omitempty"`
	ControlOffset int64         `json:"control_offset,omitempty"`
	Checks        int           `json:"checks"`
	Usage         task.Usage    `json:"usage"`
	CostUSD       float64       `json:"cost_usd,omitempty"`
	// Tracker is heal.Tracker's state: the errors, their statuses and the
	// attempts spent.
	Tracker json.RawMessage `json:"tracker"`
	// Last are the errors of the latest check that counts (after a
	// revert, the check before the reverted attempt).
	Last []heal.Observed `json:"last"`
	// LastTally is what the runner said it ran in that check.
	LastTally *Tally `json:"last_tally,omitempty"`
	// Passed reports that the latest check passed.
	Passed bool `json:"passed"`
	// Pending is the attempt in progress: spent, its check not yet run.
	Pending *Pending `json:"pending,omitempty"`
	// Attempts summarizes every finished attempt, oldest first.
	Attempts []AttemptSummary `json:"attempts"`
}

// Budget is the budget a run was started with, kept for status.
type Budget struct {
	MaxAttempts      int `json:"max_attempts"`
	MaxErrorAttempts int `json:"max_error_attempts"`
	StuckAfter       int `json:"stuck_after"`
	// Order is how the run picks the next error (Config.Order).
	Order string `json:"order,omitempty"`
}

// Pending is an attempt that was paid for and handed to the fixer, whose
// check has not been recorded: a resumed run records its edit and checks.
type Pending struct {
	Attempt     int    `json:"attempt"`
	Fingerprint string `json:"fingerprint"`
	BeforeTree  string `json:"before_tree"`
	// AfterTree is the tree when the fixer returned or was interrupted:
	// what changes after it is not the fixer's. Empty when the run died
	// before it could be taken.
	AfterTree  string    `json:"after_tree,omitempty"`
	PromptHash string    `json:"prompt_hash,omitempty"`
	Started    time.Time `json:"started"`
}

// AttemptSummary is one finished attempt, as the fixer is told about
// earlier attempts on the same error.
type AttemptSummary struct {
	Attempt     int      `json:"attempt"`
	Fingerprint string   `json:"fingerprint"`
	Result      string   `json:"result"`
	Files       []string `json:"files,omitempty"`
	Reverted    bool     `json:"reverted,omitempty"`
	Summary     string   `json:"summary,omitempty"`
	Patch       string   `json:"patch,omitempty"`
}

// Store is a fix run's directory, home/fixes/<id>/: state.json,
// audit.jsonl, and attempts/NNNN.patch for every recorded edit.
type Store struct {
	Dir string
}

// FixesDir is where fix runs live under a tenax home.
func FixesDir(home string) string { return filepath.Join(home, "fixes") }

// IsID reports whether id looks like a fix run's id.
func IsID(id string) bool { return strings.HasPrefix(id, "fix_") }

// newStore creates a fresh run directory under home with an id of the
// form fix_YYYYMMDD_HHMMSS (a suffix is added on collision).
func newStore(home string, now time.Time) (*Store, string, error) {
	base := FixesDir(home)
	if err := os.MkdirAll(base, 0o755); err != nil {
		return nil, "", &StorageError{Err: err}
	}
	id := now.UTC().Format("fix_20060102_150405")
	for i := 2; ; i++ {
		dir := filepath.Join(base, id)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			if err := os.Mkdir(filepath.Join(dir, "attempts"), 0o755); err != nil {
				return nil, "", &StorageError{Err: err}
			}
			return &Store{Dir: dir}, id, syncDir(base)
		}
		if !errors.Is(err, fs.ErrExist) || i > 1000 {
			return nil, "", &StorageError{Err: err}
		}
		id = fmt.Sprintf("%s_%d", now.UTC().Format("fix_20060102_150405"), i)
	}
}

// OpenStore opens an existing run by id. "latest" is the newest run.
func OpenStore(home, id string) (*Store, error) {
	if id == "latest" {
		entries, err := os.ReadDir(FixesDir(home))
		if err != nil {
			return nil, fmt.Errorf("fix: no fix runs under %s", home)
		}
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].IsDir() && IsID(entries[i].Name()) {
				id = entries[i].Name()
				break
			}
		}
	}
	if strings.ContainsAny(id, `/\`) || id == "" || id == "." || id == ".." {
		return nil, fmt.Errorf("fix: %q is not a fix run id", id)
	}
	dir := filepath.Join(FixesDir(home), id)
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
		return nil, fmt.Errorf("fix: no fix run %s under %s", id, FixesDir(home))
	}
	return &Store{Dir: dir}, nil
}

// Exists reports whether home holds a fix run with this id.
func Exists(home, id string) bool {
	_, err := OpenStore(home, id)
	return err == nil
}

// Load reads state.json.
func (s *Store) Load() (*State, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, "state.json"))
	if err != nil {
		return nil, &StorageError{Err: err}
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, &StorageError{Err: fmt.Errorf("%s: %w", filepath.Join(s.Dir, "state.json"), err)}
	}
	return &st, nil
}

// Save writes state.json atomically and durably.
func (s *Store) Save(st *State) error {
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	return writeDurable(filepath.Join(s.Dir, "state.json"), append(b, '\n'))
}

// WritePatch records an attempt's edit as attempts/NNNN.patch and returns
// its path relative to the run directory.
func (s *Store) WritePatch(attempt int, patch []byte) (string, error) {
	rel := filepath.Join("attempts", fmt.Sprintf("%04d.patch", attempt))
	if err := writeDurable(filepath.Join(s.Dir, rel), patch); err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// WriteCheckOutput keeps the output of the run's check number n as
// checks/NNNN.log, for the audit trail and the run's page, and returns its
// path relative to the run directory.
func (s *Store) WriteCheckOutput(n int, output string) (string, error) {
	if err := os.MkdirAll(filepath.Join(s.Dir, "checks"), 0o755); err != nil {
		return "", &StorageError{Err: err}
	}
	rel := filepath.Join("checks", fmt.Sprintf("%04d.log", n))
	if err := writeDurable(filepath.Join(s.Dir, rel), []byte(output)); err != nil {
		return "", err
	}
	return filepath.ToSlash(rel), nil
}

// Append adds one record to audit.jsonl and fsyncs it.
func (s *Store) Append(rec any) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return appendLine(filepath.Join(s.Dir, "audit.jsonl"), b)
}

// appendLine appends b and a newline to the file at path in one write,
// and fsyncs it: a reader of whole lines never sees half of one.
func appendLine(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return &StorageError{Err: err}
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return &StorageError{Err: err}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return &StorageError{Err: err}
	}
	if err := f.Close(); err != nil {
		return &StorageError{Err: err}
	}
	return nil
}

// ReadAudit reads audit.jsonl, ignoring a torn last line.
func (s *Store) ReadAudit() ([]AuditRecord, error) {
	b, err := os.ReadFile(filepath.Join(s.Dir, "audit.jsonl"))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &StorageError{Err: err}
	}
	var out []AuditRecord
	for _, line := range strings.Split(string(b), "\n") {
		var r AuditRecord
		if line == "" || json.Unmarshal([]byte(line), &r) != nil {
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// writeDurable writes a file through a temporary one, fsyncs it, renames
// it into place and fsyncs the directory.
func writeDurable(path string, data []byte) error {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return &StorageError{Err: err}
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return &StorageError{Err: err}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return &StorageError{Err: err}
	}
	if err := f.Close(); err != nil {
		return &StorageError{Err: err}
	}
	if err := os.Rename(tmp, path); err != nil {
		return &StorageError{Err: err}
	}
	return syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return &StorageError{Err: err}
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return &StorageError{Err: err}
	}
	return nil
}

// StorageError is a failure of the fix run's own files (a full disk, a
// vanished directory): the run stops, what was written stays.
type StorageError struct {
	Err error
}

func (e *StorageError) Error() string { return "fix: storage: " + e.Err.Error() }

// Unwrap returns the underlying error.
func (e *StorageError) Unwrap() error { return e.Err }

// SetupError is a problem found before the loop starts (a dirty tree, a
// directory outside git, a bad flag): nothing was run or written.
type SetupError struct {
	Err error
}

func (e *SetupError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *SetupError) Unwrap() error { return e.Err }
