package job

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/task"
)

// TemplateSample is how many items, from the start of the input, a dry run
// and `tenax validate` render every template of the task against.
const TemplateSample = 100

// namedTemplate is one template of a task, named as its errors name it.
type namedTemplate struct {
	name string
	t    *task.Template
}

// taskTemplates parses every template the spec's task renders per item.
func taskTemplates(s *spec.Spec) ([]namedTemplate, error) {
	t := s.Task
	var srcs [][2]string
	add := func(name, src string) {
		if src != "" {
			srcs = append(srcs, [2]string{name, src})
		}
	}
	switch t.Type {
	case "exec":
		for i, a := range t.Argv {
			srcs = append(srcs, [2]string{"argv[" + strconv.Itoa(i) + "]", a})
		}
		add("stdin", t.Stdin)
		for _, k := range slices.Sorted(maps.Keys(t.Env)) {
			add("env["+k+"]", t.Env[k])
		}
	case "http":
		add("url", t.URL)
		add("body", t.Body)
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			add("headers["+k+"]", t.Headers[k])
		}
	default:
		add("system", t.System)
		add("prompt", t.Prompt)
	}
	out := make([]namedTemplate, 0, len(srcs))
	for _, src := range srcs {
		tmpl, err := task.ParseTemplate(src[0], src[1])
		if err != nil {
			return nil, err
		}
		out = append(out, namedTemplate{name: src[0], t: tmpl})
	}
	return out, nil
}

// TemplateProblem is a template of the task that does not render for some
// of the items checked: a field it names that they lack ({{.wrd}}), or
// another execution error.
type TemplateProblem struct {
	// Template names the template: "prompt", "argv[1]", "headers[X-Id]".
	Template string
	// Field is the missing field, "" for another error.
	Field string
	// Err is the first error, as the run would record it.
	Err string
	// Line and Idx locate the first item it fails for; Count is how many
	// of the items checked it fails for.
	Line, Idx, Count int
	// Fields are that item's fields; Suggestion the one Field probably
	// meant ("" when none is close).
	Fields     []string
	Suggestion string
}

// TemplateCheck is the outcome of rendering the task's templates against
// the first items of the input.
type TemplateCheck struct {
	Path      string
	Templates int
	Items     int
	Problems  []TemplateProblem
	// Literals are the {name}s the templates send as written (see
	// spec.Placeholder), each with whether it names a field.
	Literals []Literal
}

// Literal is a {name} of the task's templates, judged against the items:
// Field says Name is a field they have (or one every item has: idx, id,
// feedback, previous_output), which makes it a mistake, an error; another
// {name} is a warning, since braces can be meant.
type Literal struct {
	spec.Placeholder
	Field bool
}

var missingKey = lazyregexp.New(`map has no entry for key "([^"]*)"`)

// CheckTemplates renders every template of the spec's task against the
// first TemplateSample good items of the input at path, as the run would
// render them on a first attempt, and reports what does not render. Bad
// lines are skipped: checkInput reports them.
func CheckTemplates(s *spec.Spec, path string, format input.Format) (*TemplateCheck, error) {
	tmpls, err := taskTemplates(s)
	if err != nil {
		return nil, err
	}
	r, err := input.Open(path, format)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := &TemplateCheck{Path: path, Templates: len(tmpls)}
	byKey := map[string]int{} // template + field or error → index in Problems
	fields := map[string]bool{}
	var sb strings.Builder
	for c.Items < TemplateSample {
		item, err := r.Next()
		var le *input.LineError
		if errors.Is(err, io.EOF) {
			break
		}
		switch {
		case errors.As(err, &le) && le.Idx >= 0:
			continue
		case err != nil:
			return nil, err
		}
		c.Items++
		data := task.TemplateData(item)
		for k := range data {
			fields[k] = true
		}
		for _, nt := range tmpls {
			_, err := nt.t.Execute(&sb, data)
			if err == nil {
				continue
			}
			field := ""
			if m := missingKey().FindStringSubmatch(err.Error()); m != nil {
				field = m[1]
			}
			key := nt.name + "\x00" + field
			if field == "" {
				key += "\x00" + err.Error()
			}
			if i, ok := byKey[key]; ok {
				c.Problems[i].Count++
				continue
			}
			fields := slices.Sorted(maps.Keys(item.Fields))
			p := TemplateProblem{Template: nt.name, Field: field, Err: err.Error(), Line: r.Line(), Idx: item.Idx, Count: 1, Fields: fields}
			if field != "" {
				p.Suggestion = spec.Suggest(field, fields)
			}
			byKey[key] = len(c.Problems)
			c.Problems = append(c.Problems, p)
		}
	}
	for _, p := range s.Placeholders() {
		c.Literals = append(c.Literals, Literal{Placeholder: p, Field: fields[p.Name]})
	}
	return c, nil
}

// WriteLiteralWarnings writes, one a line, the warnings for the {name}s
// of the spec's templates when no input can be read to tell a field from
// braces meant literally: what `tenax validate` shows without an input.
func WriteLiteralWarnings(w io.Writer, s *spec.Spec) error {
	var b strings.Builder
	for _, p := range s.Placeholders() {
		fmt.Fprintf(&b, "%s\n", p.Problem(false))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// fieldLiterals counts the literals that name a field.
func (c *TemplateCheck) fieldLiterals() int {
	n := 0
	for _, l := range c.Literals {
		if l.Field {
			n++
		}
	}
	return n
}

// WriteText writes the check as the dry run and validate show it: one line
// when every template renders, else one paragraph per problem; then one
// line per {name} the templates send as written.
func (c *TemplateCheck) WriteText(w io.Writer) error {
	var b strings.Builder
	base := filepath.Base(c.Path)
	if len(c.Problems) == 0 {
		result := "OK"
		switch n := c.fieldLiterals(); {
		case n == 1:
			result = "FAILED (a {name} in single braces names a field of the items, and goes out as written)"
		case n > 1:
			result = fmt.Sprintf("FAILED (%d {name}s in single braces name fields of the items, and go out as written)", n)
		}
		fmt.Fprintf(&b, "templates: %s rendered for the first %s of %s: %s\n",
			count(c.Templates, "template", "templates"), count(c.Items, "item", "items"), base, result)
	} else {
		fmt.Fprintf(&b, "templates: FAILED for the first %s of %s (%s):\n",
			count(c.Items, "item", "items"), base, count(len(c.Problems), "problem", "problems"))
	}
	for _, p := range c.Problems {
		if p.Field != "" {
			fmt.Fprintf(&b, "  %s:%d (item #%d): %s uses {{.%s}}, but the item has no field %q", base, p.Line, p.Idx, p.Template, p.Field, p.Field)
			if p.Suggestion != "" {
				fmt.Fprintf(&b, "; did you mean {{.%s}}?", p.Suggestion)
			}
			fmt.Fprintf(&b, "\n    its fields: %s\n", strings.Join(p.Fields, ", "))
		} else {
			fmt.Fprintf(&b, "  %s:%d (item #%d): %s\n", base, p.Line, p.Idx, p.Err)
		}
		if p.Count > 1 {
			fmt.Fprintf(&b, "    the same for %s more\n", count(p.Count-1, "item", "items"))
		}
	}
	for _, l := range c.Literals {
		fmt.Fprintf(&b, "  %s\n", l.Problem(l.Field))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Err is the check as an error (a usage error: exit 2), nil when every
// template renders and no {name} names a field. A {name} that names none
// is a warning only: it does not make the check fail.
func (c *TemplateCheck) Err() error {
	if len(c.Problems) > 0 {
		p := c.Problems[0]
		what := p.Err
		if p.Field != "" {
			what = fmt.Sprintf("%s uses {{.%s}}, which item #%d lacks", p.Template, p.Field, p.Idx)
		}
		return usage(fmt.Errorf("the task's templates do not render for the input (%s:%d: %s); the run would fail those items", filepath.Base(c.Path), p.Line, what))
	}
	for _, l := range c.Literals {
		if l.Field {
			return usage(fmt.Errorf("the task's templates send {%s} as written to every item, though the items have a field %q (%s:%d:%d): write {{.%s}}",
				l.Name, l.Name, l.File, l.Line, l.Col, l.Name))
		}
	}
	return nil
}

// CheckInputTemplates is what `tenax validate SPEC` adds when it has an
// input to look at: the checks a run makes of the input at path (--input
// when fromFlag, else the spec's; its format, its bad lines), then
// CheckTemplates.
func CheckInputTemplates(s *spec.Spec, path string, flag bool) (*TemplateCheck, error) {
	from := fromSpec
	if flag {
		from = fromFlag
	}
	format, sum, err := checkInput(context.Background(), path, from, s, input.ScanOptions{})
	if err != nil {
		return nil, err
	}
	if sum.Items == 0 {
		// As run refuses it: "0 items rendered: OK" passed an input the
		// run would not start on.
		return nil, usage(fmt.Errorf("the input %s has no items: tenax run refuses it (pass --allow-empty to run it anyway)", path))
	}
	c, err := CheckTemplates(s, path, format)
	if err != nil {
		return nil, usage(err)
	}
	return c, nil
}
