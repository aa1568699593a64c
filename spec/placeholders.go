package spec

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/goccy/go-yaml/ast"
)

// Placeholder is a {name} in one of the task's templates: single braces
// around an identifier, the placeholder syntax of Python's str.format, of
// LangChain and of most prompt tools, which a tenax template (text/template,
// {{.name}}) sends as written. `Translate '{text}' to Spanish.` went out
// unchanged for every item, and every answer "succeeded".
//
// Braces around anything else ({"es": "..."}, {0}, {{.name}}, ${VAR}) are
// not placeholders: a JSON example in a prompt is what braces are for.
type Placeholder struct {
	// Template is the template's key: "task.prompt", "task.argv[1]".
	Template string
	// Name is the identifier between the braces.
	Name string
	// File, Line and Col are where its { is (1-based).
	File      string
	Line, Col int
}

// Placeholders returns the {name}s of the task's templates, in file order.
// The spec cannot tell a mistake from braces meant literally; the job,
// which reads the input, can: a name that is a field of the items is a
// mistake (see Placeholder.Problem).
func (s *Spec) Placeholders() []Placeholder { return append([]Placeholder(nil), s.placeholders...) }

// Problem is the placeholder as `tenax validate` and the dry run report
// it. When field is set, Name is a field of the input's items: almost
// certainly a mistake, an error. Otherwise it is a warning (its message
// starts "warning:"), since literal braces can be meant.
func (p Placeholder) Problem(field bool) *Error {
	e := &Error{File: p.File, Line: p.Line, Col: p.Col, Suggestion: "{{." + p.Name + "}}"}
	if field {
		e.Msg = fmt.Sprintf("%s: {%s} is sent as written, braces and all, though the items have a field %q", p.Template, p.Name, p.Name)
	} else {
		e.Msg = fmt.Sprintf("warning: %s: {%s} is sent as written, braces and all; ignore this if the braces are meant", p.Template, p.Name)
	}
	return e
}

// templatePath reports whether a value at path is one of a task's
// templates (of any type: checkTemplates keeps those of the task's).
func templatePath(path string) bool {
	switch path {
	case "task.prompt", "task.system", "task.stdin", "task.url", "task.body":
		return true
	}
	return strings.HasPrefix(path, "task.argv[") || strings.HasPrefix(path, "task.env.") || strings.HasPrefix(path, "task.headers.")
}

// findPlaceholders records the {name}s of raw, the text a template's
// scalar n wrote (before ${VAR} expansion, whose values are no
// placeholders of the spec's author), at their place in the file.
func (d *decoder) findPlaceholders(n ast.Node, raw, path string) {
	names := placeholderNames(raw)
	if len(names) == 0 {
		return
	}
	// Each {name} is found in the file's text from the scalar's start:
	// it holds no character a YAML style escapes or folds, so it is there
	// as written, and the k-th one in the scalar is the k-th one there.
	from := d.offset(posOf(n))
	seen := map[string]int{}
	for _, name := range names {
		needle := []byte("{" + name + "}")
		at := from
		for range seen[name] + 1 {
			i := bytes.Index(d.src[at:], needle)
			if i < 0 {
				at = -1
				break
			}
			at += i + 1
		}
		seen[name]++
		p := posOf(n)
		if at > 0 {
			p = d.posAt(at - 1)
		}
		d.placeholders = append(d.placeholders, Placeholder{Template: path, Name: name, File: d.file, Line: p.line, Col: p.col})
	}
}

// placeholderNames returns the identifiers written {name} in a template's
// text, in order: single braces, not those of an action ({{…}}) or of a
// shell's ${name}.
func placeholderNames(s string) []string {
	var names []string
	for i := 0; i < len(s); i++ {
		if strings.HasPrefix(s[i:], "{{") {
			end := strings.Index(s[i+2:], "}}")
			if end < 0 {
				return names
			}
			i += 2 + end + 1
			continue
		}
		if s[i] != '{' || i > 0 && s[i-1] == '$' {
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || j > i+1 && s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 || j == len(s) || s[j] != '}' || j+1 < len(s) && s[j+1] == '}' {
			continue
		}
		names = append(names, s[i+1:j])
		i = j
	}
	return names
}

// offset is the byte offset in the spec's text of p, counting columns in
// characters.
func (d *decoder) offset(p pos) int {
	off := 0
	for range p.line - 1 {
		i := bytes.IndexByte(d.src[off:], '\n')
		if i < 0 {
			return len(d.src)
		}
		off += i + 1
	}
	for range p.col - 1 {
		if off >= len(d.src) || d.src[off] == '\n' {
			break
		}
		_, size := utf8.DecodeRune(d.src[off:])
		off += size
	}
	return off
}

// posAt is the line and column (in characters) of byte offset off of the
// spec's text.
func (d *decoder) posAt(off int) pos {
	before := d.src[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	start := bytes.LastIndexByte(before, '\n') + 1
	return pos{line, utf8.RuneCount(before[start:]) + 1}
}
