package spec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// The decoder walks the YAML syntax tree itself rather than calling
// yaml.Unmarshal: it must report every problem at once, each at its own
// line and column, suggest near-miss keys, expand ${VAR} inside scalar
// values only (so a variable's value can never inject YAML structure), and
// remember which keys were written so that defaults never override an
// explicit zero.

// maxNodes bounds the nodes decoded, aliases included, so that a "billion
// laughs" spec fails instead of exhausting memory.
const maxNodes = 20_000

// maxDepth bounds nesting.
const maxDepth = 64

// pos is a 1-based line and column.
type pos struct{ line, col int }

// expansion is one ${VAR} replaced while decoding the value at path.
type expansion struct {
	path, name, value string
}

type decoder struct {
	file string
	env  func(string) (string, bool)
	errs Errors

	// set holds the path of every key written with a non-null value, and
	// the value's position; keyPos the key's position.
	set     map[string]pos
	keyPos  map[string]pos
	anchors map[string]ast.Node

	expanded []expansion
	// written holds, by path, the text the spec wrote for a value that
	// ${VAR} expansion changed, for errors to show instead of the value.
	written map[string]string
	// src is the spec's text; placeholders the {name}s found in its
	// templates.
	src          []byte
	placeholders []Placeholder
	// kept are the placeholders of the templates the task's type renders.
	kept   []Placeholder
	nodes  int
	tooBig bool
	// files says to check the files the spec names (Load does, Parse
	// does not).
	files bool
}

// yamlDecoder is implemented by the types whose YAML has more than one
// shape (a string or a mapping, a string or a list).
type yamlDecoder interface {
	decodeYAML(d *decoder, n ast.Node, path string, depth int)
}

var durationType = reflect.TypeFor[time.Duration]()

func newDecoder(file string, env func(string) (string, bool)) *decoder {
	return &decoder{
		file:    file,
		env:     env,
		set:     map[string]pos{},
		keyPos:  map[string]pos{},
		anchors: map[string]ast.Node{},
		written: map[string]string{},
	}
}

// errorf records a problem at p.
func (d *decoder) errorf(p pos, suggestion, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...), Suggestion: suggestion})
}

// decodeFile checks that data is YAML text of a sane size, parses it and
// decodes its one document into target, a pointer to a spec struct (a job
// spec's Spec, a fix spec's Fix).
func (d *decoder) decodeFile(data []byte, target any) {
	// The YAML library keeps a UTF-8 byte order mark as part of the first
	// key; Windows editors write one.
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	d.src = data
	tokens, ok := d.tokens(data)
	if !ok {
		return
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		d.syntaxError(data, err)
		return
	}
	var body ast.Node
	for _, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			d.errorf(posOf(doc.Body), "", "a spec holds one YAML document; remove the second one")
			return
		}
		body = doc.Body
	}
	if body == nil {
		what := "a task"
		if _, isFix := target.(*Fix); isFix {
			what = "a check and a fixer"
		}
		d.errorf(pos{1, 1}, "", "the spec is empty: it needs at least %s", what)
		return
	}
	ast.Walk(anchorCollector(d.anchors), body)
	d.decodeValue(body, reflect.ValueOf(target).Elem(), "", 0)
}

// tokens checks that data is YAML text of a sane size and splits it into
// tokens, refusing more than maxTokens of them or flow nesting deeper than
// maxDepth: what every parse of a spec file goes through before a tree is
// built. false means an error was recorded.
func (d *decoder) tokens(data []byte) (token.Tokens, bool) {
	if !d.checkText(data) {
		return nil, false
	}
	tokens := lexer.Tokenize(string(data))
	n, flow := 0, 0
	for _, tk := range tokens {
		if tk.Type == token.CommentType {
			continue
		}
		if n++; n > maxTokens {
			d.errorf(tokenPos(tk), "", "the spec is too long: more than %d YAML tokens (keys, values, list items); a spec needs far fewer (put large data in the input file)", maxTokens)
			return nil, false
		}
		// The parser builds the whole tree before the decoder can see its
		// depth, in time growing with the square of the nesting: flow
		// nesting ([[[…, {{{…) is bounded here, from the tokens. Block
		// nesting needs an indentation per level, so the size limit keeps
		// it shallow enough.
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			if flow++; flow > maxDepth {
				d.errorf(tokenPos(tk), "", "the spec nests deeper than %d levels of [ ] and { }; a spec needs a few", maxDepth)
				return nil, false
			}
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		}
	}
	return tokens, true
}

// syntaxError reports the YAML parser's error at its position, in words a
// user can act on where the library's are obscure.
func (d *decoder) syntaxError(data []byte, err error) {
	var ye yaml.Error
	if !errors.As(err, &ye) || ye.GetToken() == nil {
		d.errorf(pos{1, 1}, "", "%s", escapeControls(err.Error()))
		return
	}
	p := tokenPos(ye.GetToken())
	msg := ye.GetMessage()
	if col, ok := indentTab(data, p.line); ok {
		d.errorf(pos{p.line, col}, "", "a tab cannot indent YAML; indent with spaces")
		return
	}
	if strings.Contains(strings.ToLower(msg), "tab") || strings.Contains(msg, "\t") {
		// The library's wording ("tab character cannot use as a map key
		// directly") hides the fix.
		if col, ok := tabNear(data, p); ok {
			p.col = col
		}
		d.errorf(p, "", "a tab cannot separate YAML here; use spaces")
		return
	}
	if strings.Contains(msg, "not allowed in this context") {
		if q, text, ok := badIndent(data, p); ok {
			d.errorf(q, "", "%s", text)
			return
		}
	}
	d.errorf(p, "", "%s", escapeControls(msg))
}

// badIndent finds the line that the parser's "mapping value is not allowed
// in this context" is about. The parser reports the value before the
// fault: in "type: exec" followed by "    argv: [x]", it reads "exec argv"
// as one value continued on the next line and stops at the second colon,
// reporting "exec". It follows the keys' columns from the top (a key is a
// child of the key before it when that one has no value and it is deeper,
// else a sibling of a key above at its column) and returns the first key
// from p's line on that is neither.
func badIndent(data []byte, p pos) (pos, string, bool) {
	type open struct {
		col, line int
		key       string
		hasValue  bool
	}
	var stack []open
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		col, key, value, ok := keyLine(lines[i])
		if !ok {
			continue
		}
		bad := ""
		switch top := len(stack) - 1; {
		case top < 0:
		case col > stack[top].col && stack[top].hasValue:
			bad = fmt.Sprintf("%s is indented deeper than %s on line %d, which already has a value: indent it to column %d beside %s, or make %s a mapping",
				quote(key), quote(stack[top].key), stack[top].line, stack[top].col, quote(stack[top].key), quote(stack[top].key))
		case col > stack[top].col:
		default:
			for len(stack) > 0 && stack[len(stack)-1].col > col {
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 || stack[len(stack)-1].col != col {
				bad = fmt.Sprintf("%s is indented to column %d, where no key above it is", quote(key), col)
				if len(stack) > 0 {
					bad += fmt.Sprintf(" (%s on line %d is at column %d)", quote(stack[len(stack)-1].key), stack[len(stack)-1].line, stack[len(stack)-1].col)
				}
			} else {
				stack = stack[:len(stack)-1]
			}
		}
		if bad != "" {
			if i+1 >= p.line {
				return pos{i + 1, col}, "bad indentation: " + bad, true
			}
			return pos{}, "", false
		}
		stack = append(stack, open{col: col, line: i + 1, key: key, hasValue: value != ""})
		if v := strings.TrimSpace(value); strings.HasPrefix(v, "|") || strings.HasPrefix(v, ">") {
			// A block scalar: its lines are text, whatever colons they hold.
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) >= col) {
				i++
			}
		}
	}
	return pos{}, "", false
}

// keyLine reports a line that holds a mapping key ("  key: value", "- key:
// value"): the key's column (1-based), the key and what follows its colon,
// comments left out.
func keyLine(line string) (col int, key, value string, ok bool) {
	trimmed := strings.TrimLeft(line, " ")
	col = len(line) - len(trimmed) + 1
	for strings.HasPrefix(trimmed, "- ") {
		trimmed = strings.TrimLeft(trimmed[2:], " ")
		col = len(line) - len(trimmed) + 1
	}
	if trimmed == "" || trimmed[0] == '#' {
		return 0, "", "", false
	}
	k, v, found := strings.Cut(trimmed, ":")
	if !found || k == "" || strings.ContainsAny(k, " \t\"'{[") || (v != "" && v[0] != ' ') {
		return 0, "", "", false
	}
	if j := strings.Index(v, " #"); j >= 0 {
		v = v[:j]
	}
	return col, k, strings.TrimSpace(v), true
}

// lineOf returns line (1-based) of data, without its line break.
func lineOf(data []byte, line int) []byte {
	for range line - 1 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return nil
		}
		data = data[i+1:]
	}
	if i := bytes.IndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	}
	return data
}

// tabNear returns the column of the last tab before p on p's line, or of
// the line's first tab.
func tabNear(data []byte, p pos) (int, bool) {
	line := []rune(string(lineOf(data, p.line)))
	col := 0
	for i, r := range line {
		if r != '\t' {
			continue
		}
		if i+1 > p.col && col > 0 {
			break
		}
		col = i + 1
	}
	return col, col > 0
}

// tokenPos is where a token starts.
func tokenPos(tk *token.Token) pos {
	if tk == nil || tk.Position == nil {
		return pos{1, 1}
	}
	return pos{max(tk.Position.Line, 1), max(tk.Position.Column, 1)}
}

// indentTab returns the column of the first tab in the indentation of line
// (1-based) of data, if there is one.
func indentTab(data []byte, line int) (int, bool) {
	for i, c := range lineOf(data, line) {
		switch c {
		case ' ':
			continue
		case '\t':
			return i + 1, true
		}
		break
	}
	return 0, false
}

// anchorCollector records every anchor of a document by name.
type anchorCollector map[string]ast.Node

func (a anchorCollector) Visit(n ast.Node) ast.Visitor {
	if x, ok := n.(*ast.AnchorNode); ok && x.Name != nil && x.Value != nil {
		a[x.Name.GetToken().Value] = x.Value
	}
	return a
}

// resolve looks through anchors, tags and aliases to the node that holds
// the value; nil for an alias to an unknown anchor (reported).
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range maxDepth {
		switch x := n.(type) {
		case *ast.AnchorNode:
			n = x.Value
		case *ast.TagNode:
			n = x.Value
		case *ast.AliasNode:
			if x.Value == nil {
				return nil
			}
			name := x.Value.GetToken().Value
			target, ok := d.anchors[name]
			if !ok {
				d.errorf(posOf(x), "", "alias *%s refers to no anchor", name)
				return nil
			}
			n = target
		default:
			return n
		}
	}
	d.errorf(posOf(n), "", "aliases nested too deeply")
	return nil
}

// posOf returns where a node starts.
func posOf(n ast.Node) pos {
	switch x := n.(type) {
	case nil:
		return pos{1, 1}
	case *ast.MappingNode:
		if len(x.Values) > 0 && x.Values[0].Key != nil {
			return posOf(x.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return posOf(x.Key)
	case *ast.MappingKeyNode:
		if x.Value != nil {
			return posOf(x.Value)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return pos{1, 1}
	}
	return pos{tk.Position.Line, max(tk.Position.Column, 1)}
}

// isNull reports whether n is YAML null (or absent).
func isNull(n ast.Node) bool {
	_, null := n.(*ast.NullNode)
	return n == nil || null
}

// budget counts a node against maxNodes and maxDepth; false means stop.
func (d *decoder) budget(n ast.Node, depth int) bool {
	d.nodes++
	if d.nodes > maxNodes || depth > maxDepth {
		if !d.tooBig {
			d.tooBig = true
			d.errorf(posOf(n), "", "the spec is too large or too deeply nested (aliases included)")
		}
		return false
	}
	return true
}

// decodeValue decodes n into v; path names v in errors ("task.model").
func (d *decoder) decodeValue(n ast.Node, v reflect.Value, path string, depth int) {
	if !d.budget(n, depth) {
		return
	}
	n = d.resolve(n)
	if isNull(n) {
		return
	}
	d.set[path] = posOf(n)
	if u, ok := v.Addr().Interface().(yamlDecoder); ok {
		u.decodeYAML(d, n, path, depth+1)
		return
	}
	if v.Type() == durationType {
		if dur, ok := d.duration(n, path); ok {
			v.SetInt(int64(dur))
		}
		return
	}
	switch v.Kind() {
	case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		d.decodeScalar(n, v, path)
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		before := len(d.errs)
		d.decodeValue(n, elem.Elem(), path, depth+1)
		if len(d.errs) == before {
			v.Set(elem)
		}
	case reflect.Slice:
		d.decodeSlice(n, v, path, depth)
	case reflect.Map:
		d.decodeMap(n, v, path, depth)
	case reflect.Struct:
		d.decodeStruct(n, v, path, depth)
	default:
		panic(fmt.Sprintf("spec: no decoding for %s at %s", v.Type(), path))
	}
}

// decodeScalar decodes a string, bool, integer or float.
func (d *decoder) decodeScalar(n ast.Node, v reflect.Value, path string) {
	switch v.Kind() {
	case reflect.String:
		if s, ok := d.scalar(n, path, "a string"); ok {
			v.SetString(s)
		}
	case reflect.Bool:
		s, ok := d.scalar(n, path, "true or false")
		if !ok {
			return
		}
		switch strings.ToLower(s) {
		case "true", "yes", "on":
			v.SetBool(true)
		case "false", "no", "off":
			v.SetBool(false)
		default:
			d.errorf(posOf(n), "", "%s: expected true or false, got %s", path, d.shown(path, quote(s)))
		}
	case reflect.Int, reflect.Int64:
		s, ok := d.scalar(n, path, "an integer")
		if !ok {
			return
		}
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			d.errorf(posOf(n), "", "%s: expected an integer, got %s", path, d.shown(path, quote(s)))
			return
		}
		if v.OverflowInt(i) {
			d.errorf(posOf(n), "", "%s: %s is too large", path, d.shown(path, strconv.FormatInt(i, 10)))
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		s, ok := d.scalar(n, path, "a number")
		if !ok {
			return
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.errorf(posOf(n), "", "%s: expected a number, got %s", path, d.shown(path, quote(s)))
			return
		}
		v.SetFloat(f)
	}
}

// decodeSlice decodes a sequence, each item with its index in its path.
func (d *decoder) decodeSlice(n ast.Node, v reflect.Value, path string, depth int) {
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.typeError(n, path, "a list")
		return
	}
	out := reflect.MakeSlice(v.Type(), len(seq.Values), len(seq.Values))
	for i, item := range seq.Values {
		d.decodeValue(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i), depth+1)
	}
	v.Set(out)
}

// decodeMap decodes a mapping into a map, each value with its key in its
// path.
func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path string, depth int) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.typeError(n, path, "a mapping")
		return
	}
	out := reflect.MakeMap(v.Type())
	for _, e := range d.entries(m, depth) {
		key, ok := d.key(e)
		if !ok {
			continue
		}
		kp := join(path, key)
		d.keyPos[kp] = posOf(e.Key)
		elem := reflect.New(v.Type().Elem()).Elem()
		d.decodeValue(e.Value, elem, kp, depth+1)
		out.SetMapIndex(reflect.ValueOf(key), elem)
	}
	v.Set(out)
}

// decodeStruct decodes a mapping into a struct by the fields' yaml tags,
// reporting unknown keys with the nearest valid one.
func (d *decoder) decodeStruct(n ast.Node, v reflect.Value, path string, depth int) {
	m, ok := n.(*ast.MappingNode)
	if !ok {
		d.typeError(n, path, "a mapping")
		return
	}
	names, index := fieldsOf(v.Type())
	for _, e := range d.entries(m, depth) {
		key, ok := d.key(e)
		if !ok {
			continue
		}
		i, known := index[key]
		if !known {
			where := ""
			if path != "" {
				where = " in " + path
			}
			sugg, note, peer := peerSuggestion(path, key)
			if !peer {
				sugg = suggest(key, names)
			}
			if sugg == "" {
				sugg = meantKeys[path][key]
			}
			if note != "" {
				note = ": " + note
			}
			d.errorf(posOf(e.Key), sugg, "unknown key %s%s%s", quote(key), where, note)
			continue
		}
		kp := join(path, key)
		d.keyPos[kp] = posOf(e.Key)
		d.decodeValue(e.Value, v.Field(i), kp, depth+1)
	}
}

// fieldsOf returns a struct's YAML keys in field order and their field
// indexes.
func fieldsOf(t reflect.Type) ([]string, map[string]int) {
	var names []string
	index := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		if !f.IsExported() || tag == "" || tag == "-" {
			continue
		}
		names = append(names, tag)
		index[tag] = i
	}
	return names, index
}

// entries returns a mapping's key/value pairs with YAML merge keys (<<)
// applied: merged entries come after the explicit ones, and an explicit
// key wins over a merged one.
func (d *decoder) entries(m *ast.MappingNode, depth int) []*ast.MappingValueNode {
	var explicit, merged []*ast.MappingValueNode
	for _, e := range m.Values {
		if _, isMerge := e.Key.(*ast.MergeKeyNode); !isMerge {
			explicit = append(explicit, e)
			continue
		}
		// A merge may name its own anchor, or the same one twice: the node
		// budget keeps that from looping or exploding.
		if !d.budget(e, depth) {
			continue
		}
		src := d.resolve(e.Value)
		var sources []ast.Node
		if seq, ok := src.(*ast.SequenceNode); ok {
			sources = seq.Values
		} else {
			sources = []ast.Node{src}
		}
		for _, s := range sources {
			if !d.budget(s, depth) {
				break
			}
			sm, ok := d.resolve(s).(*ast.MappingNode)
			if !ok {
				d.errorf(posOf(e.Key), "", "<< merges a mapping or a list of mappings")
				continue
			}
			merged = append(merged, d.entries(sm, depth+1)...)
		}
	}
	if len(merged) == 0 {
		return explicit
	}
	seen := map[string]bool{}
	for _, e := range explicit {
		seen[scalarText(e.Key)] = true
	}
	for _, e := range merged {
		k := scalarText(e.Key)
		if !seen[k] {
			seen[k] = true
			explicit = append(explicit, e)
		}
	}
	return explicit
}

// key returns a mapping entry's key, which must be a scalar.
func (d *decoder) key(e *ast.MappingValueNode) (string, bool) {
	k := d.resolve(e.Key)
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = d.resolve(mk.Value)
	}
	if _, ok := k.(ast.ScalarNode); !ok || k == nil {
		d.errorf(posOf(e.Key), "", "keys must be plain strings")
		return "", false
	}
	return scalarText(k), true
}

// scalarText is a scalar's text as written (unquoted), "" for others.
func scalarText(n ast.Node) string {
	switch x := n.(type) {
	case *ast.StringNode:
		return x.Value
	case *ast.LiteralNode:
		if x.Value != nil {
			return x.Value.Value
		}
		return ""
	case *ast.NullNode:
		return ""
	case *ast.MappingKeyNode:
		return scalarText(x.Value)
	case ast.ScalarNode:
		if tk := x.GetToken(); tk != nil {
			return tk.Value
		}
	}
	return ""
}

// scalar returns a scalar value's text with ${VAR}s expanded; a mapping
// or a list is a type error against want ("an integer").
func (d *decoder) scalar(n ast.Node, path, want string) (string, bool) {
	switch n.(type) {
	case *ast.MappingNode, *ast.SequenceNode:
		d.typeError(n, path, want)
		return "", false
	case ast.ScalarNode, *ast.LiteralNode:
		raw := scalarText(n)
		if templatePath(path) {
			d.findPlaceholders(n, raw, path)
		}
		return d.expand(raw, n, path)
	}
	d.typeError(n, path, want)
	return "", false
}

// typeError reports a value of the wrong shape.
func (d *decoder) typeError(n ast.Node, path, want string) {
	var got string
	switch n.(type) {
	case *ast.MappingNode:
		got = "a mapping"
	case *ast.SequenceNode:
		got = "a list"
	default:
		got = quote(scalarText(n))
	}
	if path == "" {
		path = "the spec"
	}
	d.errorf(posOf(n), "", "%s: expected %s, got %s", path, want, got)
}

// duration parses a Go duration ("1s", "500ms", "2m") or a bare number of
// seconds; negative durations are refused.
func (d *decoder) duration(n ast.Node, path string) (time.Duration, bool) {
	s, ok := d.scalar(n, path, "a duration")
	if !ok {
		return 0, false
	}
	dur, err := parseDuration(s)
	if err != nil {
		d.errorf(posOf(n), "", "%s: invalid duration %s (want e.g. \"500ms\", \"2s\", \"1m\", or a number of seconds)", path, d.shown(path, quote(s)))
		return 0, false
	}
	if dur < 0 {
		d.errorf(posOf(n), "", "%s: must not be negative, got %s", path, d.shown(path, s))
		return 0, false
	}
	return dur, true
}

// parseDuration reads "1s"-style durations and bare (possibly fractional)
// numbers of seconds.
func parseDuration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || math.Abs(f) > float64(math.MaxInt64/int64(time.Second)) {
			return 0, fmt.Errorf("out of range")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	return time.ParseDuration(s)
}

// expand replaces ${VAR} and ${VAR:-default} in s with the environment's
// values and $$ with $; any other $ is kept. A missing variable without a
// default, and any variable tenax sets for the commands it runs
// (setWhenRun), are errors at their position.
func (d *decoder) expand(s string, n ast.Node, path string) (string, bool) {
	if !strings.Contains(s, "$") {
		return s, true
	}
	if strings.Contains(s, "${") {
		d.written[path] = s
	}
	var b strings.Builder
	ok := true
	for i := 0; i < len(s); {
		c := s[i]
		if c != '$' || i+1 == len(s) {
			b.WriteByte(c)
			i++
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i += 2
			continue
		case '{':
		default:
			b.WriteByte('$')
			i++
			continue
		}
		end := strings.IndexByte(s[i+2:], '}')
		if end < 0 {
			d.errorf(varPos(n, s, i), "", "%s: unterminated ${ (write $$ for a literal $)", path)
			return "", false
		}
		expr := s[i+2 : i+2+end]
		name, def, hasDef := strings.Cut(expr, ":-")
		if !validVarName(name) {
			d.errorf(varPos(n, s, i), "", "%s: invalid variable name %s in ${%s} (write $$ for a literal $)", path, quote(name), quoteBare(expr))
			ok = false
		} else {
			val, found := d.env(name)
			switch {
			case setWhenRun(name):
				// Set or not, defaulted or not, it would be frozen into
				// the spec: a value in tenax's own environment is another
				// command's (tenax fix run from inside a fixer), stale.
				d.errorf(varPos(n, s, i), "", "%s: ${%s} is expanded when the spec is read, but tenax sets %s only in the environment of the command it runs: write $${%s} so that the command's shell reads it", path, name, name, name)
				ok = false
			case hasDef && val == "":
				val = def
			case !found:
				d.errorf(varPos(n, s, i), "", "%s: environment variable %s is not set (export it, or write ${%s:-default})", path, name, name)
				ok = false
			}
			d.expanded = append(d.expanded, expansion{path: path, name: name, value: val})
			b.WriteString(val)
		}
		i += 2 + end + 1
	}
	return b.String(), ok
}

// setWhenRun reports whether tenax sets the variable name in the
// environment of a command it runs: an exec task's TENAX_IDX, TENAX_ATTEMPT,
// TENAX_FEEDBACK and TENAX_PREVIOUS_OUTPUT, a fixer's TENAX_ERROR_* and
// TENAX_FIX_*. In a spec it is a shell variable written as ${NAME}.
func setWhenRun(name string) bool {
	switch name {
	case "TENAX_IDX", "TENAX_ATTEMPT", "TENAX_FEEDBACK", "TENAX_PREVIOUS_OUTPUT":
		return true
	}
	return strings.HasPrefix(name, "TENAX_ERROR_") || strings.HasPrefix(name, "TENAX_FIX_")
}

// varPos is the position of the ${ at offset i of a scalar's text: exact
// for plain and simply quoted one-line scalars, the scalar's start
// otherwise.
func varPos(n ast.Node, text string, i int) pos {
	p := posOf(n)
	tk := n.GetToken()
	if tk == nil || strings.Contains(text[:i], "\n") {
		return p
	}
	switch tk.Type {
	case token.StringType:
		if tk.Origin != "" && strings.Contains(tk.Origin, "\n") {
			return p
		}
		return pos{p.line, p.col + i}
	case token.SingleQuoteType:
		if !strings.Contains(text[:i], "'") {
			return pos{p.line, p.col + 1 + i}
		}
	case token.DoubleQuoteType:
		if !strings.ContainsAny(text[:i], "\"\\") {
			return pos{p.line, p.col + 1 + i}
		}
	}
	return p
}

// validVarName accepts shell variable names: a letter or _, then letters,
// digits and _.
func validVarName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9' {
			continue
		}
		return false
	}
	return true
}

// toValue turns a YAML node into plain values for an inline JSON Schema:
// mappings become ordered objects, scalars get their YAML types, strings
// are expanded.
func (d *decoder) toValue(n ast.Node, path string, depth int) any {
	if !d.budget(n, depth) {
		return nil
	}
	n = d.resolve(n)
	switch x := n.(type) {
	case nil, *ast.NullNode:
		return nil
	case *ast.MappingNode:
		obj := object{}
		for _, e := range d.entries(x, depth) {
			key, ok := d.key(e)
			if !ok {
				continue
			}
			obj = append(obj, member{key, d.toValue(e.Value, join(path, key), depth+1)})
		}
		return obj
	case *ast.SequenceNode:
		list := make([]any, 0, len(x.Values))
		for i, item := range x.Values {
			list = append(list, d.toValue(item, fmt.Sprintf("%s[%d]", path, i), depth+1))
		}
		return list
	case *ast.IntegerNode:
		return x.Value
	case *ast.FloatNode:
		if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
			d.errorf(posOf(n), "", "%s: JSON has no NaN or infinity", path)
			return nil
		}
		return x.Value
	case *ast.BoolNode:
		return x.Value
	case *ast.InfinityNode, *ast.NanNode:
		d.errorf(posOf(n), "", "%s: JSON has no NaN or infinity", path)
		return nil
	}
	s, _ := d.scalar(n, path, "a JSON value")
	return s
}

// object is a JSON object that keeps its key order.
type object []member

type member struct {
	key   string
	value any
}

// MarshalJSON writes the members in order.
func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			b = append(b, ',')
		}
		k, err := json.Marshal(m.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(m.value)
		if err != nil {
			return nil, err
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// toYAML converts ordered objects into yaml.MapSlice, recursively.
func toYAML(v any) any {
	switch x := v.(type) {
	case object:
		out := make(yaml.MapSlice, len(x))
		for i, m := range x {
			out[i] = yaml.MapItem{Key: m.key, Value: toYAML(m.value)}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = toYAML(e)
		}
		return out
	}
	return v
}

// join appends key to a dotted path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// secretValues returns the values that must never be shown: every value
// expanded into task.api_key, task.headers or task.env, every value of a
// variable whose name says it is secret, and apiKey (the resolved
// task.api_key, a secret even when written literally). Longest first, so
// that redaction replaces a secret before any secret inside it.
func (d *decoder) secretValues(always ...string) []string {
	var out []string
	for _, v := range always {
		if v != "" {
			out = append(out, v)
		}
	}
	for _, e := range d.expanded {
		if e.value == "" {
			continue
		}
		if secretPath(e.path) || secretName(e.name) {
			out = append(out, e.value)
		}
	}
	// A value of a few characters cannot be a real secret, and scrubbing
	// it would mangle every text that happens to contain it ("x" in
	// "examples").
	out = slices.DeleteFunc(out, func(v string) bool { return len(v) < minSecretLen })
	slices.SortFunc(out, func(a, b string) int { return cmp.Or(len(b)-len(a), strings.Compare(a, b)) })
	return slices.Compact(out)
}

// secretPath reports whether a value expanded at path is a secret whatever
// its variable's name: credentials, and what is sent with a request
// (headers, the URL and its query, bodies, a command's environment), where
// a variable named CRED or AUTH holds a secret as often as one named KEY.
func secretPath(path string) bool {
	switch path {
	case "task.api_key", "task.azure_ad_token", "task.url", "task.body":
		return true
	}
	for _, p := range []string{"task.headers.", "task.env.", "task.extra_body."} {
		if strings.HasPrefix(path, p) {
			return true
		}
	}
	if strings.HasPrefix(path, "routes[") && strings.HasSuffix(path, "].api_key") {
		return true
	}
	return false
}

// urlSecrets returns the parts of the URL raw, decoded at path, that
// carry text expanded from ${VAR}: its query values and its userinfo
// (base_url: https://gw/v1?gwtoken=${GW_Q}). Whatever the variable's name,
// what a URL carries there is a credential; its scheme, host and path stay
// readable, as `tenax validate` should show them.
func (d *decoder) urlSecrets(path, raw string) []string {
	var values []string
	for _, e := range d.expanded {
		if e.path == path && e.value != "" {
			values = append(values, e.value)
		}
	}
	u, err := url.Parse(raw)
	if len(values) == 0 || err != nil {
		return nil
	}
	var parts []string
	for _, vs := range u.Query() {
		parts = append(parts, vs...)
	}
	if u.User != nil {
		parts = append(parts, u.User.Username())
		if pw, ok := u.User.Password(); ok {
			parts = append(parts, pw)
		}
	}
	var out []string
	for _, part := range parts {
		for _, v := range values {
			if part != "" && (strings.Contains(part, v) || strings.Contains(v, part)) {
				// As written in the URL, too: a value with reserved
				// characters appears escaped.
				out = append(out, part, url.QueryEscape(part))
				break
			}
		}
	}
	return out
}

// minSecretLen is the shortest value treated as a secret.
const minSecretLen = 4

// secretName reports whether a variable's name says it holds a secret.
func secretName(name string) bool {
	upper := strings.ToUpper(name)
	for _, word := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD"} {
		if strings.Contains(upper, word) {
			return true
		}
	}
	return false
}
