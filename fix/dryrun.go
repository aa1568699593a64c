package fix

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/tenaxhq/tenax/heal"
)

// DryRun shows what a fix run would do without changing anything: whether
// the work tree may be edited, the check's errors and groups, the error
// the fixer would get first, and the request it would be given. It runs
// the check once; it never calls the fixer and writes no state.
func DryRun(ctx context.Context, cfg Config, w io.Writer) error {
	tree, err := openTree(ctx, cfg, "")
	if err != nil {
		return err
	}
	dirty, err := tree.Dirty(ctx)
	if err != nil {
		return &SetupError{Err: err}
	}
	var b strings.Builder
	switch {
	case len(dirty) == 0:
		fmt.Fprintf(&b, "Work tree %s: clean\n", tree.Root)
	case cfg.AllowDirty:
		fmt.Fprintf(&b, "Work tree %s: uncommitted changes (%s), allowed by --allow-dirty\n", tree.Root, listShort(dirty, 3))
	default:
		fmt.Fprintf(&b, "Work tree %s: uncommitted changes (%s): a real run refuses to start (commit them or pass --allow-dirty)\n", tree.Root, listShort(dirty, 3))
	}
	fmt.Fprintf(&b, "Check: %s (in %s)\n", strings.Join(cfg.Check.Argv, " "), cfg.Check.Dir)
	res, err := cfg.Check.Run(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(&b, "Check result: exit %d in %s, %s\n", res.ExitCode, res.Duration.Round(1e6), plural(len(res.Errors), "error"))
	if res.Passed() {
		b.WriteString("The check passes: nothing to fix.\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	t := heal.NewTracker(cfg.Budget)
	t.Observe(res.Errors)
	errs := t.Errors()
	for _, e := range errs {
		fmt.Fprintf(&b, "  %s  %s\n     %s\n", e.Fingerprint, e.Name, firstLine(e.Message))
	}
	for _, g := range Groups(errs) {
		fmt.Fprintf(&b, "Group: %d errors share %q\n", len(g.Errors), firstLine(g.Normalized))
	}
	r := &runner{cfg: cfg, tracker: t, output: res.Output, state: &State{ID: "dry-run", Budget: budgetOf(cfg.Budget, cfg.Order)}}
	e, ok := r.pick()
	if !ok {
		b.WriteString("No error would be given to the fixer: every one is skipped (--skip/--only).\n")
	} else {
		req := r.request(ctx, e)
		req.Attempt, req.ErrorAttempt = 1, 1
		fmt.Fprintf(&b, "First error for the fixer: %s (%s)\nThe fixer would get:\n%s\n", e.Name, e.Fingerprint, marshalRequest(req))
		if lf, ok := cfg.Fixer.(LLMFixer); ok {
			// The model never sees the request: it is asked with these.
			system, prompt := lf.Messages(req)
			fmt.Fprintf(&b, "The model would be asked, with the system message:\n%s\n\nand the prompt:\n%s", system, prompt)
		}
	}
	_, err = io.WriteString(w, b.String())
	return err
}
