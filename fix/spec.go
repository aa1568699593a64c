package fix

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task"
)

// Options are what the command line adds to a fix spec.
type Options struct {
	// Home is tenax's home (.tenax by default).
	Home string
	// Version is tenax's version, for the record.
	Version string
	// Context adds to the spec's context (--context).
	Context string
	// Skip and Only filter the errors by fingerprint (--skip, --only).
	Skip, Only []string
	// Prioritize names errors the loop picks first (--prioritize).
	Prioritize []string
	// Commit commits each fix (--commit).
	Commit bool
	// AllowDirty starts on a dirty tree (--allow-dirty).
	AllowDirty bool
	// ReadOnly are files tenax only reads besides the spec (--context
	// @FILE): untracked, they do not make the tree dirty.
	ReadOnly []string
	// OnEvent receives progress.
	OnEvent func(Event)
	// Item, when set, is the item of a per-item run (--item): the spec's
	// templates are rendered over its fields.
	Item *task.Item
	// NewModel builds the model of a fixer of type llm from the spec's
	// fixer section, its templates "{{.system}}" and "{{.prompt}}"
	// (LLMFixer renders both); nil refuses type llm. cmd/tenax gives
	// job.FixModel: an llm.Task, whose SDKs fix does not link, so that
	// the page that shows fix runs links none either.
	NewModel func(f spec.Fixer) (Model, error)
}

// FromSpec builds a run's Config from a loaded fix spec.
func FromSpec(s *spec.Fix, o Options) (Config, error) {
	cfg := Config{
		Name: s.Name, Spec: s.Path(), Version: o.Version, Workdir: s.Workdir, Home: o.Home,
		Check:  Check{Argv: s.Check.Argv, Dir: s.Workdir, Env: s.Check.Env, Timeout: s.Check.Timeout, Parser: s.Check.Parser, Redact: s.Redact},
		Redact: s.Redact,
		Budget: heal.Budget{
			MaxAttempts: s.Budget.MaxAttempts, MaxErrorAttempts: s.Budget.MaxErrorAttempts, StuckAfter: s.Budget.StuckAfter,
		},
		Context: joinContext(s.Context, o.Context), AddedContext: o.Context,
		KeepWorse: s.OnWorse == "keep", Order: s.Order,
		Commit: o.Commit, AllowDirty: o.AllowDirty, ReadOnly: append([]string{s.Path()}, o.ReadOnly...),
		Skip: o.Skip, Only: o.Only, Prioritize: o.Prioritize, OnEvent: o.OnEvent,
	}
	if err := checkSelectors(o.Skip, o.Only, o.Prioritize); err != nil {
		return Config{}, err
	}
	for _, h := range s.Hints {
		cfg.Hints = append(cfg.Hints, heal.Hint{Match: h.Regexp, Text: h.Hint})
	}
	switch s.Fixer.Type {
	case "exec":
		cfg.Fixer = ExecFixer{Argv: s.Fixer.Argv, Env: s.Fixer.Env, Timeout: s.Fixer.Timeout}
	case "llm":
		if o.NewModel == nil {
			return Config{}, errors.New("fixer: type llm needs a model, and this program builds none (fix.Options.NewModel)")
		}
		model, err := o.NewModel(s.Fixer)
		if err != nil {
			return Config{}, fmt.Errorf("fixer: %w", err)
		}
		cfg.Fixer = LLMFixer{Model: model, System: s.Fixer.System, Prompt: s.Fixer.Prompt, MaxInvalid: s.Fixer.MaxInvalid}
	default:
		return Config{}, fmt.Errorf("fixer: unknown type %q (want llm or exec)", s.Fixer.Type)
	}
	cfg.Paths = s.Paths
	if o.Item != nil {
		if err := renderForItem(&cfg, s, *o.Item, o.Context); err != nil {
			return Config{}, err
		}
	}
	// A program that is not there fails every check or attempt alike:
	// say so before the first.
	programs := map[string][]string{"check.argv": cfg.Check.Argv}
	if x, ok := cfg.Fixer.(ExecFixer); ok {
		programs["fixer.argv"] = x.Argv
	}
	for key, argv := range programs {
		if len(argv) == 0 || strings.Contains(argv[0], "{{") {
			continue
		}
		prog := argv[0]
		if !filepath.IsAbs(prog) && !strings.ContainsRune(prog, filepath.Separator) {
			if _, err := exec.LookPath(prog); err != nil {
				return Config{}, fmt.Errorf("%s: program %q not found on PATH", key, prog)
			}
		}
	}
	return cfg, nil
}

// ReadContext reads --context: TEXT as is, @FILE from the file.
func ReadContext(v string) (string, error) {
	path, ok := strings.CutPrefix(v, "@")
	if !ok {
		return v, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("--context %s: %w", v, err)
	}
	return strings.TrimSpace(string(b)), nil
}

func joinContext(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "\n\n" + b
}

// checkSelectors refuses a --skip, --only or --prioritize that can name
// no error: it would match nothing, silently, so a skipped error would go
// to the fixer after all and --only would give it none.
func checkSelectors(skip, only, prioritize []string) error {
	for _, sel := range []struct {
		flag string
		fps  []string
	}{{"--skip", skip}, {"--only", only}, {"--prioritize", prioritize}} {
		for _, fp := range sel.fps {
			if !isFingerprintPrefix(fp) {
				return &SetupError{Err: fmt.Errorf("%s %q: give an error's fingerprint or its first 4 or more characters, as tenax fix and tenax status ID show them (e.g. 3f2a9c01)", sel.flag, fp)}
			}
		}
	}
	return nil
}

// isFingerprintPrefix reports whether s can name errors: 4 or more of the
// lower-case hex digits of a fingerprint.
func isFingerprintPrefix(s string) bool {
	if len(s) < 4 {
		return false
	}
	for _, c := range s {
		if !strings.ContainsRune("0123456789abcdef", c) {
			return false
		}
	}
	return true
}
