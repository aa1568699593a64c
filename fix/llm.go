package fix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/task"
)

// Model is an LLM as the LLM fixer uses it: one call, with a heal re-ask's
// feedback when item.Feedback is set. *llm.Task built with the prompt
// template "{{.prompt}}" and the system template "{{.system}}" is one.
type Model interface {
	Run(ctx context.Context, item task.Item) (task.Result, error)
}

// LLMFixer asks a model for edits in the edit format (see ParseEdits) and
// applies them. An answer whose edits do not apply is an invalid answer:
// it is re-asked with what went wrong, up to MaxInvalid times, and never
// passes as an attempt that changed nothing.
type LLMFixer struct {
	Model Model
	// System is added to tenax's instructions.
	System string
	// Prompt is put at the head of every prompt.
	Prompt string
	// MaxInvalid is how many re-asks an answer that does not apply gets.
	MaxInvalid int
	// Retry retries the model's transient failures (rate limits, 5xx,
	// timeouts); the zero Policy is retry's default.
	Retry retry.Policy
}

// maxFileInPrompt caps a file quoted whole in the prompt, in bytes.
const maxFileInPrompt = 64 << 10

// maxFilesInPrompt bounds the files quoted in the prompt.
const maxFilesInPrompt = 3

const llmInstructions = `You fix one error at a time in a code base. You are given the error, the code
around it and earlier attempts; answer with edits, which tenax applies and then
re-runs the check.

Answer with one or more edit blocks and nothing that matters outside them.
To change part of a file, quote the exact current lines and their replacement:

<<<<<<< SEARCH path/relative/to/workdir
the exact lines to replace, copied from the file
=======
the new lines
>>>>>>> REPLACE

To write a whole file (a new one, or a rewrite), give all its content:

<<<<<<< FILE path/relative/to/workdir
the whole file
>>>>>>> END

The SEARCH text must match exactly one place of the file. Fix the cause, not the
test, unless the test itself is wrong. Change as little as you can.`

// Fix asks the model and applies its edits.
func (f LLMFixer) Fix(ctx context.Context, r Request) (Answer, error) {
	if f.Model == nil {
		return Answer{}, errNoModel
	}
	system, prompt := f.messages(ctx, r)
	item := task.Item{Fields: map[string]any{"prompt": prompt, "system": system}}
	a := Answer{PromptHash: hashPrompt(system + "\x00" + prompt)}
	for try := 0; ; try++ {
		res, err := retry.DoValue(ctx, f.Retry, func(ctx context.Context) (task.Result, error) {
			return f.Model.Run(ctx, item)
		})
		a.Usage = a.Usage.Add(res.Usage)
		a.CostUSD += res.CostUSD
		if err != nil {
			return a, fmt.Errorf("fix: the model: %w", err)
		}
		var text string
		if err := json.Unmarshal(res.Output, &text); err != nil {
			text = string(res.Output)
		}
		files, aerr := applyAnswer(ctx, newFence(r.Workdir, r.Protected), text)
		if aerr == nil {
			a.Summary = fmt.Sprintf("edited %s", strings.Join(files, ", "))
			return a, nil
		}
		if try >= f.MaxInvalid {
			return a, fmt.Errorf("fix: the model's answer did not apply after %s: %w", plural(try, "re-ask"), aerr)
		}
		a.Reasks++
		item.Feedback = &task.Feedback{
			PreviousOutput: text,
			Attempt:        try + 1,
			Message: "Your answer could not be applied, so nothing was changed: " + aerr.Error() +
				"\n\nAnswer again with edit blocks in the format described, quoting the file's current lines exactly.",
		}
	}
}

// Messages are the system message and the prompt the model is asked
// with about r (before any re-ask).
func (f LLMFixer) Messages(r Request) (system, prompt string) {
	return f.messages(context.Background(), r)
}

func (f LLMFixer) messages(ctx context.Context, r Request) (system, prompt string) {
	prompt = buildPrompt(ctx, r)
	if f.Prompt != "" {
		prompt = strings.TrimRight(f.Prompt, "\n") + "\n\n" + prompt
	}
	system = llmInstructions
	if f.System != "" {
		system += "\n\n" + f.System
	}
	return system, prompt
}

// applyAnswer applies the answer's edits when f lets tenax write every
// file they name; else none, and the *EditError says why.
func applyAnswer(ctx context.Context, f fence, text string) ([]string, error) {
	edits, err := ParseEdits(text)
	if err != nil {
		return nil, err
	}
	var problems []string
	for n, e := range edits {
		if _, err := f.allow(ctx, e.Path); err != nil {
			problems = append(problems, fmt.Sprintf("edit %d (%s): %v", n+1, e.Path, err))
		}
	}
	if len(problems) > 0 {
		return nil, &EditError{Problems: problems}
	}
	return ApplyEdits(f.dir, edits)
}

// buildPrompt writes what the model is told about the error.
func buildPrompt(ctx context.Context, r Request) string {
	var b strings.Builder
	if r.Context != "" {
		fmt.Fprintf(&b, "Context from the user:\n%s\n\n", r.Context)
	}
	fmt.Fprintf(&b, "The check `%s` fails. Fix this error (%s, attempt %d on it):\n\n", strings.Join(r.Check, " "), r.Error.Status, r.ErrorAttempt)
	fmt.Fprintf(&b, "In %s:\n%s\n", r.Error.Name, indent(r.Error.Message))
	if len(r.Group) > 0 {
		fmt.Fprintf(&b, "\nThe same error occurs in %s: one fix may fix all.\n", strings.Join(r.Group, ", "))
	}
	if l := r.Error.Location; l != nil {
		fmt.Fprintf(&b, "\nLocation: %s:%d\n", l.File, l.Line)
	}
	for _, f := range promptFiles(ctx, r) {
		fmt.Fprintf(&b, "\nFile %s:\n```\n%s```\n", f.name, f.content)
	}
	if len(r.Hints) > 0 {
		b.WriteString("\nHints:\n")
		for _, h := range r.Hints {
			fmt.Fprintf(&b, "- %s\n", h)
		}
	}
	if len(r.Previous) > 0 {
		b.WriteString("\nEarlier attempts on this error (do something different):\n")
		for _, p := range r.Previous {
			fmt.Fprintf(&b, "- attempt %d: %s", p.Attempt, p.Result)
			if p.Reverted {
				b.WriteString(" (reverted: it made the check worse)")
			}
			if len(p.Files) > 0 {
				fmt.Fprintf(&b, "; changed %s", strings.Join(p.Files, ", "))
			}
			if p.Summary != "" {
				fmt.Fprintf(&b, "; %s", p.Summary)
			}
			b.WriteByte('\n')
		}
	}
	if r.OutputTail != "" {
		fmt.Fprintf(&b, "\nThe last lines of the check's output:\n```\n%s\n```\n", r.OutputTail)
	}
	return b.String()
}

func indent(s string) string {
	return "    " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n    ")
}

type promptFile struct{ name, content string }

// promptFiles are the files quoted whole: the error's file and, for a test
// file, the file it tests (calc_test.go → calc.go, test_calc.py → calc.py,
// calc.test.js → calc.js), found next to it or at the top of the workdir.
func promptFiles(ctx context.Context, r Request) []promptFile {
	f := newFence(r.Workdir, r.Protected)
	l := r.Error.Location
	if l == nil {
		return nil
	}
	names := []string{l.File}
	dir, base := filepath.Dir(filepath.FromSlash(l.File)), filepath.Base(l.File)
	for _, impl := range testedFile(base) {
		for _, d := range []string{dir, "."} {
			names = append(names, filepath.ToSlash(filepath.Join(d, impl)))
		}
	}
	var out []promptFile
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] || len(out) == maxFilesInPrompt {
			continue
		}
		seen[n] = true
		rel, err := f.allow(ctx, n)
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.Workdir, rel))
		if err != nil || len(b) > maxFileInPrompt {
			continue
		}
		content := string(b)
		if !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		out = append(out, promptFile{name: n, content: content})
	}
	return out
}

// testedFile returns the names of the file a test file tests.
func testedFile(base string) []string {
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	var out []string
	for _, suf := range []string{"_test", ".test", ".spec", "_spec"} {
		if s, ok := strings.CutSuffix(stem, suf); ok {
			out = append(out, s+ext)
		}
	}
	if s, ok := strings.CutPrefix(stem, "test_"); ok {
		out = append(out, s+ext)
	}
	return out
}

// errNoModel guards an LLMFixer built without a model.
var errNoModel = errors.New("fix: the llm fixer has no model")
