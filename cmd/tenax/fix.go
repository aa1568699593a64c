package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/exitcode"
	"github.com/tenaxhq/tenax/fix"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store/jsonl"
	"github.com/tenaxhq/tenax/web"
)

type fixFlags struct {
	resume     string
	context    string
	skip, only []string
	prioritize []string
	ui         string
	dryRun     bool
	allowDirty bool
	commit     bool
	item       string
}

func newFixCmd(g *globals) *cobra.Command {
	var f fixFlags
	cmd := &cobra.Command{
		Use:   "fix SPEC | fix --resume ID [SPEC]",
		Short: "Run a check, fix its errors one at a time with an LLM or a command, re-check",
		Long: `Run the fix spec's check (tests, a compiler, a linter), extract its errors, give ONE
error to the fixer (regressed first, then new, then active), re-run the check, and
repeat within the budgets: budget.max_error_attempts per error (default 5) and
budget.max_attempts in all (default 8).

It stops when the check passes (exit 0), when the budgets are spent or every
remaining error has spent its own (exit 1, the errors listed), or when it is stuck
(the same errors budget.stuck_after checks in a row).

Your work is never lost: the work directory must be a git work tree without
uncommitted changes (or pass --allow-dirty); every attempt's edit is recorded in
.tenax/fixes/<id>/attempts/ (undo one with git apply -R FILE); an attempt that
leaves the check strictly worse (more errors, or a fixed error back) is reverted
and counts as failed (on_worse: keep keeps it). State and an audit trail of every
attempt live in .tenax/fixes/<id>/; --resume ID continues with the budgets spent,
even after a crash. 'tenax status ID' shows a run's errors by status.`,
		Example: `  tenax fix fix.yaml
  tenax fix fix.yaml --context @NOTES.md --skip 3f2a9c01 --prioritize 9be1
  tenax fix fix.yaml --ui               # watch and steer it in the browser (the URL is printed)
  tenax fix fix.yaml --dry-run          # run the check once, show what the fixer would get
  tenax fix --resume fix_20261123_101500`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 2 && cmd.Flags().Changed("ui") && f.ui == "127.0.0.1:0" {
				return usageErr(fmt.Errorf("write --ui=%s (with =): a bare --ui picks a free loopback port and takes no value", args[1]))
			}
			if f.resume == "" && len(args) != 1 {
				return usageErr(errors.New("fix: give the fix spec (tenax fix SPEC), or --resume ID"))
			}
			return cobra.MaximumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runFix(cmd.Context(), g, f, args)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.resume, "resume", "", "continue the fix run ID (its spec is read again) with the budgets it has spent")
	fl.StringVar(&f.context, "context", "", "context for the fixer: TEXT, or @FILE to read it from a file")
	fl.StringSliceVar(&f.skip, "skip", nil, "never give the error with this fingerprint (or prefix) to the fixer; repeatable")
	fl.StringSliceVar(&f.only, "only", nil, "give only errors with these fingerprints (or prefixes) to the fixer; repeatable")
	fl.StringSliceVar(&f.prioritize, "prioritize", nil, "give the error with this fingerprint (or prefix) to the fixer before any other while under budget; repeatable, the first first")
	fl.StringVar(&f.ui, "ui", "", "serve the run's live page (errors, attempts, and skip / put first / add context); --ui alone picks a free port on 127.0.0.1, --ui=ADDR listens there (not loopback: a token is required, printed in the URL)")
	fl.Lookup("ui").NoOptDefVal = "127.0.0.1:0"
	fl.BoolVar(&f.dryRun, "dry-run", false, "run the check once and show the errors and what the fixer would get; change nothing")
	fl.BoolVar(&f.allowDirty, "allow-dirty", false, "start even though the work tree has uncommitted changes")
	fl.BoolVar(&f.commit, "commit", false, "commit each attempt that fixed its error (only the files it changed)")
	fl.StringVar(&f.item, "item", "", "run the loop of one item of a per-item spec (its fields as JSON); the per-item job passes it")
	_ = fl.MarkHidden("item")
	return cmd
}

func runFix(ctx context.Context, g *globals, f fixFlags, args []string) error {
	home := g.homeDir()
	specPath, err := fixSpecPath(home, f.resume, args)
	if err != nil {
		return err
	}
	s, err := spec.LoadFix(specPath, os.LookupEnv)
	if err != nil {
		return usageErr(err)
	}
	text, err := fix.ReadContext(f.context)
	if err != nil {
		return usageErr(err)
	}
	if s.Input.Path != "" && f.item == "" {
		return runFixItems(ctx, g, f, s, text)
	}
	opts := fix.Options{
		Home: home, Version: version, Context: text, Skip: f.skip, Only: f.only, Prioritize: f.prioritize,
		Commit: f.commit, AllowDirty: f.allowDirty, ReadOnly: contextFile(f.context), NewModel: job.FixModel,
	}
	if f.item != "" {
		item, err := fix.ParseItem(f.item)
		if err != nil {
			return usageErr(err)
		}
		opts.Item = &item
	}
	if !g.quiet {
		p := &fixProgress{w: g.stderr, live: g.stderrIsTerminal(), width: g.stderrWidth}
		opts.OnEvent = p.event
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go p.run(pctx)
	}
	cfg, err := fix.FromSpec(s, opts)
	if err != nil {
		return usageErr(err)
	}
	if f.dryRun {
		return fixErr(fix.DryRun(ctx, cfg, g.stdout))
	}
	if f.ui != "" {
		ep, err := serveFixPage(g, f.ui, home, &cfg)
		if err != nil {
			return err
		}
		defer func() {
			// Open pages read the run's end (within a refresh), then stop.
			sctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			ep.Shutdown(sctx)
		}()
	}

	ctx, cancel := g.cancelOnInterrupt(ctx, "\ntenax: interrupted: stopping the check or fixer; the run can resume")
	defer cancel()
	var res *fix.Result
	if f.resume != "" {
		res, err = fix.Resume(ctx, cfg, f.resume)
	} else {
		res, err = fix.Start(ctx, cfg)
	}
	if res != nil {
		if perr := printFixResult(g, res, f.item != ""); perr != nil {
			return perr
		}
	}
	if err != nil {
		return fixErr(err)
	}
	if code := res.ExitCode(); code != 0 {
		return &exitError{code: code}
	}
	return nil
}

// serveFixPage serves the fix run's page (--ui) and prints its address
// once the run has its id.
func serveFixPage(g *globals, addr, home string, cfg *fix.Config) (*web.Endpoint, error) {
	ep, err := web.Listen(addr, web.Config{Store: &jsonl.Store{Home: home}, FixHome: home})
	if err != nil {
		return nil, usageErr(fmt.Errorf("--ui: %w", err))
	}
	prev := cfg.OnEvent
	cfg.OnEvent = func(e fix.Event) {
		if e.Kind == fix.EventStart {
			fmt.Fprintf(g.stderr, "tenax: watch the fix run at %s\n", fixPageURL(ep.URL, e.Run))
		}
		if prev != nil {
			prev(e)
		}
	}
	return ep, nil
}

// fixPageURL is the page of fix run id on the server at base (which may
// carry ?token=).
func fixPageURL(base, id string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/fixes/" + id
	return u.String()
}

// fixSpecPath is the spec a fix run reads: the argument, or the one a
// resumed run names.
func fixSpecPath(home, resume string, args []string) (string, error) {
	if len(args) == 1 {
		return args[0], nil
	}
	if resume == "" {
		return "", nil
	}
	st, err := openFixState(home, resume)
	if err != nil {
		return "", usageErr(err)
	}
	if st.Spec == "" {
		return "", usageErr(fmt.Errorf("fix: run %s does not name its spec; give it: tenax fix --resume %s SPEC", st.ID, st.ID))
	}
	return st.Spec, nil
}

// printFixResult prints how a fix run ended; for one item of a per-item
// job (item), its summary as JSON on stdout for the job's record.
func printFixResult(g *globals, res *fix.Result, item bool) error {
	if item {
		// The item's output, for the per-item job's record.
		b, err := json.Marshal(res.Summary())
		if err != nil {
			return err
		}
		fmt.Fprintf(g.stdout, "%s\n", b)
		_ = fix.WriteResult(g.stderr, res)
		// The job records the last line of stderr as the item's error.
		if res.Outcome != fix.OutcomePassed {
			fmt.Fprintf(g.stderr, "fix run %s %s: %s\n", res.ID, res.Outcome, res.Reason)
		}
	} else {
		_ = fix.WriteResult(g.stdout, res)
	}
	return nil
}

// runFixItems runs a per-item fix spec as a job: one loop per item,
// through the engine (tenax status JOB and tenax resume JOB work on it).
func runFixItems(ctx context.Context, g *globals, f fixFlags, s *spec.Fix, text string) error {
	if f.resume != "" {
		return usageErr(errors.New("fix: a per-item fix run is a job: resume it with tenax resume JOB"))
	}
	home, err := filepath.Abs(g.homeDir())
	if err != nil {
		return usageErr(err)
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	if f.ui != "" {
		return usageErr(errors.New("fix: a per-item fix run is a job: watch it with tenax ui, which lists each item's fix run"))
	}
	o := fix.ItemsJob{Exe: exe, Home: home, Context: text, Skip: f.skip, Only: f.only, Prioritize: f.prioritize, Commit: f.commit}
	if f.dryRun {
		b, err := fix.ItemsJobSpec(s, o)
		if err != nil {
			return fixErr(err)
		}
		fmt.Fprintf(g.stdout, "A per-item fix run: this job runs one fix loop per item of %s (try one with --item JSON --dry-run):\n\n%s", s.Input.Path, b)
		return nil
	}
	if !f.allowDirty {
		if err := fix.CheckClean(ctx, s.Workdir, home, append(contextFile(f.context), s.Path())...); err != nil {
			return fixErr(err)
		}
	}
	path, err := fix.WriteItemsJob(s, o)
	if err != nil {
		return fixErr(err)
	}
	return runJob(ctx, g, runFlags{}, func(ctx context.Context, o job.Options) (*job.Result, error) {
		return job.Run(ctx, path, o)
	})
}

// contextFile is the file --context @FILE reads, which tenax only reads.
func contextFile(context string) []string {
	if path, ok := strings.CutPrefix(context, "@"); ok {
		return []string{path}
	}
	return nil
}

// fixErr maps a fix error to its exit code.
func fixErr(err error) error {
	if err == nil {
		return nil
	}
	var se *fix.SetupError
	if errors.As(err, &se) {
		return usageErr(err)
	}
	var ste *fix.StorageError
	if errors.As(err, &ste) {
		return &exitError{code: exitcode.Storage, err: err}
	}
	return &exitError{code: exitcode.Failures, err: err}
}

func openFixState(home, id string) (*fix.State, error) {
	st, err := fix.OpenStore(home, id)
	if err != nil {
		return nil, err
	}
	return st.Load()
}

// fixProgress shows a fix run's progress: a line per step and, on a
// terminal, a live line saying what runs now (the check, or the fixer on
// which error) and for how long.
type fixProgress struct {
	w    io.Writer
	live bool
	// width is the terminal's width, so that the live line never wraps
	// (a wrapped line cannot be redrawn in place).
	width func() int

	mu    sync.Mutex
	phase string // "" when nothing long runs
	since time.Time
	drawn bool
}

func (p *fixProgress) event(e fix.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	printFixEvent(p.w, e)
	counts := statusCounts(e)
	switch e.Kind {
	case fix.EventChecking:
		p.phase, p.since = "running the check "+counts, time.Now()
	case fix.EventAttempt:
		p.phase, p.since = fmt.Sprintf("attempt %d/%d: the fixer works on %s (try %d/%d) %s", e.Attempt, e.MaxAttempts, e.Error.Name, e.Error.Attempts, e.MaxErrorAttempts, counts), time.Now()
	default:
		p.phase = ""
	}
	p.draw()
}

// run redraws the live line every second until ctx ends.
func (p *fixProgress) run(ctx context.Context) {
	if !p.live {
		return
	}
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.clear()
			p.mu.Unlock()
			return
		case <-tick.C:
			p.mu.Lock()
			p.draw()
			p.mu.Unlock()
		}
	}
}

func (p *fixProgress) draw() {
	if !p.live || p.phase == "" {
		return
	}
	line := fmt.Sprintf("… %s %s", p.phase, time.Since(p.since).Round(time.Second))
	if p.width != nil {
		line = console.FitText(line, p.width())
	}
	fmt.Fprintf(p.w, "\r\033[K%s", line)
	p.drawn = true
}

func (p *fixProgress) clear() {
	if p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func statusCounts(e fix.Event) string {
	abandoned := ""
	if n := e.Counts[fix.StatusAbandoned]; n > 0 {
		abandoned = fmt.Sprintf(", %d abandoned", n)
	}
	return fmt.Sprintf("[%d regressed, %d new, %d active%s, %d fixed]",
		e.Counts[heal.StatusRegressed], e.Counts[heal.StatusNew], e.Counts[heal.StatusActive], abandoned, e.Counts[heal.StatusFixed])
}

// printFixEvent writes one progress line: the current error, its
// attempts, and the errors by status.
func printFixEvent(w io.Writer, e fix.Event) {
	counts := statusCounts(e)
	switch e.Kind {
	case fix.EventCheck:
		fmt.Fprintf(w, "tenax fix: check: %s %s\n", e.Message, counts)
	case fix.EventAttempt:
		fmt.Fprintf(w, "tenax fix: attempt %d/%d: %s %s (%s, try %d/%d): %s\n", e.Attempt, e.MaxAttempts,
			e.Error.Fingerprint[:8], e.Error.Name, e.Error.Status, e.Error.Attempts, e.MaxErrorAttempts, firstLineOf(e.Error.Message))
	case fix.EventResult:
		detail := ""
		if e.Message != "" {
			detail = " (" + e.Message + ")"
		}
		fmt.Fprintf(w, "tenax fix: attempt %d/%d: %s%s %s\n", e.Attempt, e.MaxAttempts, e.Result, detail, counts)
	case fix.EventStop:
		fmt.Fprintf(w, "tenax fix: %s: %s %s\n", e.Result, e.Message, counts)
	case fix.EventNote:
		fmt.Fprintf(w, "tenax fix: %s\n", e.Message)
	}
}

func firstLineOf(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// fixStatus writes a fix run's status (tenax status fix_…), as JSON
// (tenax.fix.status/v1) with --json.
func fixStatus(g *globals, id string, w io.Writer, asJSON bool) error {
	store, err := fix.OpenStore(g.homeDir(), id)
	if err != nil {
		return usageErr(err)
	}
	st, err := store.Load()
	if err != nil {
		return fixErr(err)
	}
	if asJSON {
		s, err := fix.Status(store.Dir, st)
		if err != nil {
			return fixErr(err)
		}
		return writeJSON(w, s)
	}
	return fix.WriteStatus(w, store.Dir, st)
}
