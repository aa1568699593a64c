package fix

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task"
)

// A per-item fix run (a fix spec with input) runs one fix loop per item
// through the engine, as a job: tenax writes a job spec whose exec task
// runs `tenax fix SPEC --item '{{json .}}'` for each item, so retries,
// the breaker, the checkpoint, resume and status are the job's. Each
// item's loop is a fix run of its own, named in the item's output.

// ItemsJob is what the job spec of a per-item fix run needs besides the
// fix spec.
type ItemsJob struct {
	// Exe is the tenax binary the job runs per item.
	Exe string
	// Home is tenax's home, absolute.
	Home string
	// Context, Skip, Only, Prioritize and Commit are passed to every
	// item's loop.
	Context    string
	Skip, Only []string
	Prioritize []string
	Commit     bool
	// Now names the file; nil is time.Now.
	Now func() time.Time
}

// ItemsJobSpec returns the job spec of a per-item fix run. The items'
// loops start on a tree that may hold other items' edits, so they run with
// --allow-dirty: the caller checks the tree once (CheckClean), before the
// job.
func ItemsJobSpec(s *spec.Fix, o ItemsJob) ([]byte, error) {
	if s.Input.Path == "" {
		return nil, fmt.Errorf("fix: %s has no input; per-item runs need one", s.Path())
	}
	if err := checkSelectors(o.Skip, o.Only, o.Prioritize); err != nil {
		return nil, err
	}
	if o.Commit && s.Concurrency > 1 {
		return nil, &SetupError{Err: fmt.Errorf("fix: --commit with concurrency %d: commits of concurrent loops would race for git's index; use concurrency: 1", s.Concurrency)}
	}
	specPath, err := filepath.Abs(s.Path())
	if err != nil {
		return nil, err
	}
	argv := []string{o.Exe, "--home", o.Home, "--quiet", "fix", specPath, "--allow-dirty", "--item", "{{json .}}"}
	if o.Context != "" {
		argv = append(argv, "--context", escapeTemplate(o.Context))
	}
	for _, fp := range o.Skip {
		argv = append(argv, "--skip", escapeTemplate(fp))
	}
	for _, fp := range o.Only {
		argv = append(argv, "--only", escapeTemplate(fp))
	}
	for _, fp := range o.Prioritize {
		argv = append(argv, "--prioritize", escapeTemplate(fp))
	}
	if o.Commit {
		argv = append(argv, "--commit")
	}
	in := yaml.MapSlice{{Key: "path", Value: s.Input.Path}}
	if s.Input.Format != "" {
		in = append(in, yaml.MapItem{Key: "format", Value: s.Input.Format})
	}
	if s.Input.OnBadLine != "" {
		in = append(in, yaml.MapItem{Key: "on_bad_line", Value: s.Input.OnBadLine})
	}
	doc := yaml.MapSlice{
		{Key: "name", Value: s.Name},
		{Key: "input", Value: in},
		{Key: "task", Value: yaml.MapSlice{
			{Key: "type", Value: "exec"},
			{Key: "argv", Value: argv},
			{Key: "dir", Value: s.Workdir},
			{Key: "output", Value: "json"},
			// 1: the loop ended with errors left; 2: the item's spec
			// templates failed; 4: tenax's storage. None is retried.
			{Key: "exit_codes", Value: yaml.MapSlice{{Key: "item", Value: []int{1, 2, 4}}}},
		}},
		{Key: "concurrency", Value: yaml.MapSlice{{Key: "max", Value: s.Concurrency}}},
		{Key: "checkpoint", Value: yaml.MapSlice{{Key: "flush_every", Value: 1}}},
	}
	b, err := yaml.Marshal(doc)
	if err != nil {
		return nil, err
	}
	header := fmt.Sprintf("# The job of the per-item fix run %s, written by tenax fix: one fix loop per item.\n# Resume it with tenax resume JOB.\n", specPath)
	return append([]byte(header), b...), nil
}

// WriteItemsJob writes ItemsJobSpec under Home/fixes/ and returns its
// path, for job.Run.
func WriteItemsJob(s *spec.Fix, o ItemsJob) (string, error) {
	b, err := ItemsJobSpec(s, o)
	if err != nil {
		return "", err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	dir := FixesDir(o.Home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", &StorageError{Err: err}
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-items-%s.yaml", safeName(s.Name), now().UTC().Format("20060102_150405.000")))
	if err := writeDurable(path, b); err != nil {
		return "", err
	}
	return path, nil
}

// escapeTemplate keeps a literal value literal in an argv template.
func escapeTemplate(s string) string {
	if !strings.Contains(s, "{{") {
		return s
	}
	return `{{"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s) + `"}}`
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// ParseItem reads --item: the item's fields as JSON, as the job's
// template {{json .}} renders them (with idx and id).
func ParseItem(text string) (task.Item, error) {
	var fields map[string]any
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return task.Item{}, fmt.Errorf("fix: --item: %w", err)
	}
	item := task.Item{Fields: fields, Raw: json.RawMessage(text)}
	if n, ok := fields["idx"].(float64); ok {
		item.Idx = int(n)
	}
	if id, ok := fields["id"].(string); ok {
		item.ID = id
	}
	return item, nil
}

// renderForItem renders the per-item templates of cfg over item.
// extra is the command line's --context.
func renderForItem(cfg *Config, s *spec.Fix, item task.Item, extra string) error {
	data := task.TemplateData(item)
	var sb strings.Builder
	render := func(what, text string) (string, error) {
		t, err := task.ParseTemplate(what, text)
		if err != nil {
			return "", err
		}
		return t.Execute(&sb, data)
	}
	list := func(what string, in []string) ([]string, error) {
		out := make([]string, len(in))
		for i, v := range in {
			r, err := render(fmt.Sprintf("%s[%d]", what, i), v)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	var err error
	if cfg.Check.Argv, err = list("check.argv", s.Check.Argv); err != nil {
		return err
	}
	if cfg.Paths, err = list("paths", s.Paths); err != nil {
		return err
	}
	specContext, err := render("context", s.Context)
	if err != nil {
		return err
	}
	cfg.Context = joinContext(specContext, extra)
	switch f := cfg.Fixer.(type) {
	case ExecFixer:
		if f.Argv, err = list("fixer.argv", s.Fixer.Argv); err != nil {
			return err
		}
		cfg.Fixer = f
	case LLMFixer:
		if f.System, err = render("fixer.system", s.Fixer.System); err != nil {
			return err
		}
		if f.Prompt, err = render("fixer.prompt", s.Fixer.Prompt); err != nil {
			return err
		}
		cfg.Fixer = f
	}
	name := item.ID
	if name == "" {
		name = fmt.Sprintf("#%d", item.Idx)
	}
	cfg.Name = s.Name + " " + name
	return nil
}

// ItemSummary is what a per-item loop prints as its item's output.
type ItemSummary struct {
	FixRun    string           `json:"fix_run"`
	Outcome   string           `json:"outcome"`
	Reason    string           `json:"reason,omitempty"`
	Attempts  int              `json:"attempts"`
	Checks    int              `json:"checks"`
	Remaining []RemainingError `json:"remaining,omitempty"`
}

// RemainingError is an error left at the end of a loop.
type RemainingError struct {
	Fingerprint string      `json:"fingerprint"`
	Name        string      `json:"name"`
	Status      heal.Status `json:"status"`
	Attempts    int         `json:"attempts"`
	Message     string      `json:"message"`
}

// Summary is the result as an item's output.
func (r *Result) Summary() ItemSummary {
	s := ItemSummary{FixRun: r.ID, Outcome: r.Outcome, Reason: r.Reason, Attempts: r.Attempts, Checks: r.Checks}
	for _, e := range r.Remaining {
		s.Remaining = append(s.Remaining, RemainingError{Fingerprint: e.Fingerprint, Name: e.Name, Status: e.Status, Attempts: e.Attempts, Message: firstLine(e.Message)})
	}
	return s
}
