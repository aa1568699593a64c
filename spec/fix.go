package spec

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/tenaxhq/tenax/task"
)

// Fix is a resolved fix spec, the file `tenax fix` reads: a check to run,
// a fixer that fixes one error at a time, and the budgets of the loop
// (docs/fix.md). It is decoded as strictly as a job spec: the
// same YAML rules, ${VAR} expansion, file:line:col errors and "did you
// mean" suggestions.
type Fix struct {
	// Name names the fix run; by default the spec file's base name.
	Name string `yaml:"name"`
	// Workdir is where the check runs and where files are edited,
	// absolute once resolved; default the spec file's directory.
	Workdir string `yaml:"workdir"`
	// Check is the command whose errors the loop fixes.
	Check FixCheck `yaml:"check"`
	// Fixer fixes one error per call.
	Fixer Fixer `yaml:"fixer"`
	// Budget bounds the loop.
	Budget FixBudget `yaml:"budget"`
	// Hints are given to the fixer when their regex matches the error.
	Hints []Hint `yaml:"hints"`
	// Context is the user's own words for the fixer ("this repo migrates
	// Enzyme tests to React Testing Library").
	Context string `yaml:"context"`
	// OnWorse is what happens to an attempt that leaves the check strictly
	// worse (more errors, or a fixed error back): "revert" (default) or
	// "keep". Either way the attempt counts as failed.
	OnWorse string `yaml:"on_worse"`
	// Order is how the loop picks the next error: "round_robin"
	// (default: the fewest attempts spent first, so every error gets a
	// turn) or "strict" (regressed, then new, then active, whatever each
	// has spent, as heal's tracker does).
	Order string `yaml:"order"`

	// Input, when set, makes a per-item fix run: one loop per item of the
	// input file, run through the engine as a job. check.argv, context,
	// paths, fixer.argv and fixer.system are then templates over the
	// item's fields ({{.path}}).
	Input Input `yaml:"input"`
	// Concurrency is how many items' loops run at once (input only);
	// default 1. Above 1, Paths must keep the items' edits apart.
	Concurrency int `yaml:"concurrency"`
	// Paths, when set, are the files (or directories) a loop may change:
	// its snapshots, reverts and commits cover only them. Templates with
	// input ("{{.path}}").
	Paths []string `yaml:"paths"`

	path    string
	dir     string
	secrets []string
}

// FixCheck is the check of a fix spec.
type FixCheck struct {
	// Argv is the command, never run through a shell; a relative program
	// (./test.sh) is resolved against the spec's directory.
	Argv Command `yaml:"argv"`
	// Parser names the extractor of the check's output: gotest, pytest,
	// jest, vitest, tsc, eslint, generic or auto (default).
	Parser string `yaml:"parser"`
	// Timeout bounds one run of the check; default 10m.
	Timeout time.Duration `yaml:"timeout"`
	// Env adds variables to the check's environment.
	Env map[string]string `yaml:"env"`
}

// Fixer is who fixes one error: an LLM (type llm, the options of an llm
// task) or a command (type exec).
type Fixer struct {
	// Type is "llm" or "exec".
	Type string `yaml:"type"`

	// Provider (llm) is "openai", "anthropic" or "mock".
	Provider string `yaml:"provider"`
	// BaseURL (llm) replaces the provider's endpoint.
	BaseURL string `yaml:"base_url"`
	// APIKey (llm) authenticates the calls; always a secret.
	APIKey string `yaml:"api_key"`
	// Model (llm) is the model name.
	Model string `yaml:"model"`
	// System (llm) is added to tenax's own instructions.
	System string `yaml:"system"`
	// Prompt (llm) is put at the head of every request's prompt: what the
	// model should know about this code base (a template with input).
	Prompt string `yaml:"prompt"`
	// MaxTokens (llm) bounds one answer; default 8192.
	MaxTokens int `yaml:"max_tokens"`
	// Temperature (llm) is sent when set.
	Temperature *float64 `yaml:"temperature"`
	// MaxInvalid (llm) is how many times an answer whose edits do not
	// apply is re-asked with feedback within one attempt; default 2.
	MaxInvalid int `yaml:"max_invalid"`
	// Mock (llm, provider mock) scripts the simulated model's answers.
	Mock FixerMock `yaml:"mock"`

	// Argv (exec) is the fixer command. It gets the selected error as JSON
	// on stdin and in TENAX_ERROR_* variables, and edits the files itself.
	Argv Command `yaml:"argv"`
	// Env (exec) adds variables to the command's environment.
	Env map[string]string `yaml:"env"`

	// Timeout bounds one call of the fixer; default 10m for exec, 5m for
	// llm.
	Timeout time.Duration `yaml:"timeout"`
}

// FixerMock scripts provider mock for a fix run.
type FixerMock struct {
	// Answers are given in order, one per call; the last is repeated.
	Answers []string `yaml:"answers"`
}

// FixBudget bounds a fix loop.
type FixBudget struct {
	// MaxErrorAttempts is the most attempts on one error; default 5.
	MaxErrorAttempts int `yaml:"max_error_attempts"`
	// MaxAttempts is the most attempts in all; default 8.
	MaxAttempts int `yaml:"max_attempts"`
	// StuckAfter stops the loop once this many checks in a row, each after
	// an attempt, see the same errors; default max_error_attempts + 1; 0
	// turns the rule off.
	StuckAfter int `yaml:"stuck_after"`
}

// The allowed values of a fix spec's enumerations.
var (
	fixParsers  = []string{"auto", "gotest", "pytest", "jest", "vitest", "tsc", "eslint", "generic"}
	fixerTypes  = []string{"llm", "exec"}
	fixOnWorses = []string{"revert", "keep"}
	fixOrders   = []string{"round_robin", "strict"}
	fixerKeys   = map[string][]string{
		"llm":  {"provider", "base_url", "api_key", "model", "system", "prompt", "max_tokens", "temperature", "max_invalid", "mock"},
		"exec": {"argv", "env"},
	}
)

// Path returns the fix spec file's path as given to LoadFix.
func (f *Fix) Path() string { return f.path }

// Dir returns the directory relative paths were resolved against.
func (f *Fix) Dir() string { return f.dir }

// Secrets returns the values that must never be shown (fixer.api_key,
// every value expanded into fixer.env or check.env, and variables named
// like secrets), longest first.
func (f *Fix) Secrets() []string { return slices.Clone(f.secrets) }

// Redact returns text with every secret of the fix spec replaced by
// "[redacted]": what the check prints goes to the fixer, the audit trail
// and state.json through it.
func (f *Fix) Redact(text string) string {
	for _, secret := range f.secrets {
		text = strings.ReplaceAll(text, secret, redactedText)
	}
	return text
}

// LoadFix reads, expands, decodes, defaults and validates the fix spec at
// path, and checks the directory and programs it names. Problems are
// reported at once as Errors with file:line:col, as Load does.
func LoadFix(path string, env func(string) (string, bool)) (*Fix, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return parseFix(path, data, dir, env, true)
}

// ParseFix is LoadFix without the file system: name is used in errors and
// for the default name, dir is what relative paths are resolved against.
func ParseFix(name string, data []byte, dir string, env func(string) (string, bool)) (*Fix, error) {
	return parseFix(name, data, dir, env, false)
}

func parseFix(name string, data []byte, dir string, env func(string) (string, bool), files bool) (*Fix, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	d := newDecoder(name, env)
	d.files = files
	f := &Fix{path: name, dir: dir}
	d.decodeFile(data, f)
	if len(d.errs) == 0 {
		d.finishFix(f)
	}
	if len(d.errs) > 0 {
		return nil, d.result()
	}
	f.secrets = d.fixSecrets(f.Fixer.APIKey, d.urlSecrets("fixer.base_url", f.Fixer.BaseURL)...)
	return f, nil
}

// IsFix reports whether data, a spec file's content, is a fix spec (for
// `tenax fix`) rather than a job spec (for `tenax run`): at its top level
// it names a check or a fixer and no task. `tenax validate` takes both.
//
// The text goes through the limits a spec's parse has first: unbounded,
// the library's Unmarshal took minutes and gigabytes on a small file of
// deeply nested brackets, before the parse that would have refused it.
func IsFix(data []byte) bool {
	if _, ok := newDecoder("", nil).tokens(bytes.TrimPrefix(data, []byte("\ufeff"))); !ok {
		return false // not a fix spec; the job spec's parse says why
	}
	var top map[string]any
	if yaml.Unmarshal(data, &top) != nil {
		return false
	}
	_, task := top["task"]
	_, check := top["check"]
	_, fixer := top["fixer"]
	return !task && (check || fixer)
}

// RedactedYAML is the resolved fix spec as YAML, every default filled in
// and every secret replaced by "[redacted]", for `tenax validate`.
func (f *Fix) RedactedYAML() ([]byte, error) {
	r := &Spec{secrets: f.secrets}
	v, _ := r.value(reflect.ValueOf(*f))
	return yaml.MarshalWithOptions(toYAML(v), yaml.UseLiteralStyleIfMultiline(true), yaml.IndentSequence(true))
}

// abs makes a path from the fix spec absolute against its directory.
func (f *Fix) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || f.dir == "" {
		return p
	}
	return filepath.Join(f.dir, p)
}

func (d *decoder) finishFix(f *Fix) {
	def := func(path string, apply func()) {
		if !d.isSet(path) {
			apply()
		}
	}
	def("name", func() { f.Name = defaultName(f.path) })
	def("workdir", func() { f.Workdir = "." })
	def("check.parser", func() { f.Check.Parser = "auto" })
	def("check.timeout", func() { f.Check.Timeout = 10 * time.Minute })
	def("on_worse", func() { f.OnWorse = "revert" })
	def("order", func() { f.Order = "round_robin" })
	def("budget.max_error_attempts", func() { f.Budget.MaxErrorAttempts = 5 })
	def("budget.max_attempts", func() { f.Budget.MaxAttempts = 8 })
	def("budget.stuck_after", func() { f.Budget.StuckAfter = f.Budget.MaxErrorAttempts + 1 })
	def("concurrency", func() { f.Concurrency = 1 })
	switch f.Fixer.Type {
	case "llm":
		def("fixer.max_tokens", func() { f.Fixer.MaxTokens = 8192 })
		def("fixer.max_invalid", func() { f.Fixer.MaxInvalid = 2 })
		def("fixer.timeout", func() { f.Fixer.Timeout = 5 * time.Minute })
	case "exec":
		def("fixer.timeout", func() { f.Fixer.Timeout = 10 * time.Minute })
	}

	if len(f.Check.Argv) == 0 {
		d.problem("check.argv", []string{"check"}, "missing or empty (a list: program, then arguments)")
	} else if f.Check.Argv[0] == "" {
		d.problem("check.argv[0]", []string{"check.argv"}, "the program name is empty")
	}
	d.oneOf("check.parser", f.Check.Parser, fixParsers)
	d.oneOf("on_worse", f.OnWorse, fixOnWorses)
	d.oneOf("order", f.Order, fixOrders)
	d.checkFixer(f)
	atLeast := func(path string, v, least int) {
		if v < least {
			d.problem(path, nil, "must be at least %d, got %d", least, v)
		}
	}
	atLeast("budget.max_error_attempts", f.Budget.MaxErrorAttempts, 1)
	atLeast("budget.max_attempts", f.Budget.MaxAttempts, 1)
	atLeast("budget.stuck_after", f.Budget.StuckAfter, 0)
	atLeast("concurrency", f.Concurrency, 1)
	d.checkFixInput(f)
	for i := range f.Hints {
		h := &f.Hints[i]
		p := fmt.Sprintf("hints[%d]", i)
		if h.Match == "" {
			d.problem(p+".match", []string{p}, "missing (a regex matched against the error)")
			continue
		}
		re, err := regexp.Compile(h.Match)
		if err != nil {
			d.problem(p+".match", nil, "%s", regexpMessage(err))
			continue
		}
		h.Regexp = re
		if h.Hint == "" {
			d.problem(p+".hint", []string{p}, "missing (the advice to give when match matches)")
		}
	}
	if len(d.errs) > 0 {
		return
	}
	f.Workdir = f.abs(f.Workdir)
	f.Input.Path = f.abs(f.Input.Path)
	if d.files {
		d.checkFixFiles(f)
	}
	for _, argv := range []Command{f.Check.Argv, f.Fixer.Argv} {
		if len(argv) > 0 && isRelativeProgram(argv[0]) {
			argv[0] = f.abs(argv[0])
		}
	}
}

func (d *decoder) checkFixer(f *Fix) {
	x := &f.Fixer
	fixer := []string{"fixer"}
	switch {
	case x.Type == "":
		d.problem("fixer.type", fixer, "missing (want %s)", orList(fixerTypes))
		return
	case !slices.Contains(fixerTypes, x.Type):
		d.oneOf("fixer.type", x.Type, fixerTypes)
		return
	}
	for typ, keys := range fixerKeys {
		if typ == x.Type {
			continue
		}
		for _, k := range keys {
			if p := "fixer." + k; d.isSet(p) {
				d.errorf(d.at(p), "", "%s: does not apply to %s fixers (it is for %s fixers)", p, x.Type, typ)
			}
		}
	}
	switch x.Type {
	case "llm":
		if x.Provider == "" {
			d.problem("fixer.provider", fixer, "missing for an llm fixer (want %s)", orList(providers))
		}
		d.oneOf("fixer.provider", x.Provider, providers)
		if x.Model == "" && x.Provider != "mock" {
			d.problem("fixer.model", fixer, "missing for an llm fixer")
		}
		d.checkBaseURL("fixer.base_url", x.BaseURL)
		if x.MaxTokens < 1 {
			d.problem("fixer.max_tokens", nil, "must be at least 1, got %d", x.MaxTokens)
		}
		if x.MaxInvalid < 0 {
			d.problem("fixer.max_invalid", nil, "must be at least 0, got %d", x.MaxInvalid)
		}
		if x.Temperature != nil && (*x.Temperature < 0 || *x.Temperature > 2) {
			d.problem("fixer.temperature", nil, "must be between 0 and 2, got %g", *x.Temperature)
		}
		if d.isSet("fixer.mock") && x.Provider != "mock" {
			d.errorf(d.at("fixer.mock"), "", "fixer.mock: applies only to provider mock")
		}
	case "exec":
		if len(x.Argv) == 0 {
			d.problem("fixer.argv", fixer, "missing or empty for an exec fixer (a list: program, then arguments)")
		} else if x.Argv[0] == "" {
			d.problem("fixer.argv[0]", []string{"fixer.argv"}, "the program name is empty")
		}
	}
}

// checkFixInput checks the per-item settings: concurrency needs paths, and
// with input the templated values must parse.
func (d *decoder) checkFixInput(f *Fix) {
	d.oneOf("input.format", f.Input.Format, formats)
	d.oneOf("input.on_bad_line", f.Input.OnBadLine, onBadLines)
	if f.Input.Path == "" {
		for _, k := range []string{"concurrency", "input.format", "input.on_bad_line"} {
			if d.isSet(k) {
				d.errorf(d.at(k), "", "%s: applies only with input (a per-item fix run)", k)
			}
		}
		return
	}
	if f.Concurrency > 1 && len(f.Paths) == 0 {
		d.problem("paths", []string{"concurrency"}, "needed when concurrency is above 1: the files each item may change (e.g. [\"{{.path}}\"]), so concurrent loops never revert each other's edits")
	}
	check := func(path, text string) {
		if _, err := task.ParseTemplate(path, text); err != nil {
			d.problem(path, nil, "%v", err)
		}
	}
	for i, a := range f.Check.Argv {
		check(fmt.Sprintf("check.argv[%d]", i), a)
	}
	for i, a := range f.Fixer.Argv {
		check(fmt.Sprintf("fixer.argv[%d]", i), a)
	}
	for i, p := range f.Paths {
		check(fmt.Sprintf("paths[%d]", i), p)
	}
	check("context", f.Context)
	check("fixer.system", f.Fixer.System)
	check("fixer.prompt", f.Fixer.Prompt)
}

// checkFixFiles checks that the workdir is a directory and that programs
// given by relative paths exist and can be run.
func (d *decoder) checkFixFiles(f *Fix) {
	fi, err := os.Stat(f.Workdir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		d.problem("workdir", nil, "directory %s not found", f.Workdir)
	case err != nil:
		d.problem("workdir", nil, "%v", err)
	case !fi.IsDir():
		d.problem("workdir", nil, "%s is not a directory", f.Workdir)
	}
	s := &Spec{dir: f.dir}
	d.checkProgram(s, "check.argv", f.Check.Argv)
	if f.Fixer.Type == "exec" {
		d.checkProgram(s, "fixer.argv", f.Fixer.Argv)
	}
}

// fixSecrets returns the fix spec's secrets: apiKey, the other values
// given, and every value expanded into fixer.api_key, fixer.env,
// check.env or a variable named like a secret.
func (d *decoder) fixSecrets(apiKey string, more ...string) []string {
	var out []string
	for _, v := range append([]string{apiKey}, more...) {
		if v != "" {
			out = append(out, v)
		}
	}
	for _, e := range d.expanded {
		if e.value != "" && (e.path == "fixer.api_key" || strings.HasPrefix(e.path, "fixer.env.") || strings.HasPrefix(e.path, "check.env.") || secretName(e.name)) {
			out = append(out, e.value)
		}
	}
	out = slices.DeleteFunc(out, func(v string) bool { return len(v) < minSecretLen })
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}
