package spec

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/tenaxhq/tenax/task"
)

// checkTemplates parses the task's templates where the spec writes them: a
// template that does not parse ("{{.word}") was reported only when the run
// built its task, without its place in the spec, after validate had
// printed the spec as valid.
func (d *decoder) checkTemplates(t *Task) {
	parse := func(path, name, src string) {
		if src == "" {
			return
		}
		for _, p := range d.placeholders {
			if p.Template == path {
				d.kept = append(d.kept, p)
			}
		}
		if _, err := task.ParseTemplate(name, src); err != nil {
			msg := err.Error()
			if inner := errors.Unwrap(err); inner != nil {
				msg = strings.TrimPrefix(inner.Error(), "template: ")
			}
			d.problem(path, nil, "not a valid template: %s", msg)
		}
	}
	switch t.Type {
	case "llm":
		parse("task.system", "system", t.System)
		parse("task.prompt", "prompt", t.Prompt)
	case "exec":
		for i, a := range t.Argv {
			parse(fmt.Sprintf("task.argv[%d]", i), fmt.Sprintf("argv[%d]", i), a)
		}
		parse("task.stdin", "stdin", t.Stdin)
		for _, k := range slices.Sorted(maps.Keys(t.Env)) {
			parse("task.env."+k, "env["+k+"]", t.Env[k])
		}
	case "http":
		parse("task.url", "url", t.URL)
		parse("task.body", "body", t.Body)
		for _, k := range slices.Sorted(maps.Keys(t.Headers)) {
			parse("task.headers."+k, "headers["+k+"]", t.Headers[k])
		}
	}
}
