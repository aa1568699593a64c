package validate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

const translationSchema = `{
  "type": "object",
  "required": ["es"],
  "properties": {
    "es": {"type": "string", "minLength": 1},
    "items": {"type": "array", "items": {"type": "object", "properties": {"price": {"type": "number"}}}},
    "a/b~c": {"type": "integer"}
  },
  "additionalProperties": true
}`

// textOutput returns s as a text output: a JSON string.
func textOutput(s string) json.RawMessage {
	b, err := json.Marshal(s)
	if err != nil {
		panic(err)
	}
	return b
}

func mustSchema(t *testing.T, schema string) *Schema {
	t.Helper()
	s, err := JSONSchema([]byte(schema), "translation.json")
	if err != nil {
		t.Fatalf("JSONSchema: %v", err)
	}
	return s
}

// asValidationError returns err as an *Error, failing the test if it is not one.
func asValidationError(t *testing.T, err error) *Error {
	t.Helper()
	var verr *Error
	if !errors.As(err, &verr) {
		t.Fatalf("error %v (%T) is not a *validate.Error", err, err)
	}
	return verr
}

func TestJSONSchemaReportsEachFailingPath(t *testing.T) {
	s := mustSchema(t, translationSchema)
	tests := []struct {
		name    string
		output  json.RawMessage
		message string   // "" means the output is valid
		details []string // checked when message is set
	}{
		{name: "valid object", output: json.RawMessage(`{"es": "hola"}`)},
		{name: "valid with items", output: json.RawMessage(`{"es": "hola", "items": [{"price": 1.5}]}`)},
		{
			name:    "missing property at the root",
			output:  json.RawMessage(`{"en": "hello"}`),
			message: "output does not match schema translation.json",
			details: []string{"at root: missing property 'es'"},
		},
		{
			name:    "wrong type deep inside",
			output:  json.RawMessage(`{"es": "hola", "items": [{"price": 2}, {"price": "3 euros"}]}`),
			message: "output does not match schema translation.json",
			details: []string{"at '/items/1/price': got string, want number"},
		},
		{
			name:    "several violations sorted by path",
			output:  json.RawMessage(`{"es": "", "items": [{"price": "x"}], "a/b~c": 1.5}`),
			message: "output does not match schema translation.json",
			details: []string{
				"at '/a~1b~0c': got number, want integer",
				"at '/es': minLength: got 0, want 1",
				"at '/items/0/price': got string, want number",
			},
		},
		{
			name:    "wrong root type",
			output:  json.RawMessage(`[1, 2]`),
			message: "output does not match schema translation.json",
			details: []string{"at root: got array, want object"},
		},
		{name: "text holding JSON", output: textOutput(`{"es": "hola"}`)},
		{name: "text holding fenced JSON", output: textOutput("```json\n{\"es\": \"hola\"}\n```")},
		{name: "text with prose around a fence", output: textOutput("Here it is:\n```\n{\"es\": \"hola\"}\n```\nAnything else?")},
		{name: "cut-off fence without its closing line", output: textOutput("```json\n{\"es\": \"hola\"}\n")},
		{
			name:    "text holding fenced JSON that violates the schema",
			output:  textOutput("```json\n{\"es\": 5}\n```"),
			message: "output does not match schema translation.json",
			details: []string{"at '/es': got number, want string"},
		},
		{
			name:    "text that is not JSON",
			output:  textOutput("Hola"),
			message: "output is not JSON: invalid character 'H' looking for beginning of value",
		},
		{
			name:    "text holding truncated JSON",
			output:  textOutput(`{"es": "ho`),
			message: "output is not JSON: unexpected EOF",
		},
		{
			name:    "record output that is not JSON",
			output:  json.RawMessage(`{"es": `),
			message: "output is not JSON: unexpected EOF",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(context.Background(), tt.output)
			if tt.message == "" {
				if err != nil {
					t.Fatalf("Validate(%s) = %v, want valid", tt.output, err)
				}
				return
			}
			verr := asValidationError(t, err)
			if verr.Validator != KindJSONSchema {
				t.Errorf("Validator = %q, want %q", verr.Validator, KindJSONSchema)
			}
			if verr.Message != tt.message {
				t.Errorf("Message = %q, want %q", verr.Message, tt.message)
			}
			if !slices.Equal(verr.Details, tt.details) {
				t.Errorf("Details =\n\t%q\nwant\n\t%q", verr.Details, tt.details)
			}
			want := tt.message
			if len(tt.details) > 0 {
				want += ": " + strings.Join(tt.details, "; ")
			}
			if got := err.Error(); got != want {
				t.Errorf("Error() = %q, want %q", got, want)
			}
		})
	}
}

func TestJSONSchemaOfTypeStringAcceptsPlainText(t *testing.T) {
	s := mustSchema(t, `{"type": "string", "maxLength": 10}`)
	for _, text := range []string{"Hola", "42", `"quoted"`} {
		if err := s.Validate(context.Background(), textOutput(text)); err != nil {
			t.Errorf("Validate(%q) = %v, want valid: the schema accepts the text itself", text, err)
		}
	}
	err := s.Validate(context.Background(), textOutput("far too long for the schema"))
	if err == nil {
		t.Fatal("Validate accepted a text longer than maxLength")
	}
	asValidationError(t, err)
}

func TestJSONSchemaCapsDetails(t *testing.T) {
	s := mustSchema(t, `{"type": "array", "items": {"type": "string"}}`)
	nums := make([]int, 30)
	for i := range nums {
		nums[i] = i
	}
	output, _ := json.Marshal(nums)
	verr := asValidationError(t, s.Validate(context.Background(), output))
	if len(verr.Details) != maxDetails+1 {
		t.Fatalf("got %d details, want %d and a count of the rest: %q", len(verr.Details), maxDetails+1, verr.Details)
	}
	if last := verr.Details[maxDetails]; last != "and 10 more" {
		t.Errorf("last detail = %q, want %q", last, "and 10 more")
	}
	if first := verr.Details[0]; first != "at '/0': got number, want string" {
		t.Errorf("first detail = %q, want the violation at /0", first)
	}
}

func TestJSONSchemaDeduplicatesRepeatedViolations(t *testing.T) {
	s := mustSchema(t, `{"anyOf": [{"required": ["es"]}, {"required": ["es"], "type": "object"}]}`)
	verr := asValidationError(t, s.Validate(context.Background(), json.RawMessage(`{}`)))
	want := []string{"at root: missing property 'es'"}
	if !slices.Equal(verr.Details, want) {
		t.Errorf("Details = %q, want %q", verr.Details, want)
	}
}

func TestJSONSchemaRefusesBadSchemas(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"not JSON", `{"type": `, "validate: schema bad.json is not JSON"},
		{"invalid keyword value", `{"type": 5}`, "validate: schema bad.json"},
		{"unresolvable ref", `{"$ref": "#/$defs/missing"}`, "validate: schema bad.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := JSONSchema([]byte(tt.schema), "bad.json")
			if err == nil {
				t.Fatalf("JSONSchema(%s) compiled, want an error", tt.schema)
			}
			if s != nil {
				t.Errorf("JSONSchema returned a schema with its error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error = %q, want it to start with %q", err, tt.want)
			}
		})
	}
}

func TestJSONSchemaFileResolvesRelativeRefs(t *testing.T) {
	s, err := JSONSchemaFile("testdata/schemas/order.json")
	if err != nil {
		t.Fatalf("JSONSchemaFile: %v", err)
	}
	ctx := context.Background()
	if err := s.Validate(ctx, json.RawMessage(`{"id": "o1", "items": [{"name": "tea", "price": 3}]}`)); err != nil {
		t.Errorf("valid order rejected: %v", err)
	}
	verr := asValidationError(t, s.Validate(ctx, json.RawMessage(`{"id": "o1", "items": [{"name": "tea", "price": -1}]}`)))
	want := []string{"at '/items/0/price': minimum: got -1, want 0"}
	if !slices.Equal(verr.Details, want) {
		t.Errorf("Details = %q, want %q (the violation inside the referenced item.json)", verr.Details, want)
	}
	if !strings.Contains(verr.Message, "testdata/schemas/order.json") {
		t.Errorf("Message = %q, want it to name the schema file", verr.Message)
	}
}

func TestJSONSchemaFileReportsMissingFile(t *testing.T) {
	_, err := JSONSchemaFile("testdata/no-such-schema.json")
	if err == nil || !strings.Contains(err.Error(), "no-such-schema.json") {
		t.Fatalf("JSONSchemaFile(missing) = %v, want an error naming the file", err)
	}
}

func TestFencedBlock(t *testing.T) {
	tests := []struct {
		text, want string
		ok         bool
	}{
		{"```json\n{}\n```", "{}\n", true},
		{"```\n[1]\n```", "[1]\n", true},
		{"intro\n```JSON\n{\"a\": 1}\n```\noutro ```x\ny```", "{\"a\": 1}\n", true},
		{"```json\n{\"a\": 1", "{\"a\": 1", true},
		{"no fence here", "", false},
		{"```json", "", false},
	}
	for _, tt := range tests {
		got, ok := fencedBlock(tt.text)
		if got != tt.want || ok != tt.ok {
			t.Errorf("fencedBlock(%q) = %q, %v; want %q, %v", tt.text, got, ok, tt.want, tt.ok)
		}
	}
}

func ExampleJSONSchema() {
	schema, err := JSONSchema([]byte(`{
		"type": "object",
		"required": ["es"],
		"properties": {"es": {"type": "string"}, "items": {"type": "array", "items": {"properties": {"price": {"type": "number"}}}}}
	}`), "schema.json")
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()

	// A model's text answer holding fenced JSON.
	good := json.RawMessage(`"` + "```json\\n{\\\"es\\\": \\\"hola\\\"}\\n```" + `"`)
	fmt.Println("good:", schema.Validate(ctx, good))

	bad := json.RawMessage(`{"items": [{"price": "3 euros"}]}`)
	var verr *Error
	if errors.As(schema.Validate(ctx, bad), &verr) {
		fmt.Println(verr.Message)
		for _, d := range verr.Details {
			fmt.Println(" ", d)
		}
	}
	// Output:
	// good: <nil>
	// output does not match schema schema.json
	//   at '/items/0/price': got string, want number
	//   at root: missing property 'es'
}
