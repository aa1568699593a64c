package fix

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
	texec "github.com/tenaxhq/tenax/task/exec"
)

// The orders in which a run picks the next error (Config.Order).
const (
	// OrderRoundRobin (the default) picks, among the errors under budget,
	// one with the fewest attempts spent: regressed, then new, then
	// active, the earliest seen first. Every error gets its turn before
	// any gets a second, so when budget.max_attempts runs out no error is
	// left untried while another spent its whole budget.
	OrderRoundRobin = "round_robin"
	// OrderStrict is heal's order (docs/fix.md): regressed, then new,
	// then active, the earliest seen first, whatever each has spent: an
	// error that is never fixed keeps its turn until its budget is spent.
	OrderStrict = "strict"
)

// Config is one fix run's setup. The zero values of Budget use heal's
// defaults (5 attempts per error, 8 in all).
type Config struct {
	// Name names the run in reports.
	Name string
	// Spec is the spec file's path, for the record.
	Spec string
	// Version is tenax's version, for the record.
	Version string
	// Workdir is where the check runs and files are edited. It must be
	// inside a git work tree.
	Workdir string
	// Home is tenax's home; the run lives in Home/fixes/<id>/.
	Home string
	// Check is the check to run.
	Check Check
	// Fixer fixes one error per call.
	Fixer Fixer
	// Budget bounds the loop (per error, in all, stuck checks).
	Budget heal.Budget
	// Order is how the loop picks the next error: OrderRoundRobin (""
	// too) or OrderStrict. Errors put first (Prioritize) go first in both.
	Order string
	// Hints are given to the fixer when they match the error.
	Hints []heal.Hint
	// Context is the user's context for the fixer: the spec's, then
	// AddedContext.
	Context string
	// AddedContext is the part of Context given on command lines
	// (--context), kept apart so that a resume adds to it: the spec is
	// read again, its own context anew, but what was given once stays.
	AddedContext string
	// KeepWorse keeps an attempt that leaves the check strictly worse
	// instead of reverting it; it counts as failed either way.
	KeepWorse bool
	// Commit commits each attempt that removed its error, with the files
	// it changed.
	Commit bool
	// AllowDirty starts even though the work tree has uncommitted changes.
	AllowDirty bool
	// Redact, when set, replaces the spec's secrets (spec.Fix.Redact) in
	// what the fixer says and in the request's quoted source; the check
	// redacts its own output (Check.Redact).
	Redact func(string) string
	// ReadOnly are files tenax only reads (the fix spec, a --context
	// @FILE): untracked, they do not make the work tree dirty.
	ReadOnly []string
	// Paths, when set, limit the run to these files or directories
	// (relative to Workdir): only they are recorded, reverted, committed
	// and checked for uncommitted changes.
	Paths []string
	// Skip and Only filter the errors the loop picks, by fingerprint (a
	// prefix of at least 4 characters will do). Skipped errors stay
	// tracked; they are just never given to the fixer.
	Skip, Only []string
	// Prioritize names errors (as Skip does) that the loop picks before
	// any other while they are under budget, the first first.
	Prioritize []string
	// OnEvent, when set, is told about every step, from the run's
	// goroutine.
	OnEvent func(Event)
	// Now stamps records; nil is time.Now.
	Now func() time.Time
}

func (c *Config) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// The kinds of Event.
const (
	// EventChecking: the check starts.
	EventChecking = "checking"
	// EventCheck: a check ran (Counts are its statuses).
	EventCheck = "check"
	// EventAttempt: the fixer is asked about Error.
	EventAttempt = "attempt"
	// EventResult: an attempt's check ran (Result says what happened).
	EventResult = "result"
	// EventStop: the run ends (Message says why).
	EventStop = "stop"
	// EventNote: something the user must know that is no step of the
	// loop (Message), such as files a resumed run leaves alone as theirs.
	EventNote = "note"
	// EventStart: the run holds its directory and starts (Run is its id,
	// Message the directory), before the first check.
	EventStart = "start"
)

// Event is one step of a fix run, for progress on a terminal.
type Event struct {
	Kind string
	// Run is the fix run's id.
	Run string
	// Attempt is the attempts made in all, MaxAttempts the budget.
	Attempt, MaxAttempts int
	// Error is the error an attempt is about.
	Error heal.TrackedError
	// MaxErrorAttempts is the per-error budget.
	MaxErrorAttempts int
	// Counts are the tracked errors by status after the latest check,
	// with StatusAbandoned for those that spent their per-error budget.
	Counts map[heal.Status]int
	// Result is an attempt's result (fixed, still failing, regressed,
	// reverted).
	Result string
	// Message says more: the stop's reason, the files an attempt changed.
	Message string
}

// AuditRecord is one line of audit.jsonl.
type AuditRecord struct {
	Time time.Time `json:"time"`
	// Kind is "start", "resume", "check", "operator", "attempt" or "stop".
	Kind string `json:"kind"`
	// Attempt, Fingerprint, Name, Message, ErrorStatus: the attempt and
	// the error it was about.
	Attempt     int    `json:"attempt,omitempty"`
	Fingerprint string `json:"fingerprint,omitempty"`
	Name        string `json:"name,omitempty"`
	Message     string `json:"message,omitempty"`
	ErrorStatus string `json:"error_status,omitempty"`
	PromptHash  string `json:"prompt_hash,omitempty"`
	// Edit is the attempt's edit: the files and the patch that undoes it
	// (git apply -R).
	Edit *Edit `json:"edit,omitempty"`
	// Check is the check's result after the attempt.
	Check *CheckSummary `json:"check,omitempty"`
	// Result is fixed, still failing, regressed, or reverted.
	Result   string `json:"result,omitempty"`
	Reverted bool   `json:"reverted,omitempty"`
	// Changes are the statuses that changed with this check.
	Changes []StatusChange `json:"changes,omitempty"`
	// Fixer is what the fixer said, or the error it failed with.
	Fixer        string  `json:"fixer,omitempty"`
	FixerError   string  `json:"fixer_error,omitempty"`
	Reasks       int     `json:"reasks,omitempty"`
	InputTokens  int64   `json:"input_tokens,omitempty"`
	OutputTokens int64   `json:"output_tokens,omitempty"`
	CostUSD      float64 `json:"cost_usd,omitempty"`
	Committed    bool    `json:"committed,omitempty"`
	// Operator is the instruction a record of kind "operator" applied.
	Operator *Instruction `json:"operator,omitempty"`
	// UserFiles changed between an interrupted attempt's end and the
	// resume: the user's, so neither part of the edit nor reverted.
	UserFiles []string `json:"user_files,omitempty"`
	// Outcome and Reason close a run (kind stop).
	Outcome string `json:"outcome,omitempty"`
	Reason  string `json:"reason,omitempty"`
}

// Edit is an attempt's change to the work tree.
type Edit struct {
	Files []string `json:"files"`
	// Patch is the recorded diff, relative to the run directory.
	Patch string `json:"patch,omitempty"`
}

// CheckSummary is a check's result in the audit trail.
type CheckSummary struct {
	// Output is the check's output, relative to the run directory
	// (checks/NNNN.log).
	Output     string `json:"output,omitempty"`
	ExitCode   int    `json:"exit_code"`
	Errors     int    `json:"errors"`
	DurationMS int64  `json:"duration_ms"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	Skipped    string `json:"skipped,omitempty"`
}

// StatusChange is one error's status before and after a check.
type StatusChange struct {
	Fingerprint string      `json:"fingerprint"`
	Name        string      `json:"name"`
	From        heal.Status `json:"from,omitempty"`
	To          heal.Status `json:"to"`
}

// Result is how a fix run ended.
type Result struct {
	ID  string
	Dir string
	// Outcome is OutcomePassed, OutcomeFailed, OutcomeStuck or
	// OutcomeInterrupted.
	Outcome string
	// Reason says why the run stopped.
	Reason string
	// Remaining are the errors of the latest check.
	Remaining []heal.TrackedError
	// Attempts and Checks count the run's attempts and checks in all.
	Attempts, Checks int
	// State is the final state.
	State *State
}

// ExitCode is the process exit code for the result: 0 passed, 1 errors
// left, 130 interrupted.
func (r *Result) ExitCode() int {
	switch r.Outcome {
	case OutcomePassed:
		return 0
	case OutcomeInterrupted:
		return 130
	}
	return 1
}

// runner is one fix run in progress.
type runner struct {
	cfg     Config
	store   *Store
	state   *State
	tree    *Tree
	tracker *heal.Tracker
	// output is the latest check's output, for the fixer.
	output string
	// checkFirst makes the loop start with a check: a new run, or a
	// resumed one whose tree may have changed while it was stopped.
	checkFirst bool
	// fatal is the last attempt's fixer error when it was fatal (a
	// rejected API key, a missing program): every attempt would meet it.
	fatal error
}

// Start begins a new fix run: it checks the work tree (a git tree, clean
// unless AllowDirty), creates the run directory and runs the loop until the
// check passes, a budget ends it, it is stuck, or ctx ends.
func Start(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Fixer == nil {
		return nil, &SetupError{Err: errors.New("fix: no fixer")}
	}
	tree, err := openTree(ctx, cfg, "")
	if err != nil {
		return nil, err
	}
	if !cfg.AllowDirty {
		if err := checkClean(ctx, tree, cfg.ReadOnly); err != nil {
			return nil, err
		}
	}
	store, id, err := newStore(cfg.Home, cfg.now())
	if err != nil {
		return nil, err
	}
	release, err := claim(store, &cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	// git runs in the tree's root, not here: the index's path is absolute.
	if tree.index, err = filepath.Abs(filepath.Join(store.Dir, "index")); err != nil {
		return nil, &StorageError{Err: err}
	}
	now := cfg.now()
	st := &State{
		ID: id, Name: cfg.Name, Spec: cfg.Spec, Workdir: cfg.Workdir, Version: cfg.Version,
		Created: now, Updated: now, Outcome: OutcomeRunning,
		Budget:  budgetOf(cfg.Budget, cfg.Order),
		Context: cfg.Context, AddedContext: cfg.AddedContext, Skip: cfg.Skip, Only: cfg.Only, Priority: cfg.Prioritize,
		Attempts: []AttemptSummary{},
	}
	r := &runner{cfg: cfg, store: store, state: st, tree: tree, tracker: heal.NewTracker(cfg.Budget), checkFirst: true}
	if err := r.save(); err != nil {
		return nil, err
	}
	if err := store.Append(AuditRecord{Time: now, Kind: "start", Message: r.redact(strings.Join(cfg.Check.Argv, " "))}); err != nil {
		return nil, err
	}
	r.emit(Event{Kind: EventStart, Message: store.Dir})
	return r.loop(ctx)
}

// Resume continues the fix run id with the budgets it has spent. cfg is
// built from the spec again (a raised budget takes effect); Skip, Only and
// Context add to the run's own. An attempt that was in progress when the
// run died has its edit recorded and checked first.
func Resume(ctx context.Context, cfg Config, id string) (*Result, error) {
	if cfg.Fixer == nil {
		return nil, &SetupError{Err: errors.New("fix: no fixer")}
	}
	store, err := OpenStore(cfg.Home, id)
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	release, err := claim(store, &cfg)
	if err != nil {
		return nil, err
	}
	defer release()
	st, err := store.Load()
	if err != nil {
		return nil, err
	}
	if st.Outcome == OutcomePassed {
		return nil, &SetupError{Err: fmt.Errorf("fix: run %s already passed; start a new one with tenax fix SPEC", st.ID)}
	}
	if cfg.Workdir == "" {
		cfg.Workdir = st.Workdir
	}
	tree, err := openTree(ctx, cfg, filepath.Join(store.Dir, "index"))
	if err != nil {
		return nil, err
	}
	tracker := heal.NewTracker(cfg.Budget)
	if err := tracker.UnmarshalJSON(st.Tracker); err != nil {
		return nil, &StorageError{Err: err}
	}
	cfg.Skip = mergeUnique(st.Skip, cfg.Skip)
	cfg.Only = mergeUnique(st.Only, cfg.Only)
	// A --prioritize given now goes before the run's own.
	st.Priority = mergeUnique(cfg.Prioritize, st.Priority)
	resumeContext(&cfg, st)
	st.Skip, st.Only, st.Context, st.AddedContext = cfg.Skip, cfg.Only, cfg.Context, cfg.AddedContext
	st.Budget = budgetOf(cfg.Budget, cfg.Order)
	st.Outcome, st.Reason, st.Stop = OutcomeRunning, "", ""
	r := &runner{cfg: cfg, store: store, state: st, tree: tree, tracker: tracker}
	if err := store.Append(AuditRecord{Time: cfg.now(), Kind: "resume", Attempt: tracker.Attempts()}); err != nil {
		return nil, err
	}
	r.emit(Event{Kind: EventStart, Message: store.Dir})
	if p := st.Pending; p != nil {
		g, err := r.sinceInterrupt(ctx, p)
		if err != nil {
			return r.stopped(ctx, err)
		}
		if err := r.finish(ctx, p, Answer{}, errors.New("the run stopped while the fixer was working; its edit, if any, is checked now"), g); err != nil {
			return r.stopped(ctx, err)
		}
		return r.loop(ctx)
	}
	// The tree may have changed while the run was stopped: check again.
	r.checkFirst = true
	return r.loop(ctx)
}

// groupsFile is the run directory's record of the process groups its
// check and exec fixer started (texec.GroupFile).
const groupsFile = "process-groups"

// claim takes the run's lock, then ends what a killed run left and records
// this run's process groups: what Start and Resume both do before a check.
// release gives both back.
func claim(store *Store, cfg *Config) (release func(), err error) {
	lock, err := store.lock()
	if err != nil {
		return nil, err
	}
	groups, err := recordGroups(store, cfg)
	if err != nil {
		lock.Close()
		return nil, err
	}
	return func() {
		groups.Close()
		lock.Close()
	}, nil
}

// recordGroups ends the process groups a killed run left running (the run
// is locked: whoever wrote the record is dead), then has cfg's check and
// exec fixer record theirs.
func recordGroups(store *Store, cfg *Config) (*texec.GroupFile, error) {
	path := filepath.Join(store.Dir, groupsFile)
	n, err := texec.EndLeftoverGroups(path)
	if err != nil {
		return nil, &StorageError{Err: err}
	}
	if n > 0 && cfg.OnEvent != nil {
		cfg.OnEvent(Event{Kind: EventNote, Message: fmt.Sprintf("ended %s that a killed run of this fix left running", plural(n, "process group"))})
	}
	g, err := texec.OpenGroupFile(path)
	if err != nil {
		return nil, &StorageError{Err: err}
	}
	cfg.Check.groups = g
	if x, ok := cfg.Fixer.(ExecFixer); ok {
		x.groups = g
		cfg.Fixer = x
	}
	return g, nil
}

// resumeContext sets cfg's context for a resume of st: the spec's context
// as read now, then every --context given to the run, the earlier ones
// first and a text given again only once.
func resumeContext(cfg *Config, st *State) {
	if st.AddedContext == "" && st.Context != "" && cfg.AddedContext == "" {
		// A run started before AddedContext was kept: its stored
		// context may hold a --context that cannot be told apart.
		cfg.Context = st.Context
		return
	}
	spec := strings.TrimSuffix(strings.TrimSuffix(cfg.Context, cfg.AddedContext), "\n\n")
	added := st.AddedContext
	if cfg.AddedContext != "" && !slices.Contains(strings.Split(added, "\n\n"), cfg.AddedContext) {
		added = joinContext(added, cfg.AddedContext)
	}
	cfg.Context, cfg.AddedContext = joinContext(spec, added), added
}

// CheckClean returns a *SetupError when the git work tree holding workdir
// has uncommitted changes (tenax's home aside, and the untracked files
// in readOnly, which tenax only reads), or is no git tree: what Start
// checks, for a per-item run to check once before its items start.
func CheckClean(ctx context.Context, workdir, home string, readOnly ...string) error {
	tree, err := openTree(ctx, Config{Workdir: workdir, Home: home}, "")
	if err != nil {
		return err
	}
	return checkClean(ctx, tree, readOnly)
}

func checkClean(ctx context.Context, tree *Tree, readOnly []string) error {
	dirty, err := tree.Dirty(ctx, readOnly...)
	if err != nil {
		return &SetupError{Err: err}
	}
	if len(dirty) > 0 {
		return &SetupError{Err: fmt.Errorf("fix: the work tree %s has uncommitted changes (%s); commit or stash them so no edit of tenax can mix with yours, or pass --allow-dirty", tree.Root, listShort(dirty, 3))}
	}
	return nil
}

func openTree(ctx context.Context, cfg Config, index string) (*Tree, error) {
	tree, err := OpenTree(ctx, cfg.Workdir, []string{cfg.Home}, index, cfg.Paths...)
	if err != nil {
		return nil, &SetupError{Err: err}
	}
	return tree, nil
}

func budgetOf(b heal.Budget, order string) Budget {
	return Budget{
		MaxAttempts:      cmpOr(b.MaxAttempts, heal.DefaultMaxAttempts),
		MaxErrorAttempts: cmpOr(b.MaxErrorAttempts, heal.DefaultMaxErrorAttempts),
		StuckAfter:       b.StuckAfter,
		Order:            cmp.Or(order, OrderRoundRobin),
	}
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// loop is the fix loop: check, pick, fix, check again.
func (r *runner) loop(ctx context.Context) (*Result, error) {
	st := r.state
	if r.checkFirst {
		r.checkFirst = false
		if err := r.checkAndObserve(ctx); err != nil {
			return r.stopped(ctx, err)
		}
	}
	for {
		if ctx.Err() != nil {
			return r.stopped(ctx, ctx.Err())
		}
		if st.Passed {
			return r.end(OutcomePassed, "the check passes")
		}
		// Between attempts: what the operator asked since the last one.
		if err := r.heedOperator(); err != nil {
			return r.stopped(ctx, err)
		}
		e, ok := r.pick()
		if !ok {
			return r.endNoPick()
		}
		if err := r.attempt(ctx, e); err != nil {
			return r.stopped(ctx, err)
		}
		if r.fatal != nil {
			st.Stop = StopFixerFatal
			return r.end(OutcomeFailed, fmt.Sprintf("the fixer failed in a way no other attempt can help (%s): %v; fix that, then continue with tenax fix --resume %s", classify.Classify(r.fatal), r.fatal, st.ID))
		}
	}
}

// allowed applies --skip and --only.
func (r *runner) allowed(e heal.TrackedError) bool {
	if matchesAny(e.Fingerprint, r.cfg.Skip) {
		return false
	}
	return len(r.cfg.Only) == 0 || matchesAny(e.Fingerprint, r.cfg.Only)
}

func matchesAny(fp string, prefixes []string) bool {
	for _, p := range prefixes {
		if len(p) >= 4 && strings.HasPrefix(fp, p) {
			return true
		}
	}
	return false
}

// endNoPick ends a run whose tracker offers no error: a budget, stuck, or
// every remaining error skipped.
func (r *runner) endNoPick() (*Result, error) {
	err := r.tracker.Err()
	var se *heal.StopError
	if errors.As(err, &se) {
		switch se.Reason {
		case heal.ReasonStuck:
			r.state.Stop = StopStuck
			return r.end(OutcomeStuck, fmt.Sprintf("stuck: %s in a row after an attempt saw the same errors", plural(r.state.Budget.StuckAfter, "check")))
		case heal.ReasonMaxAttempts:
			r.state.Stop = StopMaxAttempts
			return r.end(OutcomeFailed, fmt.Sprintf("the run's budget is spent: %s in all (budget.max_attempts)", plural(r.tracker.Attempts(), "attempt")))
		case heal.ReasonMaxErrorAttempts:
			r.state.Stop = StopMaxErrorAttempts
			return r.end(OutcomeFailed, fmt.Sprintf("every remaining error has spent its %s (budget.max_error_attempts)", plural(r.state.Budget.MaxErrorAttempts, "attempt")))
		}
	}
	r.state.Stop = StopSkipped
	return r.end(OutcomeFailed, "every remaining error under budget is skipped (--skip/--only)")
}

// checkAndObserve runs the check and records its errors.
func (r *runner) checkAndObserve(ctx context.Context) error {
	r.emit(Event{Kind: EventChecking})
	res, err := r.cfg.Check.Run(ctx)
	if err != nil {
		return err
	}
	r.output = res.Output
	before := r.statuses()
	r.tracker.Observe(res.Errors)
	r.state.Checks++
	sum := summarize(res)
	if sum.Output, err = r.store.WriteCheckOutput(r.state.Checks, res.Output); err != nil {
		return err
	}
	r.state.Last = res.Errors
	r.state.LastTally = &res.Tally
	r.state.Passed = res.Passed()
	if err := r.save(); err != nil {
		return err
	}
	if err := r.store.Append(AuditRecord{Time: r.cfg.now(), Kind: "check", Check: sum, Changes: r.changes(before)}); err != nil {
		return err
	}
	r.emit(Event{Kind: EventCheck, Message: fmt.Sprintf("exit %d, %s", res.ExitCode, plural(len(res.Errors), "error"))})
	return nil
}

func summarize(res CheckResult) *CheckSummary {
	return &CheckSummary{ExitCode: res.ExitCode, Errors: len(res.Errors), DurationMS: res.Duration.Milliseconds(), TimedOut: res.TimedOut}
}

// attempt pays for one attempt on e, asks the fixer, and finishes it.
func (r *runner) attempt(ctx context.Context, e heal.TrackedError) error {
	before, err := r.tree.Snapshot(ctx)
	if err != nil {
		return err
	}
	if err := r.tracker.Spend(e.Fingerprint, ""); err != nil {
		return err
	}
	req := r.request(ctx, e)
	p := &Pending{Attempt: r.tracker.Attempts(), Fingerprint: e.Fingerprint, BeforeTree: before, Started: r.cfg.now()}
	r.state.Pending = p
	if err := r.save(); err != nil {
		return err
	}
	r.emit(Event{Kind: EventAttempt, Error: req.Error.TrackedError})
	ans, ferr := r.cfg.Fixer.Fix(ctx, req)
	p.PromptHash = ans.PromptHash
	if ctx.Err() != nil {
		// The edit may be half made: the resumed run checks it. It is
		// fixed now, at the interrupt, so that what the user edits before
		// --resume is theirs and never taken for the fixer's, nor
		// reverted with it. The run's context is gone; this is brief.
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), interruptSnapshotTimeout)
		defer cancel()
		if err := r.settle(sctx, p, true); err != nil {
			var se *StorageError
			if errors.As(err, &se) {
				return err
			}
			// Without an "after" snapshot the resumed run cannot tell the
			// fixer's edit from the user's, and says so (sinceInterrupt).
		}
		return ctx.Err()
	}
	if err := r.settle(ctx, p, false); err != nil {
		return err
	}
	if err := r.finish(ctx, p, ans, ferr, gap{}); err != nil {
		return err
	}
	if ferr != nil && classify.Classify(ferr).Class == classify.Fatal {
		r.fatal = ferr
	}
	return nil
}

// request builds what the fixer is told about e.
func (r *runner) request(ctx context.Context, e heal.TrackedError) Request {
	req := Request{
		Run: r.state.ID, Attempt: r.tracker.Attempts(), MaxAttempts: r.state.Budget.MaxAttempts,
		ErrorAttempt: e.Attempts + 1,
		Error:        Error{TrackedError: e},
		Context:      r.contextFor(e), Workdir: r.cfg.Workdir, Check: r.cfg.Check.Argv,
		Protected:  protectedPaths(r.cfg.Workdir, r.cfg.Home),
		OutputTail: tail(r.output, 40),
	}
	if cur, ok := r.find(e.Fingerprint); ok {
		req.Error.TrackedError = cur
		req.ErrorAttempt = cur.Attempts
	}
	f := newFence(req.Workdir, req.Protected)
	if l, ok := locate(ctx, f, e.Message, r.output); ok {
		req.Error.Location = &l
		if req.Source = readSource(ctx, f, l); req.Source != nil {
			req.Source.Text = r.redact(req.Source.Text)
		}
	}
	req.Group = groupOf(r.tracker.Errors(), req.Error.TrackedError)
	for _, h := range r.cfg.Hints {
		if h.Match == nil || h.Match.MatchString(e.Message) || h.Match.MatchString(e.Name) {
			req.Hints = append(req.Hints, h.Text)
		}
	}
	for _, a := range r.state.Attempts {
		if a.Fingerprint == e.Fingerprint {
			req.Previous = append(req.Previous, a)
		}
	}
	return req
}

// redact replaces the spec's secrets in text (Config.Redact).
func (r *runner) redact(text string) string {
	if r.cfg.Redact == nil {
		return text
	}
	return r.cfg.Redact(text)
}

func (r *runner) find(fp string) (heal.TrackedError, bool) {
	for _, e := range r.tracker.Errors() {
		if e.Fingerprint == fp {
			return e, true
		}
	}
	return heal.TrackedError{}, false
}

// interruptSnapshotTimeout bounds the "after" snapshot of an attempt the
// run's interrupt cut short: long enough for git add on a large tree, short
// enough that a second Ctrl-C is not needed.
const interruptSnapshotTimeout = 30 * time.Second

// settle fixes an attempt's edit: the tree's "after" snapshot is kept in
// the pending attempt and saved, so that changes made later (while the run
// is stopped) are known not to be the fixer's. An interrupted attempt's
// patch is also written, to undo it without resuming.
func (r *runner) settle(ctx context.Context, p *Pending, interrupted bool) error {
	after, err := r.tree.Snapshot(ctx)
	if err != nil {
		return err
	}
	p.AfterTree = after
	if interrupted {
		if _, _, _, err := r.recordEdit(ctx, p); err != nil {
			return err
		}
	}
	return r.save()
}

// recordEdit writes the pending attempt's edit (its before and after
// snapshots) as its patch and returns it, the files it changes, and the
// patch's path in the run directory ("" for no change).
func (r *runner) recordEdit(ctx context.Context, p *Pending) (patch []byte, files []string, rel string, err error) {
	patch, files, err = r.tree.Diff(ctx, p.BeforeTree, p.AfterTree)
	if err != nil || len(patch) == 0 {
		return nil, nil, "", err
	}
	rel, err = r.store.WritePatch(p.Attempt, patch)
	return patch, files, rel, err
}

// gap is what changed in the tree between an interrupted attempt's end and
// the resume; none for an attempt that was not interrupted.
type gap struct {
	// userFiles changed after the attempt's "after" snapshot: the user's.
	userFiles []string
	// unknown: the run died (kill -9) before it took the "after"
	// snapshot, so the edit recorded may hold the user's changes too.
	unknown bool
}

// attributed reports whether the check after the attempt judges the
// attempt's edit alone, so that a worse check may revert it and a fix may
// be committed.
func (g gap) attributed() bool { return !g.unknown && len(g.userFiles) == 0 }

// sinceInterrupt compares the tree with the interrupted attempt p's end.
// What changed since is the user's: it is left alone and said so. A run
// killed before its "after" snapshot cannot know where the fixer's edit
// ended: everything since the attempt began is recorded as its edit, but
// never reverted or committed, and the user is told so.
func (r *runner) sinceInterrupt(ctx context.Context, p *Pending) (gap, error) {
	now, err := r.tree.Snapshot(ctx)
	if err != nil {
		return gap{}, err
	}
	if p.AfterTree == "" {
		p.AfterTree = now
		r.emit(Event{Kind: EventNote, Message: fmt.Sprintf("attempt %d was cut short before tenax could record its edit (was it killed?): every change since the attempt began is recorded as its edit (%s), but may be yours too, so it is checked and never reverted or committed; undo what is not yours with git apply -R", p.Attempt, filepath.Join(r.store.Dir, "attempts", fmt.Sprintf("%04d.patch", p.Attempt)))})
		return gap{unknown: true}, nil
	}
	_, files, err := r.tree.Diff(ctx, p.AfterTree, now)
	if err != nil {
		return gap{}, err
	}
	if len(files) > 0 {
		r.emit(Event{Kind: EventNote, Message: fmt.Sprintf("changed since attempt %d was interrupted, so yours: %s; they are left alone, not part of its edit, and the attempt is not reverted, since its check judges them too", p.Attempt, listShort(files, 5))})
	}
	return gap{userFiles: files}, nil
}

// finish records an attempt's edit (p's before and after snapshots),
// checks, reverts an edit that made the check strictly worse, and writes
// the audit record. g is what changed since the attempt's end, when it was
// interrupted: a check that judges the user's changes too reverts nothing.
func (r *runner) finish(ctx context.Context, p *Pending, ans Answer, ferr error, g gap) error {
	st := r.state
	target, _ := r.find(p.Fingerprint)
	rec := AuditRecord{
		Kind: "attempt", Attempt: p.Attempt, Fingerprint: p.Fingerprint, Name: target.Name, Message: target.Message,
		ErrorStatus: string(target.Status), PromptHash: p.PromptHash, Fixer: ans.Summary, Reasks: ans.Reasks,
		InputTokens: ans.Usage.InputTokens, OutputTokens: ans.Usage.OutputTokens, CostUSD: ans.CostUSD,
	}
	if ferr != nil {
		rec.FixerError = r.redact(ferr.Error())
	}
	rec.Fixer = r.redact(rec.Fixer)
	st.Usage = st.Usage.Add(ans.Usage)
	st.CostUSD += ans.CostUSD

	patch, files, rel, err := r.recordEdit(ctx, p)
	if err != nil {
		return err
	}
	rec.UserFiles = g.userFiles
	summary := AttemptSummary{Attempt: p.Attempt, Fingerprint: p.Fingerprint, Files: files, Summary: cut(firstNonEmpty(rec.Fixer, rec.FixerError), 300)}
	if len(patch) > 0 {
		rec.Edit = &Edit{Files: files, Patch: rel}
		summary.Patch = rel
	} else {
		rec.Edit = &Edit{Files: []string{}}
	}

	before := r.statuses()
	if err := r.checkEdit(ctx, p, target, patch, rel, g, before, &rec, &summary); err != nil {
		return err
	}
	if g.unknown && rec.Reason == "" {
		rec.Reason = "tenax stopped before it could record where the fixer's edit ended: the edit may hold changes of yours"
	}
	if rec.Changes == nil {
		rec.Changes = r.changes(before)
	}
	rec.Result = r.resultOf(p.Fingerprint, rec.Reverted)
	summary.Result = rec.Result
	r.commitFix(ctx, p, target, files, g, &rec)
	rec.Time = r.cfg.now()
	st.Attempts = append(st.Attempts, summary)
	st.Pending = nil
	if err := r.save(); err != nil {
		return err
	}
	if err := r.store.Append(rec); err != nil {
		return err
	}
	r.emit(Event{Kind: EventResult, Error: target, Result: rec.Result, Message: attemptMessage(&rec, files, ferr)})
	return nil
}

// checkEdit runs the check after an attempt that changed files and
// reverts an edit that made it strictly worse (more distinct errors, or
// one that was fixed back), unless the check judged changes that may not
// be the fixer's (g). before is the errors' statuses before the check.
func (r *runner) checkEdit(ctx context.Context, p *Pending, target heal.TrackedError, patch []byte, rel string, g gap, before map[string]heal.Status, rec *AuditRecord, summary *AttemptSummary) error {
	st := r.state
	prevErrs := st.Last
	prevSet := fingerprintSet(prevErrs)
	if len(patch) == 0 {
		// Nothing changed: the check would say what it said.
		r.tracker.Observe(prevErrs)
		rec.Check = &CheckSummary{ExitCode: -1, Errors: len(prevErrs), Skipped: "the attempt changed no file"}
	} else {
		saved, err := r.tracker.MarshalJSON()
		if err != nil {
			return err
		}
		r.emit(Event{Kind: EventChecking, Error: target})
		res, err := r.cfg.Check.Run(ctx)
		if err != nil {
			return err
		}
		st.Checks++
		rec.Check = summarize(res)
		if rec.Check.Output, err = r.store.WriteCheckOutput(st.Checks, res.Output); err != nil {
			return err
		}
		r.output = res.Output
		judged, less := r.judged(res)
		r.tracker.Observe(judged)
		regressed := r.newlyRegressed(before)
		// More errors from a check that now runs more tests (an import
		// fixed) were there all along: they are not the edit's doing.
		moreErrors := len(fingerprintSet(res.Errors)) > len(prevSet) && !res.Tally.moreThan(st.LastTally)
		worse := !res.Passed() && (moreErrors || len(regressed) > 0 || less != "")
		switch {
		case worse && !r.cfg.KeepWorse && g.attributed():
			rec.Changes = r.changes(before)
			if err := r.tree.Revert(ctx, patch); err != nil {
				return fmt.Errorf("fix: revert attempt %d (undo it by hand with: git apply -R %s): %w", p.Attempt, filepath.Join(r.store.Dir, summary.Patch), err)
			}
			// Back to the state before the check; the reverted tree is the
			// one the previous check saw.
			if err := r.tracker.UnmarshalJSON(saved); err != nil {
				return err
			}
			r.tracker.Observe(prevErrs)
			rec.Reverted, summary.Reverted = true, true
			why := fmt.Sprintf("%s → %d", plural(len(prevSet), "error"), len(fingerprintSet(res.Errors)))
			if len(regressed) > 0 {
				why += ", regressed: " + strings.Join(regressed, ", ")
			}
			if less != "" {
				why += ", " + less
			}
			rec.Reason = "the check got worse (" + why + "); the edit was reverted"
		default:
			if worse && !g.attributed() {
				rec.Reason = fmt.Sprintf("the check got worse (%s → %d), but it judged changes that may not be the fixer's: the edit is kept (undo it with git apply -R %s)", plural(len(prevSet), "error"), len(fingerprintSet(res.Errors)), filepath.Join(r.store.Dir, rel))
			}
			if less != "" && rec.Reason == "" {
				rec.Reason = "the check got worse (" + less + "); the edit is kept (on_worse: keep), and the errors it did not look at keep their status"
			}
			st.Last, st.LastTally = judged, &res.Tally
			st.Passed = res.Passed()
		}
	}
	return nil
}

// commitFix commits the files of an attempt that fixed its error, when
// asked to. A commit of files the user may have changed too would take
// their work for the fixer's, so an unattributed edit is not committed.
func (r *runner) commitFix(ctx context.Context, p *Pending, target heal.TrackedError, files []string, g gap, rec *AuditRecord) {
	if !r.cfg.Commit || rec.Result != heal.ResultFixed || len(files) == 0 || !g.attributed() {
		return
	}
	msg := fmt.Sprintf("tenax fix: %s\n\n%s\n\nFix run %s, attempt %d.", target.Name, cut(target.Message, 500), r.state.ID, p.Attempt)
	if err := r.tree.Commit(ctx, files, msg); err != nil {
		rec.Reason = strings.TrimSpace(rec.Reason + " commit failed: " + err.Error())
	} else {
		rec.Committed = true
	}
}

// attemptMessage is what the attempt's result event says: its reason, or
// the files it changed, and why the fixer failed when it did.
func attemptMessage(rec *AuditRecord, files []string, ferr error) string {
	msg := ""
	if len(files) > 0 {
		msg = strings.Join(files, ", ")
	}
	if rec.Reason != "" {
		msg = rec.Reason
	}
	if ferr != nil {
		// Else a fixer that fails every time (a typo in its script, a
		// timeout, answers that never apply) shows as "still failing",
		// its reason only in the audit trail.
		why := strings.TrimPrefix(strings.TrimPrefix(rec.FixerError, "fix: "), "the fixer ")
		why = "the fixer failed: " + cut(strings.Join(strings.Fields(why), " "), 300)
		if msg != "" {
			why = msg + "; " + why
		}
		msg = why
	}
	return msg
}

// judged are the errors a check after an attempt judges: its own, and,
// when it reports less than the check before (see Tally.lessThan), the
// earlier errors it did not look at. less says how it reports less.
func (r *runner) judged(res CheckResult) (errs []heal.Observed, less string) {
	if res.Passed() {
		return res.Errors, ""
	}
	less = res.Tally.lessThan(r.state.LastTally)
	if less == "" {
		return res.Errors, ""
	}
	return withUnjudged(res.Errors, r.state.Last), less
}

// resultOf is the attempt's result after its check.
func (r *runner) resultOf(fp string, reverted bool) string {
	if reverted {
		return "reverted"
	}
	audit := r.tracker.Audit()
	if n := len(audit); n > 0 && audit[n-1].Fingerprint == fp {
		return audit[n-1].Result
	}
	return heal.ResultStillFailing
}

// newlyRegressed names the errors that the latest Observe marked
// regressed and were not regressed before.
func (r *runner) newlyRegressed(before map[string]heal.Status) []string {
	var out []string
	for _, e := range r.tracker.Errors() {
		if e.Status == heal.StatusRegressed && before[e.Fingerprint] != heal.StatusRegressed {
			out = append(out, e.Name)
		}
	}
	return out
}

func fingerprintSet(errs []heal.Observed) map[string]bool {
	set := make(map[string]bool, len(errs))
	for _, o := range errs {
		set[heal.Fingerprint(o.Name, o.Message)] = true
	}
	return set
}

func (r *runner) statuses() map[string]heal.Status {
	m := map[string]heal.Status{}
	for _, e := range r.tracker.Errors() {
		m[e.Fingerprint] = e.Status
	}
	return m
}

// changes lists the statuses that differ from before.
func (r *runner) changes(before map[string]heal.Status) []StatusChange {
	var out []StatusChange
	for _, e := range r.tracker.Errors() {
		if from := before[e.Fingerprint]; from != e.Status {
			out = append(out, StatusChange{Fingerprint: e.Fingerprint, Name: e.Name, From: from, To: e.Status})
		}
	}
	return out
}

// counts are the tracked errors by status.
func (r *runner) counts() map[heal.Status]int {
	c := map[heal.Status]int{}
	for _, e := range r.tracker.Errors() {
		if p := r.state.Pending; p != nil && p.Fingerprint == e.Fingerprint {
			c[e.Status]++ // its last attempt is not judged yet
			continue
		}
		c[ShownStatus(e, r.state.Budget)]++
	}
	return c
}

func (r *runner) save() error {
	t, err := r.tracker.MarshalJSON()
	if err != nil {
		return err
	}
	r.state.Tracker = t
	r.state.Updated = r.cfg.now()
	return r.store.Save(r.state)
}

func (r *runner) emit(e Event) {
	if r.cfg.OnEvent == nil {
		return
	}
	e.Run = r.state.ID
	e.Attempt, e.MaxAttempts = r.tracker.Attempts(), r.state.Budget.MaxAttempts
	e.MaxErrorAttempts = r.state.Budget.MaxErrorAttempts
	e.Counts = r.counts()
	r.cfg.OnEvent(e)
}

// end closes the run with an outcome.
func (r *runner) end(outcome, reason string) (*Result, error) {
	st := r.state
	st.Outcome, st.Reason = outcome, reason
	if err := r.save(); err != nil {
		return nil, err
	}
	if err := r.store.Append(AuditRecord{Time: r.cfg.now(), Kind: "stop", Outcome: outcome, Reason: reason, Attempt: r.tracker.Attempts()}); err != nil {
		return nil, err
	}
	r.emit(Event{Kind: EventStop, Result: outcome, Message: reason})
	return r.result(), nil
}

// stopped ends a run on an error: an interrupt keeps it resumable, any
// other error is returned with the result so far.
func (r *runner) stopped(ctx context.Context, err error) (*Result, error) {
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		r.state.Outcome, r.state.Reason = OutcomeInterrupted, "interrupted"
		if serr := r.save(); serr != nil {
			return nil, serr
		}
		// The audit append may fail on a dying process; the state is what
		// counts.
		_ = r.store.Append(AuditRecord{Time: r.cfg.now(), Kind: "stop", Outcome: OutcomeInterrupted, Attempt: r.tracker.Attempts()})
		return r.result(), nil
	}
	r.state.Reason = err.Error()
	_ = r.save()
	return r.result(), err
}

func (r *runner) result() *Result {
	res := &Result{
		ID: r.state.ID, Dir: r.store.Dir, Outcome: r.state.Outcome, Reason: r.state.Reason,
		Attempts: r.tracker.Attempts(), Checks: r.state.Checks, State: r.state,
	}
	for _, e := range r.tracker.Errors() {
		if e.Status != heal.StatusFixed {
			res.Remaining = append(res.Remaining, e)
		}
	}
	return res
}

func mergeUnique(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func listShort(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// hashPrompt identifies a prompt in the audit trail.
func hashPrompt(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}

// marshalRequest is the JSON an exec fixer reads, for the dry run.
func marshalRequest(r Request) string {
	b, _ := json.MarshalIndent(r, "", "  ")
	return string(b)
}
