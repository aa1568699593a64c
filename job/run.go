package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/redact"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	execTask "github.com/tenaxhq/tenax/task/exec"
)

// Options are what `tenax run` and `tenax resume` take besides the spec or
// the job id.
type Options struct {
	// Home is tenax's data directory: the LLM cache lives in Home/cache,
	// and, when Store is nil, the jobs in Home/jobs.
	Home string
	// Store holds the jobs (a JSONL store over Home when nil). A
	// *jsonl.Store whose flush settings are zero takes the spec's
	// checkpoint section.
	Store store.Store
	// StoreFlag, when set, is the --store the caller was given, repeated
	// (its password hidden) in the resume command a run prints.
	StoreFlag string
	// Env looks up ${VAR}s in the spec (os.LookupEnv when nil).
	Env func(string) (string, bool)
	// Version is recorded in the manifest.
	Version string

	// Input replaces the spec's input (run only).
	Input string
	// Output, when set, receives the compacted, idx-ordered results.
	Output string
	// Limit runs at most this many items (0 = all).
	Limit int
	// RetryFailures re-runs items whose latest record failed (resume),
	// narrowed by RetryClasses and RetryFingerprints when they are set.
	RetryFailures bool
	// RetryClasses, when set, re-runs only the failed items of these
	// classes (--retry-failures=retryable,invalid): a run of permanent
	// item failures need not trip the breaker before the retryable ones
	// are reached.
	RetryClasses []classify.Class
	// RetryFingerprints, when set, re-runs only the failed items whose
	// error fingerprint (as status shows it) starts with one of these
	// (--fingerprint). They imply RetryFailures.
	RetryFingerprints []string
	// RetryRoutes, when set, re-runs only the failed items whose record
	// one of these routes produced (--route); it implies RetryFailures.
	RetryRoutes []string
	// Force resumes even though the input changed.
	Force bool
	// AllowEmpty runs an input without items (a completed job of 0
	// items) instead of refusing it.
	AllowEmpty bool
	// Batch runs the job in provider batch mode, whatever the spec's
	// task.mode says (run only; a resume keeps the job's mode).
	Batch bool

	// Interactive says a person is at a terminal: the breaker's default
	// action becomes prompt, and check-ins happen.
	Interactive bool
	// Operator asks that person (console.Prompter on a terminal).
	Operator engine.Operator
	// OnEvent receives the engine's events (besides the logger's use).
	OnEvent func(engine.Event)
	// OnBatchProgress receives, in batch mode, the state of the wave's
	// batches at each poll.
	OnBatchProgress func(batch.Progress)
	// OnStart is called once the engine exists, before any item runs: the
	// CLI starts its progress line and wires its signal handling there.
	OnStart func(Started)
	// Logger receives the run's log lines (slog.Default when nil).
	Logger *slog.Logger
}

// Started describes a run that is about to dispatch its first item.
type Started struct {
	JobID string
	// Dir is the job's directory in a JSONL store, empty in another.
	Dir string
	// Store says where the job lives (DescribeStore).
	Store  string
	Engine *engine.Engine
	// Stats, when set, reads the run's counters instead of Engine.Stats:
	// a batch mode run counts its waves' requests there.
	Stats func() engine.Stats
	// Redact replaces the spec's secrets in a text, for whatever the
	// caller prints about the run (the breaker's Inspect view).
	Redact func(string) string
	// Spec is the job's spec as this run resolved it.
	Spec *spec.Spec
}

// Result is how a run ended.
type Result struct {
	JobID string
	// Dir is the job's directory in a JSONL store, empty in another.
	Dir string
	// Store says where the job lives (DescribeStore).
	Store   string
	Summary engine.Summary
	// Succeeded, Failed and Pending count the job's items after the run,
	// across every run of the job.
	Succeeded, Failed, Pending int
	// CountsErr, when set, is why the counts could not be read after a
	// storage failure (a vanished job directory): they are unknown, not 0.
	CountsErr error
	// ExitCode is the process exit code for this run (docs/records.md, "States and exit codes").
	ExitCode int
	// InputUnread says a --limit run read only the start of the input:
	// the items after it are not counted in Pending yet.
	InputUnread bool
	// ResumeCommand resumes the job when items are left pending or failed;
	// with failures it has --retry-failures.
	ResumeCommand string
	// ExportCommand, set when Options.Output could not be written at the
	// end, writes it again from the job's records.
	ExportCommand string
	// Batch is what a batch mode run did; nil for an online run.
	Batch *BatchResult
}

func (o *Options) env() func(string) (string, bool) {
	if o.Env != nil {
		return o.Env
	}
	return os.LookupEnv
}

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// store returns the job store; a JSONL store flushes as the spec's
// checkpoint section says unless its own settings say otherwise.
func (o *Options) store(s *spec.Spec) store.Store {
	st := o.Store
	if st == nil {
		st = &jsonl.Store{Home: o.Home}
	}
	if js, ok := st.(*jsonl.Store); ok && s != nil {
		c := *js
		if c.FlushEvery == 0 {
			c.FlushEvery = s.Checkpoint.FlushEvery
		}
		if c.FlushInterval == 0 {
			c.FlushInterval = s.Checkpoint.FlushInterval
		}
		return &c
	}
	return st
}

// LoadSpec loads a spec file, as a usage error when it is bad.
func LoadSpec(path string, env func(string) (string, bool)) (*spec.Spec, error) {
	if env == nil {
		env = os.LookupEnv
	}
	s, err := spec.Load(path, env)
	if err != nil {
		return nil, usage(err)
	}
	return s, nil
}

// inputOrigin says where a run's input path came from, for messages about
// it.
type inputOrigin int

const (
	fromSpec     inputOrigin = iota // the spec's input
	fromFlag                        // --input
	fromManifest                    // the job's manifest (resume)
)

// checkInput scans an input once: item count, hash and bad lines. Bad lines
// refuse the run unless the spec says to record them. A missing input or a
// directory is reported where it came from: at the spec's input key, as
// --input, or as the job's recorded input. The scan stops after
// opts.MaxItems items when that is set (a --limit run), and is canceled
// with ctx.
func checkInput(ctx context.Context, path string, from inputOrigin, s *spec.Spec, opts input.ScanOptions) (input.Format, input.Summary, error) {
	if err := checkInputFile(path, from, s); err != nil {
		return "", input.Summary{}, usage(err)
	}
	f, err := formatOf(path, s)
	if err != nil {
		return "", input.Summary{}, usage(err)
	}
	sum, err := input.Scan(ctx, path, f, opts)
	if err != nil {
		if ctx.Err() != nil {
			return "", input.Summary{}, fmt.Errorf("interrupted while reading the input %s: no job was created or changed: %w", path, context.Cause(ctx))
		}
		return "", input.Summary{}, usage(err)
	}
	if sum.BadCount > 0 && s.Input.OnBadLine != "record" {
		var b strings.Builder
		fmt.Fprintf(&b, "the input has %d bad line(s); fix them, or set input.on_bad_line: record to record them as failed items:", sum.BadCount)
		for _, le := range sum.BadLines {
			fmt.Fprintf(&b, "\n  %s", le)
		}
		if sum.BadCount > len(sum.BadLines) {
			fmt.Fprintf(&b, "\n  … and %d more", sum.BadCount-len(sum.BadLines))
		}
		return "", input.Summary{}, usage(errors.New(b.String()))
	}
	return f, sum, nil
}

// checkNotEmpty refuses an input without items: a "completed" job of 0
// items that exits 0 hides a wrong path or an empty export upstream.
func checkNotEmpty(path string, sum input.Summary, opts Options) error {
	if sum.Items > 0 || opts.AllowEmpty {
		return nil
	}
	return usage(fmt.Errorf("the input %s has no items: nothing to run (pass --allow-empty to accept an empty input)", path))
}

// inputBytes is what a manifest's InputBytes says of a scan: 0 when it
// read the whole input, else the bytes its hash covers.
func inputBytes(sum input.Summary) int64 {
	if sum.Complete {
		return 0
	}
	return sum.Bytes
}

// checkInputFile reports an input that is missing or not a regular file.
func checkInputFile(path string, from inputOrigin, s *spec.Spec) error {
	fi, err := os.Stat(path)
	var problem string
	switch {
	case errors.Is(err, fs.ErrNotExist):
		problem = "not found"
	case err != nil:
		return fmt.Errorf("input: %w", err)
	case fi.IsDir():
		problem = "is a directory; tenax reads one file"
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0:
		// The input is read once to count and hash it, again to run it,
		// and again by every resume: a pipe's second open waited for a
		// writer forever, deaf to Ctrl-C, its job left with every item
		// pending.
		problem = "is a pipe, which can be read only once; tenax reads its input again to run it and on every resume: save it to a file first"
	case !fi.Mode().IsRegular() && fi.Mode()&fs.ModeCharDevice == 0:
		problem = "is not a regular file"
	default:
		return nil
	}
	switch from {
	case fromSpec:
		shown := path
		if rel, err := filepath.Rel(s.Dir(), path); err == nil && filepath.IsLocal(rel) {
			shown = rel
		}
		if problem == "not found" {
			return s.ErrorAt("input.path", "input: %s not found (%s)", shown, path)
		}
		return s.ErrorAt("input.path", "input: %s %s", shown, problem)
	case fromFlag:
		return fmt.Errorf("--input %s %s", path, problem)
	default:
		return fmt.Errorf("the job's input %s %s (resume reads the input the job was created with)", path, problem)
	}
}

// formatOf is the spec's input.format when path is the spec's input, and
// what path's extension says otherwise (--input, or a format not given).
func formatOf(path string, s *spec.Spec) (input.Format, error) {
	if s.Input.Format != "" && sameFile(s.Input.Path, path) {
		return input.ParseFormat(s.Input.Format)
	}
	return input.FormatOf(path)
}

// sameFile compares two paths once both are absolute.
func sameFile(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// newInput finds a new job's input (--input over the spec's), checks and
// scans it, and returns it with the spec's path, both absolute: the
// manifest keeps absolute paths, so that a resume works from any
// directory.
func newInput(ctx context.Context, s *spec.Spec, opts Options, scan input.ScanOptions) (inPath, specPath string, format input.Format, sum input.Summary, err error) {
	inPath, from := s.Input.Path, fromSpec
	if opts.Input != "" {
		inPath, from = opts.Input, fromFlag
	}
	if inPath == "" {
		return "", "", "", input.Summary{}, usage(errors.New("no input: set input in the spec or pass --input"))
	}
	if inPath, err = filepath.Abs(inPath); err != nil {
		return "", "", "", input.Summary{}, usage(err)
	}
	if specPath, err = filepath.Abs(s.Path()); err != nil {
		return "", "", "", input.Summary{}, usage(err)
	}
	format, sum, err = checkInput(ctx, inPath, from, s, scan)
	return inPath, specPath, format, sum, err
}

// Run starts a new job from the spec at specPath and runs it.
func Run(ctx context.Context, specPath string, opts Options) (*Result, error) {
	s, err := LoadSpec(specPath, opts.env())
	if err != nil {
		return nil, err
	}
	if err := checkOutput(opts.Output); err != nil {
		return nil, err
	}
	inPath, absSpec, format, sum, err := newInput(ctx, s, opts, input.ScanOptions{MaxItems: opts.Limit})
	if err != nil {
		return nil, err
	}
	if err := checkNotEmpty(inPath, sum, opts); err != nil {
		return nil, err
	}
	if err := CheckOutputNotInput(opts.Output, inPath); err != nil {
		return nil, err
	}
	if opts.Batch {
		if err := useBatchMode(s); err != nil {
			return nil, usage(err)
		}
	}
	b, err := buildTask(s, opts.Home, s.Concurrency.Max, opts.Store)
	if err != nil {
		return nil, usage(err)
	}
	defer b.Close()
	redacted, err := s.Redacted()
	if err != nil {
		return nil, fmt.Errorf("recording the spec: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("interrupted before the job was created: %w", err)
	}
	st := opts.store(s)
	j, err := st.Create(ctx, store.Manifest{
		Name:        s.Name,
		Created:     time.Now(),
		Version:     opts.Version,
		SpecPath:    absSpec,
		Spec:        redacted,
		InputPath:   inPath,
		InputSHA256: sum.SHA256,
		InputBytes:  inputBytes(sum),
		Items:       sum.Items,
		State:       store.StateRunning,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the job: %w", err)
	}
	defer j.Close()
	return execute(ctx, &execution{s: s, b: b, st: st, j: j, inPath: inPath, format: format, scanned: sum, opts: opts})
}

// Resume runs the items of job id that have no record (and, with
// RetryFailures, those whose latest record failed).
//
// id may also be "latest" or a job's name (see ResolveID).
func Resume(ctx context.Context, id string, opts Options) (*Result, error) {
	r, err := findResumable(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	st := opts.store(r.s)
	// The input is read beside the open, which reads the whole results
	// log when the job has no index: each is a pass over a file, and one
	// after the other left a core idle for the input's (issue 38).
	scan := r.scanInputBeside(ctx, opts)
	j, err := st.Open(ctx, r.id)
	if err != nil {
		scan.cancel()
		return nil, err
	}
	defer j.Close()
	format, sum, outcomes, err := r.reconcileInput(ctx, j, opts, scan)
	if err != nil {
		return nil, err
	}
	if err := checkFingerprints(ctx, j, opts.RetryFingerprints); err != nil {
		return nil, err
	}
	if err := checkRetryRoutes(ctx, j, r.s, opts.RetryRoutes); err != nil {
		return nil, err
	}
	b, err := buildTask(r.s, opts.Home, r.s.Concurrency.Max, opts.Store)
	if err != nil {
		return nil, usage(err)
	}
	defer b.Close()
	// The stop reason was the last run's: this run has none yet, and one
	// killed before it ends (kill -9) must not show the last run's
	// "interrupted by SIGINT" beside its stale state.
	if err := j.UpdateManifest(ctx, func(m *store.Manifest) { m.State, m.StopReason = store.StateRunning, "" }); err != nil {
		return nil, err
	}
	return execute(ctx, &execution{s: r.s, b: b, st: st, j: j, inPath: r.m.InputPath, format: format, scanned: sum, outcomes: outcomes, opts: opts})
}

// resumed is a job a resume continues: its id, its manifest as the resume
// found it, and its spec loaded again.
type resumed struct {
	id string
	m  store.Manifest
	s  *spec.Spec
}

// findResumable resolves id and checks, in the order a user meets them,
// what a resume needs before the job is opened for writing: the job, its
// spec file, the --output to write.
func findResumable(ctx context.Context, id string, opts Options) (*resumed, error) {
	id, err := ResolveID(ctx, opts.store(nil), id)
	if err != nil {
		return nil, err
	}
	m, err := readManifest(ctx, opts.store(nil), id)
	if err != nil {
		return nil, err
	}
	if m.SpecPath == "" {
		return nil, usage(fmt.Errorf("job %s does not record its spec file, so it cannot be resumed", id))
	}
	if err := checkOutput(opts.Output); err != nil {
		return nil, err
	}
	if err := CheckOutputNotInput(opts.Output, m.InputPath); err != nil {
		return nil, err
	}
	s, err := LoadSpec(m.SpecPath, opts.env())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, usage(fmt.Errorf("job %s was created from the spec %s, which is no longer there: resume reads the job's spec again from that path; put the spec back there (its resolved form is in the job's manifest) and resume again", id, m.SpecPath))
	}
	if err != nil {
		return nil, err
	}
	return &resumed{id: id, m: m, s: s}, nil
}

// reconcileInput checks the job's input against the job: unchanged (or
// --force), and not shorter than its records; the manifest then says what
// the input is now. It returns the input's format, its scan (what the run
// reads is checked against) and the job's outcomes.
func (r *resumed) reconcileInput(ctx context.Context, j store.Job, opts Options, scan *inputScan) (input.Format, input.Summary, store.Outcomes, error) {
	m := r.m
	format, sum, err := scan.wait()
	if err != nil {
		return "", input.Summary{}, nil, err
	}
	was, now := sum.SHA256, sum.SHA256
	if m.InputBytes > 0 {
		was = sum.PrefixSHA256 // "" when the file is now shorter than the prefix
	}
	if was != m.InputSHA256 {
		if !opts.Force {
			return "", input.Summary{}, nil, usage(fmt.Errorf("the input %s changed since job %s was created (sha256 %.12s…, now %.12s…); resuming would mix results of two inputs. Pass --force to resume anyway", m.InputPath, r.id, m.InputSHA256, orDefault(was, now)))
		}
	}
	// Read before the item count changes: a record past the job's items
	// is refused as damage (a line appended by hand).
	outcomes, err := j.Outcomes(ctx)
	if err != nil {
		return "", input.Summary{}, nil, fmt.Errorf("reading the checkpoint: %w", err)
	}
	if len(outcomes) > sum.Items {
		// A forced resume over a shorter input would leave records of
		// items the input no longer has, counted as if it did.
		return "", input.Summary{}, nil, usage(fmt.Errorf("the input %s now has %d items, but job %s has records up to idx %d: a shorter input cannot continue this job; start a new one with `tenax run`", m.InputPath, sum.Items, r.id, len(outcomes)-1))
	}
	if was != m.InputSHA256 || m.InputBytes > 0 {
		err := j.UpdateManifest(ctx, func(m *store.Manifest) {
			m.InputSHA256, m.InputBytes, m.Items = sum.SHA256, inputBytes(sum), sum.Items
		})
		if err != nil {
			return "", input.Summary{}, nil, err
		}
	}
	return format, sum, outcomes, nil
}

// inputScan is a scan of a resumed job's input running in its own
// goroutine.
type inputScan struct {
	cancel func()
	done   chan struct{}
	format input.Format
	sum    input.Summary
	err    error
}

// scanInputBeside starts r.scanInput in a goroutine: wait gives its
// result; cancel stops it, when the resume stops before it needs it, and
// waits for its goroutine to end.
func (r *resumed) scanInputBeside(ctx context.Context, opts Options) *inputScan {
	ctx, cancel := context.WithCancelCause(ctx)
	s := &inputScan{done: make(chan struct{})}
	s.cancel = func() { cancel(errResumeStopped); <-s.done }
	go func() {
		defer close(s.done)
		defer cancel(nil)
		s.format, s.sum, s.err = r.scanInput(ctx, opts)
	}()
	return s
}

// errResumeStopped is the cause an input's scan is stopped with when the
// resume it was read for stops before it needs it.
var errResumeStopped = errors.New("the resume stopped before it read its input")

// wait returns the scan's result once it has ended.
func (s *inputScan) wait() (input.Format, input.Summary, error) {
	<-s.done
	return s.format, s.sum, s.err
}

// scanInput reads the job's input again as far as this run needs.
func (r *resumed) scanInput(ctx context.Context, opts Options) (input.Format, input.Summary, error) {
	m := r.m
	// A job created by a --limit run hashed only a prefix of its input:
	// check that prefix, and read on as far as this run needs.
	scan := input.ScanOptions{PrefixBytes: m.InputBytes}
	if m.InputBytes > 0 && opts.Limit > 0 {
		scan.MaxItems = m.Items + opts.Limit
	}
	// An input read whole when the job was created was checked then: an
	// unchanged one needs only counting and hashing, not decoding again.
	scan.CountOnly = m.InputBytes == 0
	format, sum, err := checkInput(ctx, m.InputPath, fromManifest, r.s, scan)
	if err != nil {
		return "", input.Summary{}, err
	}
	if scan.CountOnly && sum.SHA256 != m.InputSHA256 && opts.Force {
		// A changed input, resumed anyway: check it as a new one.
		scan.CountOnly = false
		return checkInput(ctx, m.InputPath, fromManifest, r.s, scan)
	}
	return format, sum, nil
}

// groupsFile is the job directory's record of the process groups an exec
// task's run started (see execTask.GroupFile).
const groupsFile = "process-groups"

// recordGroups makes an exec task, or an agent's exec tools, record their
// process groups in the job directory dir, after ending those a killed
// run of the job left running: the job is held, so every run the record
// names is dead. Other tasks, and jobs without a directory (PostgreSQL),
// run as they are.
func recordGroups(t task.Task, dir string, log *slog.Logger) (task.Task, *execTask.GroupFile, error) {
	if dir == "" || !runsCommands(t) {
		return t, nil, nil
	}
	path := filepath.Join(dir, groupsFile)
	n, err := execTask.EndLeftoverGroups(path)
	if err != nil {
		return nil, nil, fmt.Errorf("reading the process groups a killed run left (%s): %w", path, err)
	}
	if n > 0 {
		log.Warn("ended the process groups a killed run of this job left running", "groups", n)
	}
	g, err := execTask.OpenGroupFile(path)
	if err != nil {
		return nil, nil, err
	}
	return withGroups(t, g), g, nil
}

// runsCommands reports whether t starts processes: an exec task, or an
// agent with an exec tool.
func runsCommands(t task.Task) bool {
	switch t := t.(type) {
	case *execTask.Task:
		return true
	case *agent.Task:
		return slices.ContainsFunc(t.Runners(), runsCommands)
	}
	return false
}

// withGroups makes t's commands (an exec task's, an agent's exec tools')
// record their process groups in g.
func withGroups(t task.Task, g *execTask.GroupFile) task.Task {
	switch t := t.(type) {
	case *execTask.Task:
		return t.WithGroups(g)
	case *agent.Task:
		return t.WithRunners(func(r task.Task) task.Task { return withGroups(r, g) })
	}
	return t
}

// readManifest reads a job's manifest without taking its lock.
func readManifest(ctx context.Context, st store.Store, id string) (store.Manifest, error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Manifest{}, usage(fmt.Errorf("no job %s in %s (see `tenax status --all`)", id, DescribeStore(st)))
		}
		return store.Manifest{}, err
	}
	defer j.Close()
	return j.Manifest(), nil
}

// execution is one run of a job, from execute to conclude: the wiring
// its steps share, online or in batch mode.
type execution struct {
	s *spec.Spec
	b *built
	// st holds j, the job: its manifest, notes and reads. Its records are
	// written through cp.
	st       store.Store
	j        store.Job
	inPath   string
	format   input.Format
	scanned  input.Summary  // the scan of inPath the job hashed: what a run reads is checked against it
	outcomes store.Outcomes // the job's items' outcomes before this run
	opts     Options

	// Set by execute.
	m   store.Manifest
	dir string            // the job's directory in a JSONL store, else ""
	cp  engine.Checkpoint // where records go: j, the spec's secrets redacted
	log *slog.Logger
	// started is when this run began: the control file's requests from
	// before it are not for it (watchControl).
	started time.Time
	// hold reads the operator's pause in force on the run's engine, for
	// the manifest (notePause); nil until the engine exists.
	hold func() *engine.Hold
}

// execute runs the job's items that x.outcomes leave to run, online or in
// batch mode, and closes the run properly whatever stopped it.
func execute(ctx context.Context, x *execution) (*Result, error) {
	x.m = x.j.Manifest()
	x.dir = jobDir(x.j)
	x.log = x.opts.logger().With("job", x.m.ID)
	x.started = time.Now()
	if x.m.Paused != nil {
		// A run that died paused: this one starts unpaused.
		if err := x.j.UpdateManifest(ctx, func(m *store.Manifest) { m.Paused = nil }); err != nil {
			return nil, err
		}
	}
	x.cp = x.j
	if secrets := x.s.Secrets(); len(secrets) > 0 {
		// A command or a server may echo a secret it was given (an env
		// value, a header): it must not reach the records or the logs.
		x.cp = &redact.Checkpoint{Writer: x.j, Redact: x.s.Redact}
		x.log = slog.New(&redact.Handler{Handler: x.log.Handler(), Redact: x.s.Redact})
	}
	cfg, err := engineConfig(x.s, x.opts.Interactive)
	if err != nil {
		return nil, usage(err)
	}
	cfg.Operator = x.opts.Operator
	inBatch, err := hasLedger(ctx, x.j, x.dir)
	if err != nil {
		return nil, err
	}
	if x.s.Task.Mode == "batch" || inBatch {
		return x.executeBatch(ctx, cfg)
	}
	return x.executeOnline(ctx, cfg)
}

// jobDir is the job's directory in a JSONL store (its process groups and
// batch ledger live there), "" in a store without one.
func jobDir(j store.Job) string {
	if jj, ok := j.(interface{ Dir() string }); ok {
		return jj.Dir()
	}
	return ""
}

// executeOnline runs the engine over the input.
func (x *execution) executeOnline(ctx context.Context, cfg engine.Config) (*Result, error) {
	cfg.Routes = x.b.routes
	want, skipped, err := x.plan(ctx, &cfg)
	if err != nil {
		return nil, err
	}
	// The input is read as it was scanned: a file changed mid-run stops
	// the run (exit 4) before an item of another input runs.
	r, err := input.OpenScanned(x.inPath, x.format, x.scanned)
	if err != nil {
		return nil, usage(err)
	}
	defer r.Close()
	runTask, groups, err := recordGroups(x.b.task, x.dir, x.log)
	if err != nil {
		return nil, err
	}
	defer groups.Close()
	var redactSteps func(string) string
	if len(x.s.Secrets()) > 0 {
		redactSteps = x.s.Redact
	}
	if runTask, err = durableAgent(ctx, runTask, x.j, redactSteps); err != nil {
		return nil, err
	}
	cfg.Routes = agentRoutes(runTask, cfg.Routes)
	e := engine.New(cfg, runTask, x.cp)
	x.hold = func() *engine.Hold { return e.Stats().Hold }
	x.log.Info("job started", "spec", x.s.Path(), "input", x.inPath, "items", x.m.Items, "skipped", skipped, "dir", x.dir)
	if x.opts.OnStart != nil {
		x.opts.OnStart(Started{JobID: x.m.ID, Dir: x.dir, Store: DescribeStore(x.st), Engine: e, Redact: x.s.Redact, Spec: x.s})
	}
	stopWatch := x.watchControl(ctx, e, true)
	sum, runErr := e.Run(ctx, x.source(r, want))
	stopWatch()
	return x.conclude(ctx, sum, runErr)
}

// plan says which items this run wants (those without a record, and the
// failed ones it retries) and how many it skips, and sets what the engine
// is told of them, with the spec's cache, validator and the run's events.
func (x *execution) plan(ctx context.Context, cfg *engine.Config) (want func(idx int) bool, skipped int, err error) {
	retrySome, err := failuresToRetry(ctx, x.j, x.opts)
	if err != nil {
		return nil, 0, err
	}
	want = func(idx int) bool {
		switch x.outcomes.Get(idx) {
		case store.Succeeded:
			return false
		case store.Failed:
			if retrySome != nil {
				_, retry := retrySome[idx]
				return retry
			}
			return x.opts.RetryFailures
		}
		return true
	}
	for idx := range x.m.Items {
		if !want(idx) {
			skipped++
		}
	}
	cfg.Total, cfg.Skipped, cfg.Planned = x.m.Items, skipped, x.opts.Limit
	if x.b.cache != nil {
		cfg.Cache = x.b.cache
	}
	cfg.Validator = x.b.validator
	userEvents := x.opts.OnEvent
	events := newEventLog(x.log)
	cfg.OnEvent = func(ev engine.Event) {
		events.log(ev)
		if (ev.Kind == engine.Held || ev.Kind == engine.Unheld) && x.hold != nil {
			x.notePause(ctx, x.hold)
		}
		if userEvents != nil {
			userEvents(ev)
		}
	}
	return want, skipped, nil
}

// source yields the items of r the run wants, at most opts.Limit of them;
// an unreadable line is an *engine.BadItem.
func (x *execution) source(r *input.Reader, want func(idx int) bool) engine.Source {
	dispatched := 0
	skip := func(idx int) bool { return !want(idx) }
	return engine.SourceFunc(func() (task.Item, error) {
		for {
			if x.opts.Limit > 0 && dispatched >= x.opts.Limit {
				return task.Item{}, io.EOF
			}
			if !want(r.NextIdx()) {
				// Items with their outcome: read past them, undecoded.
				if err := r.SkipWhile(skip); err != nil {
					return task.Item{}, err
				}
				continue
			}
			it, err := r.Next()
			var le *input.LineError
			switch {
			case errors.As(err, &le):
				if !want(it.Idx) {
					continue
				}
				dispatched++
				return task.Item{}, &engine.BadItem{Item: it, Err: le}
			case err != nil:
				return task.Item{}, err
			}
			if !want(it.Idx) {
				continue
			}
			dispatched++
			return it, nil
		}
	})
}

// conclude closes a run properly whatever stopped it: the records are
// saved, the outcomes counted, the output written, the manifest's state
// set and the exit code chosen.
func (x *execution) conclude(ctx context.Context, sum engine.Summary, runErr error) (*Result, error) {
	m := x.j.Manifest()
	// Whatever stopped the run, what finished is saved.
	closeCtx := context.WithoutCancel(ctx)
	storageFailed := sum.Stop == engine.StopStorage
	if err := x.j.Finish(closeCtx); err != nil {
		storageFailed = true
		if runErr == nil {
			runErr = fmt.Errorf("finishing the job: %w", err)
		}
	}
	res := &Result{JobID: m.ID, Dir: x.dir, Store: DescribeStore(x.st), Summary: sum}
	// After a storage failure the store still counts what it holds (the
	// records written before it) with the error: the summary must say
	// those, not "0 succeeded, 0 failed, N pending".
	after, err := x.j.Outcomes(closeCtx)
	if err != nil {
		storageFailed = true
		if runErr == nil {
			runErr = err
		}
		if after == nil {
			res.CountsErr = err
		}
	}
	res.Succeeded, res.Failed, res.Pending = after.Count(m.Items)
	res.InputUnread = m.InputBytes > 0
	outputFailed := false
	if x.opts.Output != "" {
		if err := store.WriteOutput(closeCtx, x.j, x.opts.Output, OutputFormat(x.opts.Output), nil); err != nil && runErr == nil {
			runErr = fmt.Errorf("writing %s: %w", x.opts.Output, err)
			outputFailed = true
			res.ExportCommand = "tenax export " + m.ID + " -o " + shellQuote(x.opts.Output) + LocationFlags(x.opts.Home, x.opts.StoreFlag)
		}
	}
	state := store.StateCompleted
	switch {
	case sum.Stop == engine.StopSignal:
		state = store.StateInterrupted
	case storageFailed:
		state = store.StateStorageFailed
	case sum.Stop != engine.StopNone:
		state = store.StateAborted
	case res.Failed > 0:
		state = store.StateFailed
	case res.Pending > 0 || res.InputUnread:
		state = store.StateIncomplete
	}
	if err := x.j.UpdateManifest(closeCtx, func(m *store.Manifest) { endRun(m, state, sum) }); err != nil && runErr == nil {
		runErr = err
	}
	res.ExitCode = exitcode.For(sum, res.Failed)
	if runErr != nil {
		// The run's own storage or input failed: whatever the items did,
		// the job is not what it should be until a resume.
		res.ExitCode = exitcode.Storage
	}
	// A job whose directory was removed has nothing to resume; one whose
	// counts could not be read after an error may still have items left. A
	// failed item runs again only with --retry-failures: the hint must say
	// so, or the failures are silently left behind.
	// An --output that could not be written leaves nothing to resume: the
	// export command writes it again.
	gone := errors.Is(runErr, store.ErrNotFound)
	if !gone && (res.Pending > 0 || res.Failed > 0 || res.InputUnread || (runErr != nil && !outputFailed)) {
		res.ResumeCommand = "tenax resume " + m.ID
		if res.Failed > 0 {
			res.ResumeCommand += " --retry-failures"
		}
		res.ResumeCommand += LocationFlags(x.opts.Home, x.opts.StoreFlag)
	}
	x.log.Info("job stopped", "state", state, "succeeded", res.Succeeded, "failed", res.Failed, "pending", res.Pending, "stop", sum.Stop.String(), "elapsed", sum.Elapsed.Round(time.Millisecond))
	return res, runErr
}

// endRun writes an ended run into the job's manifest: its state and why
// it stopped, and what it adds to the job's counts over every run.
func endRun(m *store.Manifest, state store.State, sum engine.Summary) {
	m.State, m.Paused = state, nil // an ended run holds no pause
	m.StopReason = sum.StopDetail
	m.BreakerTrips += sum.Trips
	m.RunSeconds += sum.Elapsed.Seconds()
	for _, rt := range sum.Routes {
		m.AddRouteBreaker(rt.Name, rt.Faults, rt.Refused)
	}
}

// LocationFlags are the --home and --store flags, each with a leading
// space, that a command printed for the user must repeat to find the job
// again: none for the default home and no --store. A --store URL's
// password is hidden.
func LocationFlags(home, storeFlag string) string {
	var b strings.Builder
	if home != "" && home != DefaultHome {
		b.WriteString(" --home " + shellQuote(home))
	}
	if storeFlag != "" {
		shown := storeFlag
		if loc, err := store.ParseLocation(storeFlag); err == nil {
			shown = loc.String()
		}
		b.WriteString(" --store " + shellQuote(shown))
	}
	return b.String()
}

// checkOutput refuses an --output that cannot be written before any call
// is made: a missing or read-only directory was found only after the whole
// run, its calls paid for.
func checkOutput(path string) error {
	if path == "" {
		return nil
	}
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return usage(fmt.Errorf("--output %s is a directory: name a file (results.jsonl or results.csv)", path))
	}
	// The same temporary file the output is written through at the end.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return usage(fmt.Errorf("--output %s cannot be written (%w): create its directory or name another file", path, err))
	}
	f.Close()
	return os.Remove(f.Name())
}

// CheckOutputNotInput refuses an output file (--output, export -o) that is
// the job's input: writing the results over it destroyed the input a
// resume needs. The same file is found by its identity when both exist
// (a link or another path to it), by its absolute path otherwise.
func CheckOutputNotInput(output, input string) error {
	if output == "" || input == "" {
		return nil
	}
	same := sameFile(output, input)
	if a, err := os.Stat(output); err == nil {
		if b, err := os.Stat(input); err == nil {
			same = same || os.SameFile(a, b)
		}
	}
	if same {
		return usage(fmt.Errorf("the output %s is the job's input %s: writing the results there would overwrite the input; name another file", output, input))
	}
	return nil
}

// shellQuote quotes s for a POSIX shell when it holds more than letters,
// digits and punctuation a shell leaves alone.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_./:@%+=,-") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// failuresToRetry returns the failed items a resume re-runs when the
// options narrow them by class or fingerprint, nil when they do not (every
// failed item with RetryFailures, none without).
func failuresToRetry(ctx context.Context, j store.Job, opts Options) (map[int]struct{}, error) {
	if len(opts.RetryClasses) == 0 && len(opts.RetryFingerprints) == 0 && len(opts.RetryRoutes) == 0 {
		return nil, nil
	}
	some := map[int]struct{}{}
	err := j.Failures(ctx, func(r store.Record) error {
		if len(opts.RetryClasses) > 0 && !slices.Contains(opts.RetryClasses, r.Class) {
			return nil
		}
		if len(opts.RetryFingerprints) > 0 && !slices.ContainsFunc(opts.RetryFingerprints, func(fp string) bool {
			return fp != "" && strings.HasPrefix(r.Fingerprint, fp)
		}) {
			return nil
		}
		if len(opts.RetryRoutes) > 0 && !slices.Contains(opts.RetryRoutes, r.Route) {
			return nil
		}
		some[r.Idx] = struct{}{}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the failures: %w", err)
	}
	return some, nil
}

// checkFingerprints refuses a --fingerprint that is the prefix of no
// failed item's fingerprint: a typo re-ran nothing and said nothing, the
// failures it meant left behind.
func checkFingerprints(ctx context.Context, j store.Job, fps []string) error {
	if len(fps) == 0 {
		return nil
	}
	matched := make([]bool, len(fps))
	err := j.Failures(ctx, func(r store.Record) error {
		for i, fp := range fps {
			if fp != "" && strings.HasPrefix(r.Fingerprint, fp) {
				matched[i] = true
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the failures: %w", err)
	}
	for i, fp := range fps {
		if !matched[i] {
			id := j.Manifest().ID
			return usage(fmt.Errorf("--fingerprint %q is the start of no failed item's fingerprint in job %s: `tenax status %s` lists its error groups with theirs", fp, id, id))
		}
	}
	return nil
}

// checkRetryRoutes refuses a --route that names no route of the job,
// neither one of its spec nor one a record names: a typo would re-run no
// failure and say nothing.
func checkRetryRoutes(ctx context.Context, j store.Job, s *spec.Spec, names []string) error {
	if len(names) == 0 {
		return nil
	}
	known := map[string]bool{}
	for _, r := range s.Routes {
		known[r.Name] = true
	}
	err := j.Failures(ctx, func(r store.Record) error {
		known[r.Route] = true
		return nil
	})
	if err != nil {
		return fmt.Errorf("reading the failures: %w", err)
	}
	for _, name := range names {
		if name == "" || !known[name] {
			id := j.Manifest().ID
			return usage(fmt.Errorf("--route %q names no route of job %s: `tenax status %s` lists its routes", name, id, id))
		}
	}
	return nil
}

// CheckExportRoute refuses a route name that no route of the job has:
// neither one its manifest's spec names nor one a record names. A typo in
// `export --route` would export nothing and exit 0.
func CheckExportRoute(ctx context.Context, j store.Job, name string) error {
	var sp struct {
		Routes []struct {
			Name string `json:"name"`
		} `json:"routes"`
	}
	if raw := j.Manifest().Spec; len(raw) > 0 {
		// A spec the manifest cannot give back names no route; the
		// records still may.
		_ = json.Unmarshal(raw, &sp)
	}
	for _, r := range sp.Routes {
		if r.Name == name {
			return nil
		}
	}
	errFound := errors.New("found")
	err := j.Scan(ctx, func(r store.Record) error {
		if r.Route == name {
			return errFound
		}
		return nil
	})
	if errors.Is(err, errFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the records: %w", err)
	}
	id := j.Manifest().ID
	return usage(fmt.Errorf("--route %q names no route of job %s: `tenax status %s` lists its routes", name, id, id))
}

// DefaultHome is where jobs live when neither --home nor TENAX_HOME says
// otherwise: .tenax under the working directory.
const DefaultHome = ".tenax"

// OutputFormat is the format --output writes to path: CSV for a .csv
// file, else JSONL.
func OutputFormat(path string) string {
	if strings.EqualFold(filepath.Ext(path), ".csv") {
		return store.FormatCSV
	}
	return store.FormatJSONL
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
