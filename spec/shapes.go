package spec

import (
	"encoding/json"
	"reflect"

	"github.com/goccy/go-yaml/ast"
)

// decodeYAML reads input as a path string or as a mapping.
func (in *Input) decodeYAML(d *decoder, n ast.Node, path string, depth int) {
	if _, ok := n.(*ast.MappingNode); ok {
		type plain Input // the same fields without this method
		d.decodeStruct(n, reflect.ValueOf((*plain)(in)).Elem(), path, depth)
		return
	}
	if s, ok := d.scalar(n, path, "a path or a mapping {path, format, on_bad_line}"); ok {
		in.Path = s
		d.set[join(path, "path")] = posOf(n)
	}
}

// decodeYAML reads a schema as a file path or an inline mapping.
func (s *Schema) decodeYAML(d *decoder, n ast.Node, path string, depth int) {
	if _, ok := n.(*ast.MappingNode); ok {
		before := len(d.errs)
		s.inline = d.toValue(n, path, depth)
		if len(d.errs) > before {
			return // the spec fails anyway; do not marshal a half-built schema
		}
		raw, err := json.Marshal(s.inline)
		if err != nil {
			d.errorf(posOf(n), "", "%s: %v", path, err)
			return
		}
		s.Inline = raw
		return
	}
	if p, ok := d.scalar(n, path, "a schema file path or an inline schema mapping"); ok {
		s.Path = p
	}
}

// decodeYAML reads a mapping as a JSON object.
func (o *Object) decodeYAML(d *decoder, n ast.Node, path string, depth int) {
	if _, ok := n.(*ast.MappingNode); !ok {
		d.typeError(n, path, "a mapping")
		return
	}
	before := len(d.errs)
	o.inline = d.toValue(n, path, depth)
	if len(d.errs) > before {
		return
	}
	raw, err := json.Marshal(o.inline)
	if err != nil {
		d.errorf(posOf(n), "", "%s: %v", path, err)
		return
	}
	o.JSON = raw
}

// decodeYAML reads a command as a list or as a single program name.
func (c *Command) decodeYAML(d *decoder, n ast.Node, path string, depth int) {
	if _, ok := n.(*ast.SequenceNode); ok {
		var argv []string
		d.decodeValue(n, reflect.ValueOf(&argv).Elem(), path, depth)
		*c = argv
		return
	}
	if s, ok := d.scalar(n, path, "a list or a program name"); ok {
		*c = Command{s}
	}
}

// decodeYAML reads a latency as one duration or a mapping {min, max}.
func (l *Latency) decodeYAML(d *decoder, n ast.Node, path string, depth int) {
	if _, ok := n.(*ast.MappingNode); ok {
		type plain Latency
		d.decodeStruct(n, reflect.ValueOf((*plain)(l)).Elem(), path, depth)
		return
	}
	if dur, ok := d.duration(n, path); ok {
		l.Min, l.Max = dur, dur
	}
}
