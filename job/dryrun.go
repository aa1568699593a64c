package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/spec"
)

// DryRun checks everything a run would check (the spec, the input, the
// task's templates, the validator) and writes the plan and the first item to
// w. It calls nothing and creates no job.
func DryRun(ctx context.Context, specPath string, opts Options, w io.Writer) error {
	s, err := LoadSpec(specPath, opts.env())
	if err != nil {
		return err
	}
	inPath := s.Input.Path
	if opts.Input != "" {
		if inPath, err = filepath.Abs(opts.Input); err != nil {
			return usage(err)
		}
	}
	format, sum, err := checkInput(inPath, s)
	if err != nil {
		return err
	}
	if _, err := buildTask(s, opts.Home); err != nil {
		return usage(err)
	}
	if _, err := engineConfig(s, opts.Interactive); err != nil {
		return usage(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "spec:   %s (%s) OK\n", s.Path(), s.Name)
	fmt.Fprintf(&b, "input:  %s: %d items (%s, sha256 %.12s…)", inPath, sum.Items, format, sum.SHA256)
	if sum.BadCount > 0 {
		fmt.Fprintf(&b, ", %d bad lines recorded as failed items", sum.BadCount)
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
		fmt.Fprintf(&b, "first item: #%d %s\n", first.Idx, first.Raw)
	}
	b.WriteString("dry run: nothing was called and no job was created\n")
	_, err = io.WriteString(w, b.String())
	return err
}

func describeTask(s *spec.Spec) string {
	t := s.Task
	switch t.Type {
	case "exec":
		return fmt.Sprintf("exec %q (timeout %s, output %s)", t.Argv, t.Timeout, orDefault(t.Output, "text"))
	case "http":
		return fmt.Sprintf("http %s %s (output %s)", orDefault(t.Method, "GET"), t.URL, orDefault(t.Output, "text"))
	default:
		return fmt.Sprintf("llm %s model %s (max_tokens %d, output %s)", t.Provider, t.Model, t.MaxTokens, orDefault(t.Output, "text"))
	}
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
