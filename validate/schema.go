package validate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// maxDetails caps Error.Details: a model fixes its answer from the first
// violations, and a wrong root type can produce hundreds.
const maxDetails = 20

// Schema validates outputs against a compiled JSON Schema. It is immutable
// and safe for concurrent use.
type Schema struct {
	name   string // what messages call the schema
	schema *jsonschema.Schema
}

// JSONSchema compiles schema, a JSON Schema document. name locates it: it
// appears in error messages, and relative "$ref"s resolve against it (a
// file path or URL; "" means "schema.json"). The draft is the one the
// schema's "$schema" declares, 2020-12 when it declares none.
func JSONSchema(schema []byte, name string) (*Schema, error) {
	if name == "" {
		name = "schema.json"
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("validate: schema %s is not JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(name, doc); err != nil {
		return nil, fmt.Errorf("validate: schema %s: %w", name, err)
	}
	compiled, err := c.Compile(name)
	if err != nil {
		return nil, fmt.Errorf("validate: schema %s: %w", name, err)
	}
	return &Schema{name: name, schema: compiled}, nil
}

// Named returns a copy of s whose messages call the schema name (a path
// relative to the spec, "the inline schema") rather than the name it was
// compiled under, which "$ref"s resolve against and which may be a local
// absolute path that heal feedback must not send to a provider.
func (s *Schema) Named(name string) *Schema {
	n := *s
	n.name = name
	return &n
}

// JSONSchemaFile compiles the JSON Schema in the file at path; relative
// "$ref"s resolve against path.
func JSONSchemaFile(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("validate: %w", err)
	}
	return JSONSchema(data, path)
}

// Validate reports whether output satisfies the schema. A JSON string
// output is validated as the JSON document it holds, after stripping a
// Markdown code fence; see the package documentation.
func (s *Schema) Validate(_ context.Context, output json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(output))
	if err != nil {
		return &Error{Validator: KindJSONSchema, Message: "output is not JSON: " + err.Error()}
	}
	text, isString := v.(string)
	if !isString {
		return s.check(v)
	}
	embedded, parseErr := embeddedJSON(text)
	if parseErr != nil {
		if s.schema.Validate(text) == nil {
			return nil
		}
		return &Error{Validator: KindJSONSchema, Message: "output is not JSON: " + parseErr.Error()}
	}
	err = s.check(embedded)
	if err != nil && s.schema.Validate(text) == nil {
		// The schema wants a string, and the text is one.
		return nil
	}
	return err
}

// check validates v and turns a violation into an *Error.
func (s *Schema) check(v any) error {
	err := s.schema.Validate(v)
	if err == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		// Not a violation: the validator itself failed (an invalid
		// instance type cannot come from JSON; this is defensive).
		return fmt.Errorf("validate: schema %s: %w", s.name, err)
	}
	return &Error{
		Validator: KindJSONSchema,
		Message:   "output does not match schema " + s.name,
		Details:   Violations(ve),
	}
}

// Violations flattens ve's tree to its leaves, the violations a fix can
// address ("at '/es': missing property 'es'"), sorted, without duplicates
// (the branches of an anyOf often repeat one), capped at 20 and a line
// saying how many more. The spec package explains a schema that breaks
// the JSON Schema rules with it too.
func Violations(ve *jsonschema.ValidationError) []string {
	p := message.NewPrinter(language.English)
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			out = append(out, "at "+instancePath(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(p))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) > maxDetails {
		rest := len(out) - maxDetails
		out = append(out[:maxDetails:maxDetails], "and "+strconv.Itoa(rest)+" more")
	}
	return out
}

// instancePath renders a location as a quoted JSON Pointer, "root" for the
// document itself.
func instancePath(tokens []string) string {
	if len(tokens) == 0 {
		return "root"
	}
	var b strings.Builder
	b.WriteByte('\'')
	for _, tok := range tokens {
		b.WriteByte('/')
		if strings.ContainsAny(tok, "~/") {
			tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
		}
		b.WriteString(tok)
	}
	b.WriteByte('\'')
	return b.String()
}

// embeddedJSON decodes the JSON document held in text: the whole text
// when it parses, otherwise the content of its first Markdown code fence
// (```json … ``` or ``` … ```), which is how models wrap JSON answers. The
// error is the parse error of the whole text when there is no fence.
func embeddedJSON(text string) (any, error) {
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(text))
	if err == nil {
		return v, nil
	}
	fenced, ok := fencedBlock(text)
	if !ok {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(strings.NewReader(fenced))
}

// fencedBlock returns the content of the first ``` fence in text. The
// opening fence's info string (json, JSON, jsonc…) is skipped; a missing
// closing fence takes the rest of the text, as a cut-off answer has none.
func fencedBlock(text string) (string, bool) {
	start := strings.Index(text, "```")
	if start < 0 {
		return "", false
	}
	rest := text[start+3:]
	nl := strings.IndexByte(rest, '\n')
	if nl < 0 {
		return "", false
	}
	body := rest[nl+1:]
	if end := strings.Index(body, "```"); end >= 0 {
		body = body[:end]
	}
	return body, true
}
