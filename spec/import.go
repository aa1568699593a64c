package spec

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// Shape names a config format Import reads.
type Shape string

// The shapes Import reads: the configs of the tools people bring to tenax.
const (
	// ShapeSections is a batch translator's config: top-level llm:
	// (provider, model, key, sampling), processing: (input, batches,
	// concurrency, retries, breaker) and prompt: (system, template).
	ShapeSections Shape = "llm/processing/prompt"
	// ShapeAgents is a multi-agent tool's config: agents.<name> with the
	// model's settings and a batch_processing: mapping (batches, delays,
	// concurrency, retries, breaker) for running it over many files.
	ShapeAgents Shape = "agents.<name>.batch_processing"
)

// ImportOptions are Import's settings; the zero value imports the only
// agent, or the one with batch_processing, and leaves relative paths as
// written.
type ImportOptions struct {
	// Agent is the agents.<name> to import from a ShapeAgents config; ""
	// is the one with batch_processing (or the only one).
	Agent string
	// SourceDir and SpecDir are the imported file's directory and the
	// written spec's: a relative input path is rewritten so that it names
	// the same file from SpecDir (a spec's paths are relative to the spec).
	// Either "" leaves paths as written.
	SourceDir, SpecDir string
}

// ImportLine is what one key of the imported file became.
type ImportLine struct {
	// Line and Col are the key's place in the imported file.
	Line, Col int
	// From is the key's dotted path in the imported file, Value its value
	// as written (a list as [a, b]).
	From, Value string
	// To is the spec key it became and ToValue its value there; To is ""
	// when the key has no equivalent, or needs none (Note says which).
	To, ToValue string
	// Note says what changed on the way, or why nothing was carried over.
	Note string
}

// String formats the line as `import` prints it:
// `processing.max_retries: 3 → retry.max_attempts: 4 (why)`, or
// `… → no equivalent: why`.
func (l ImportLine) String() string {
	to := "no equivalent"
	if l.To != "" {
		to = l.To + ": " + l.ToValue
	}
	switch {
	case l.To == "" && strings.HasPrefix(l.Note, "nothing to set"):
		return fmt.Sprintf("%s: %s → %s", l.From, l.Value, l.Note)
	case l.From == "":
		return fmt.Sprintf("→ %s (%s)", to, l.Note)
	case l.To == "" && l.Note != "":
		return fmt.Sprintf("%s: %s → %s: %s", l.From, l.Value, to, l.Note)
	case l.Note != "":
		return fmt.Sprintf("%s: %s → %s (%s)", l.From, l.Value, to, l.Note)
	}
	return fmt.Sprintf("%s: %s → %s", l.From, l.Value, to)
}

// Imported is a spec made from another tool's config.
type Imported struct {
	// Shape is the config's shape.
	Shape Shape
	// YAML is the spec, keys in the order of a spec's documentation.
	YAML []byte
	// Lines says, for every key of the config in file order, what it
	// became.
	Lines []ImportLine
}

// Import turns another tool's config (name is its file's name, for
// errors) into a job spec, key by key: every key of the config gets an
// ImportLine that says what it became, with its value converted (a
// retry count to an attempt count, seconds to a duration, a {name}
// placeholder to {{.name}}, a literal API key to ${VAR}), or why it has no
// equivalent. The keys of the tools' own batch settings are those of the
// "did you mean" table of unknown keys (docs/spec.md), so a key means the
// same to Import as to Load.
//
// A file that is not YAML, or of no shape Import reads, is an error. The
// spec is not checked here: Parse it (or `tenax validate` it) for what it
// still lacks, such as an input file.
func Import(name string, data []byte, opts ImportOptions) (*Imported, error) {
	d := newDecoder(name, nil)
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	d.src = data
	tokens, ok := d.tokens(data)
	if !ok {
		return nil, d.result()
	}
	f, err := parser.Parse(tokens, 0)
	if err != nil {
		d.syntaxError(data, err)
		return nil, d.result()
	}
	var body *ast.MappingNode
	for _, doc := range f.Docs {
		if m, ok := doc.Body.(*ast.MappingNode); ok && body == nil {
			body = m
		}
	}
	if body == nil {
		return nil, &Error{File: name, Line: 1, Col: 1, Msg: "not a mapping of keys: nothing to import"}
	}
	ast.Walk(anchorCollector(d.anchors), body)
	im := &importer{d: d, opts: opts, out: &importNode{}}
	im.leaves(body, "", 0)
	if len(d.errs) > 0 {
		return nil, d.result()
	}
	if err := im.detect(name); err != nil {
		return nil, err
	}
	for _, l := range im.found {
		im.Lines = append(im.Lines, im.convert(l))
	}
	im.impliedKeys()
	out, err := yaml.MarshalWithOptions(im.out.yaml(), yaml.UseLiteralStyleIfMultiline(true), yaml.IndentSequence(true))
	if err != nil {
		return nil, fmt.Errorf("spec: writing the imported spec: %w", err)
	}
	header := fmt.Sprintf("# Imported from %s (%s) by `tenax import`.\n", filepath.Base(name), im.Shape)
	im.YAML = append([]byte(header), out...)
	return &im.Imported, nil
}

// importer holds one Import's state.
type importer struct {
	Imported
	d     *decoder
	opts  ImportOptions
	found []leaf
	agent string // the agents.<name> imported (ShapeAgents)
	out   *importNode
	// written says which spec key came from which line, to name the
	// first when a second key says the same.
	written map[string]int
}

// leaf is a scalar or list value of the imported file, at its key.
type leaf struct {
	path  string
	value string
	list  []string
	pos   pos
}

// leaves collects the scalar and list values under n, in file order.
func (im *importer) leaves(n ast.Node, path string, depth int) {
	if !im.d.budget(n, depth) {
		return
	}
	n = im.d.resolve(n)
	switch x := n.(type) {
	case *ast.MappingNode:
		for _, e := range im.d.entries(x, depth) {
			k, ok := im.d.key(e)
			if !ok {
				continue
			}
			if _, isMap := im.d.resolve(e.Value).(*ast.MappingNode); !isMap {
				im.found = append(im.found, leaf{path: join(path, k), pos: posOf(e.Key)})
			}
			im.leafValue(e.Value, join(path, k), depth+1)
		}
	}
}

// leafValue fills in the value of the leaf just found at path, or walks
// the mapping there.
func (im *importer) leafValue(n ast.Node, path string, depth int) {
	n = im.d.resolve(n)
	switch x := n.(type) {
	case *ast.MappingNode:
		im.leaves(x, path, depth)
	case *ast.SequenceNode:
		l := &im.found[len(im.found)-1]
		for _, v := range x.Values {
			l.list = append(l.list, scalarText(im.d.resolve(v)))
		}
		l.value = "[" + strings.Join(l.list, ", ") + "]"
	default:
		im.found[len(im.found)-1].value = scalarText(n)
	}
}

// detect tells the config's shape from its top-level keys and, for
// ShapeAgents, picks the agent.
func (im *importer) detect(name string) error {
	top := map[string]bool{}
	agents := []string{}
	for _, l := range im.found {
		first, rest, _ := strings.Cut(l.path, ".")
		top[first] = true
		if first == "agents" {
			if a, _, ok := strings.Cut(rest, "."); ok && !slices.Contains(agents, a) {
				agents = append(agents, a)
			}
		}
	}
	switch {
	case top["agents"]:
		im.Shape = ShapeAgents
		return im.pickAgent(name, agents)
	case top["llm"] || top["processing"] || top["prompt"]:
		im.Shape = ShapeSections
		return nil
	}
	return &Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("not a config tenax import reads: want top-level llm:, processing: and prompt: sections (%s) or agents.<name>.batch_processing (%s)", ShapeSections, ShapeAgents)}
}

// pickAgent chooses the agent to import: the one asked for, else the one
// with batch_processing, else the only one.
func (im *importer) pickAgent(name string, agents []string) error {
	if im.opts.Agent != "" {
		if !slices.Contains(agents, im.opts.Agent) {
			return &Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("no agent %q under agents (it has %s)", im.opts.Agent, strings.Join(agents, ", "))}
		}
		im.agent = im.opts.Agent
		return nil
	}
	var batched []string
	for _, a := range agents {
		for _, l := range im.found {
			if strings.HasPrefix(l.path, "agents."+a+".batch_processing.") && !slices.Contains(batched, a) {
				batched = append(batched, a)
			}
		}
	}
	switch {
	case len(batched) == 1:
		im.agent = batched[0]
	case len(agents) == 1:
		im.agent = agents[0]
	default:
		return &Error{File: name, Line: 1, Col: 1, Msg: fmt.Sprintf("agents has %s: say which to import with --agent (a spec runs one task)", strings.Join(agents, ", "))}
	}
	return nil
}

// convert says what one leaf of the config becomes, and sets it in the
// spec.
func (im *importer) convert(l leaf) ImportLine {
	line := ImportLine{Line: l.pos.line, Col: l.pos.col, From: l.path, Value: valueText(l.value)}
	key, section, ok := im.section(l.path)
	if !ok {
		line.Note = section // why the key is left out
		return line
	}
	to, value, note := im.special(section, key, l)
	if to == "" && note == "" {
		to, note = im.target(section, key)
		if to != "" {
			var valueNote string
			value, valueNote = im.value(to, l)
			note = joinNotes(valueNote, note)
		}
	}
	line.Note = note
	if to == "" || value == nil {
		return line
	}
	if first, dup := im.written[to]; dup {
		line.Note = fmt.Sprintf("%s is already set, from line %d: this one is left out", to, first)
		return line
	}
	if im.written == nil {
		im.written = map[string]int{}
	}
	im.written[to] = l.pos.line
	im.out.set(to, value)
	line.To, line.ToValue = to, valueText(value)
	return line
}

// section splits a leaf's path into the section it is in (how the shape
// names it: "llm", "processing", "prompt", "agent", "batch") and its key
// there. ok is false for a key no section of the shape holds; the
// section is then why.
func (im *importer) section(path string) (key, section string, ok bool) {
	parts := strings.Split(path, ".")
	if im.Shape == ShapeAgents {
		if parts[0] != "agents" {
			return "", "a key beside agents: tenax import reads agents." + im.agent + " only", false
		}
		if len(parts) < 3 || parts[1] != im.agent {
			return "", fmt.Sprintf("another agent: a spec runs one task (this import is of agents.%s; import this one with --agent %s)", im.agent, parts[min(1, len(parts)-1)]), false
		}
		if parts[2] == "batch_processing" && len(parts) == 4 {
			return parts[3], "batch", true
		}
		if len(parts) == 3 {
			return parts[2], "agent", true
		}
		return "", "nested deeper than the agent's own keys and its batch_processing", false
	}
	switch {
	case len(parts) == 2 && (parts[0] == "llm" || parts[0] == "processing" || parts[0] == "prompt"):
		return parts[1], parts[0], true
	case len(parts) == 1:
		return parts[0], "processing", true
	}
	return "", "nested deeper than the sections' own keys", false
}

// joinNotes joins two notes with "; ".
func joinNotes(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// durationText writes d the way a spec would: 2s, 500ms, 1m, 1m30s.
func durationText(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// valueText is a converted value as ImportLine shows it.
func valueText(v any) string {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "\n") {
			return strconv.Quote(x)
		}
		return x
	case []string:
		return "[" + strings.Join(x, ", ") + "]"
	}
	return fmt.Sprint(v)
}

// specType is the Go type of the spec key at the dotted path to; nil when
// the spec has no such key.
func specType(to string) reflect.Type {
	typ := reflect.TypeFor[Spec]()
	for part := range strings.SplitSeq(to, ".") {
		_, index := fieldsOf(typ)
		i, ok := index[part]
		if !ok {
			return nil
		}
		typ = typ.Field(i).Type
	}
	return typ
}
