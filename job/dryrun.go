package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// DryRun checks everything a run would check (the spec, the input, the
// task's templates, the validator), renders every template against the
// first TemplateSample items, and writes the plan, the first item and what
// did not render to w. It calls nothing and creates no job. A template that
// does not render is a usage error.
func DryRun(ctx context.Context, specPath string, opts Options, w io.Writer) error {
	s, err := LoadSpec(specPath, opts.env())
	if err != nil {
		return err
	}
	inPath, from := s.Input.Path, fromSpec
	if opts.Input != "" {
		if inPath, err = filepath.Abs(opts.Input); err != nil {
			return usage(err)
		}
		from = fromFlag
	}
	if inPath == "" {
		return usage(errors.New("no input: set input in the spec or pass --input"))
	}
	format, sum, err := checkInput(ctx, inPath, from, s, input.ScanOptions{})
	if err != nil {
		return err
	}
	if err := checkNotEmpty(inPath, sum, opts); err != nil {
		return err
	}
	checked, err := buildTask(s, opts.Home, 0, opts.Store)
	if err != nil {
		return usage(err)
	}
	checked.Close()
	if _, err := engineConfig(s, opts.Interactive); err != nil {
		return usage(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "spec:   %s (%s) OK\n", s.Path(), s.Name)
	fmt.Fprintf(&b, "input:  %s: %s (%s, sha256 %.12s…)", inPath, count(sum.Items, "item", "items"), format, sum.SHA256)
	if sum.BadCount > 0 {
		fmt.Fprintf(&b, ", %s", count(sum.BadCount, "bad line recorded as a failed item", "bad lines recorded as failed items"))
	}
	b.WriteByte('\n')
	fmt.Fprintf(&b, "task:   %s\n", describeTask(s))
	fmt.Fprintf(&b, "policy: retry %d attempts (backoff %s×%g up to %s, %s jitter); breaker after %d failures, on trip %s; concurrency %d%s\n",
		s.Retry.MaxAttempts, s.Retry.Backoff.Base, s.Retry.Backoff.Multiplier, s.Retry.Backoff.Max, orDefault(s.Retry.Backoff.Jitter, "proportional"),
		s.Breaker.Threshold, orDefault(s.Breaker.OnTrip, "prompt on a terminal, else abort"), s.Concurrency.Max, adaptiveText(s))
	r, err := input.Open(inPath, format)
	if err != nil {
		return usage(err)
	}
	defer r.Close()
	first, err := r.Next()
	switch {
	case errors.Is(err, io.EOF):
		b.WriteString("first item: none (the input is empty)\n")
	case err != nil:
		fmt.Fprintf(&b, "first item: #%d is bad: %v\n", first.Idx, err)
	default:
		fmt.Fprintf(&b, "first item: #%d %s\n", first.Idx, preview(first.Raw))
		if err := writeFirstCall(&b, s, first); err != nil {
			return usage(err)
		}
	}
	check, err := CheckTemplates(s, inPath, format)
	if err != nil {
		return usage(err)
	}
	if err := check.WriteText(&b); err != nil {
		return err
	}
	b.WriteString("dry run: nothing was called and no job was created\n")
	// The task line shows argv and URLs, and the first item is input: both
	// may hold a secret the spec expanded.
	if _, err = io.WriteString(w, s.Redact(b.String())); err != nil {
		return err
	}
	return check.Err()
}

// maxRendered is how much of each rendered template the dry run shows.
const maxRendered = 2048

// writeFirstCall writes what the first item's first attempt would send, its
// templates rendered as the run renders them: the system prompt and prompt
// of an llm task, an exec task's argv (with its stdin and env), an http
// task's request line, headers and body. A {text} that went out literally
// is plain to see here, where "templates: OK" did not show it.
func writeFirstCall(b *strings.Builder, s *spec.Spec, item task.Item) error {
	tmpls, err := taskTemplates(s)
	if err != nil {
		return err
	}
	data := task.TemplateData(item)
	var sb strings.Builder
	rendered := map[string]string{}
	var argv []string
	for _, nt := range tmpls {
		out, err := nt.t.Execute(&sb, data)
		if err != nil {
			// CheckTemplates reports it, with the item's line.
			out = "(does not render: " + err.Error() + ")"
		}
		rendered[nt.name] = out
		if strings.HasPrefix(nt.name, "argv[") {
			argv = append(argv, out)
		}
	}
	fmt.Fprintf(b, "first call (item #%d, first attempt):\n", item.Idx)
	show := func(label, text string) {
		if len(text) > maxRendered {
			cut := maxRendered
			for cut > 0 && !utf8.RuneStart(text[cut]) {
				cut--
			}
			text = fmt.Sprintf("%s… (%s in all)", text[:cut], report.Bytes(int64(len(text))))
		}
		if !strings.Contains(text, "\n") {
			fmt.Fprintf(b, "  %s: %s\n", label, text)
			return
		}
		fmt.Fprintf(b, "  %s:\n", label)
		for line := range strings.Lines(text) {
			fmt.Fprintf(b, "    %s", line)
		}
		if !strings.HasSuffix(text, "\n") {
			b.WriteByte('\n')
		}
	}
	t := s.Task
	switch t.Type {
	case "exec":
		show("argv", fmt.Sprintf("%q", argv))
		if _, ok := rendered["stdin"]; ok {
			show("stdin", rendered["stdin"])
		}
		for _, k := range slices.Sorted(maps.Keys(t.Env)) {
			show("env "+k, rendered["env["+k+"]"])
		}
	case "http":
		show("request", orDefault(t.Method, "GET")+" "+rendered["url"])
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			show("header "+k, rendered["headers["+k+"]"])
		}
		if _, ok := rendered["body"]; ok {
			show("body", rendered["body"])
		}
	default:
		if _, ok := rendered["system"]; ok {
			show("system", rendered["system"])
		}
		show("prompt", rendered["prompt"])
	}
	return nil
}

// maxPreview is how much of the first item the dry run shows.
const maxPreview = 240

// preview is an item's raw JSON as the dry run shows it: whole when short,
// else its first maxPreview bytes (cut between characters) and its size.
func preview(raw []byte) string {
	if len(raw) <= maxPreview {
		return string(raw)
	}
	cut := maxPreview
	for cut > 0 && !utf8.RuneStart(raw[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%s)", raw[:cut], report.Bytes(int64(len(raw))))
}

// count writes n with the noun's singular or plural.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func describeTask(s *spec.Spec) string {
	t := s.Task
	switch t.Type {
	case "exec":
		return fmt.Sprintf("exec %q (timeout %s, output %s)", t.Argv, t.Timeout, orDefault(t.Output, "text"))
	case "http":
		return fmt.Sprintf("http %s %s (output %s)", orDefault(t.Method, "GET"), t.URL, orDefault(t.Output, "text"))
	default:
		desc := fmt.Sprintf("llm %s model %s (max_tokens %d, output %s)", t.Provider, t.Model, t.MaxTokens, orDefault(t.Output, "text"))
		if notes, err := Notes(s); err == nil && len(notes) > 0 {
			desc += "; " + notes[0]
		}
		return desc
	}
}

// Notes are what `tenax validate` adds after the resolved spec: decisions
// tenax makes from it that the spec does not spell out (how an llm task
// asks for JSON, and why). Each is one line.
func Notes(s *spec.Spec) ([]string, error) {
	if s.Task.Type != "llm" {
		return nil, nil
	}
	cfg, err := llmConfig(s)
	if err != nil {
		return nil, err
	}
	if err := checkRoutePrices(s, cfg); err != nil {
		return nil, err
	}
	st, err := llm.StructuredFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("validate.json_schema: %w", err)
	}
	notes := []string{fmt.Sprintf("structured output: %s (%s)", st.Mode, st.Why)}
	if s.Heal.MaxAttempts == 0 {
		notes = append(notes, "an answer cut off at max_tokens is an item failure (heal.max_attempts is 0)")
	} else if s.Task.MaxTokensCeiling > s.Task.MaxTokens {
		notes = append(notes, fmt.Sprintf("an answer cut off at max_tokens is re-asked with max_tokens doubled, up to %d", s.Task.MaxTokensCeiling))
	}
	return notes, nil
}

func adaptiveText(s *spec.Spec) string {
	if s.Concurrency.Adaptive {
		return " (adaptive)"
	}
	return ""
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
