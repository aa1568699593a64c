package llm

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The ways a Task asks the provider for JSON (see Structured).
const (
	// ModeText asks for nothing: the output is text.
	ModeText = "text"
	// ModeJSONSchema is OpenAI's response_format json_schema with strict
	// true: the provider's decoder can only produce what the schema allows.
	ModeJSONSchema = "json_schema"
	// ModeJSONObject is OpenAI's response_format json_object: any JSON
	// object. The API refuses it unless a message says "JSON", so the Task
	// adds "Answer with JSON." to the system prompt when none does.
	ModeJSONObject = "json_object"
	// ModeOutputConfig is Anthropic's structured output: output_config's
	// format of type json_schema.
	ModeOutputConfig = "output_config"
	// ModeTool is Anthropic's older way: one tool whose input schema is
	// the schema, and tool_choice forcing the model to call it; the call's
	// input is the output.
	ModeTool = "tool"
	// ModePrompt relies on the prompt alone to ask for JSON; the answer is
	// still parsed and validated.
	ModePrompt = "prompt"
)

// Structured says how a Task asks for JSON output, and why: what `tenax
// validate` prints. Whatever the mode, the output is still validated
// locally, and the heal loop re-asks for what the schema sent could not
// express.
type Structured struct {
	// Mode is one of ModeText, ModeJSONSchema, ModeJSONObject,
	// ModeOutputConfig, ModeTool, ModePrompt.
	Mode string
	// Why explains the choice in a sentence.
	Why string
}

// schemaDoc is a JSON Schema decoded for inspection and sending.
type schemaDoc map[string]any

// decodeSchema decodes a JSON Schema document; a schema that is not a JSON
// object is refused.
func decodeSchema(raw json.RawMessage) (schemaDoc, error) {
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("llm: schema is not a JSON object: %w", err)
	}
	return doc, nil
}

// sendable returns the schema as sent to a provider: without "$schema"
// and "$id", which name the document for a local validator and which a
// provider's decoder may refuse.
func (d schemaDoc) sendable() map[string]any {
	out := make(map[string]any, len(d))
	for k, v := range d {
		if k != "$schema" && k != "$id" {
			out[k] = v
		}
	}
	return out
}

// subset is what a provider's structured output accepts of JSON Schema. A
// schema outside it is not sent as structured output (the provider would
// refuse it with a 400 on every item): tenax falls back to a weaker mode
// and validates locally.
type subset struct {
	// keywords are the schema keywords it accepts.
	keywords []string
	// requireAll: every property of an object must be required.
	requireAll bool
	// maxMinItems is the largest minItems accepted; -1 for any.
	maxMinItems float64
}

var (
	// openAIStrict is OpenAI's strict mode subset (Structured Outputs,
	// "Supported schemas").
	openAIStrict = subset{
		keywords: []string{
			"$schema", "$id", "$ref", "$defs", "definitions", "title", "description",
			"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf",
			"pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf",
			"minItems", "maxItems",
		},
		requireAll:  true,
		maxMinItems: -1,
	}
	// anthropicSubset is Anthropic's structured outputs subset ("JSON
	// Schema limitations"): no numeric or string length constraints,
	// minItems 0 or 1.
	anthropicSubset = subset{
		keywords: []string{
			"$schema", "$id", "$ref", "$defs", "definitions", "title", "description", "default",
			"type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "allOf",
			"pattern", "format", "minItems",
		},
		maxMinItems: 1,
	}
)

// maxStrictDepth is OpenAI's limit on object nesting in strict mode.
const maxStrictDepth = 10

// fitProblem says why doc does not fit sub, "" when it does.
func fitProblem(doc schemaDoc, sub subset) string {
	if doc["type"] != "object" {
		return "the schema's root is not {\"type\": \"object\"}"
	}
	if _, ok := doc["anyOf"]; ok {
		return "the schema's root is an anyOf"
	}
	if p := walkSchema(map[string]any(doc), "#", 0, sub); p != "" {
		return "schema " + p
	}
	return ""
}

func walkSchema(node map[string]any, at string, depth int, sub subset) string {
	for _, k := range slices.Sorted(maps.Keys(node)) {
		if !slices.Contains(sub.keywords, k) {
			return fmt.Sprintf("%s uses %q, which the provider's structured output does not support", at, k)
		}
	}
	if k, ok := node["minItems"].(float64); ok && sub.maxMinItems >= 0 && k > sub.maxMinItems {
		return fmt.Sprintf("%s has minItems %v (at most %v is supported)", at, k, sub.maxMinItems)
	}
	if isObject(node) {
		depth++
		if p := checkObject(node, at, depth, sub); p != "" {
			return p
		}
		props, _ := node["properties"].(map[string]any)
		if p := walkNamed(props, at+"/properties", depth, sub); p != "" {
			return p
		}
	}
	if child, ok := node["items"].(map[string]any); ok {
		if p := walkSchema(child, at+"/items", depth, sub); p != "" {
			return p
		}
	}
	for _, k := range []string{"anyOf", "allOf"} {
		list, _ := node[k].([]any)
		for i, s := range list {
			child, ok := s.(map[string]any)
			if !ok {
				return fmt.Sprintf("%s/%s/%d is not a schema object", at, k, i)
			}
			if p := walkSchema(child, fmt.Sprintf("%s/%s/%d", at, k, i), depth, sub); p != "" {
				return p
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		defs, _ := node[k].(map[string]any)
		if p := walkNamed(defs, at+"/"+k, depth, sub); p != "" {
			return p
		}
	}
	return ""
}

// checkObject checks an object node, depth objects deep, against the
// subset's rules for objects: how deep, additionalProperties false, and
// in strict mode every property required.
func checkObject(node map[string]any, at string, depth int, sub subset) string {
	if sub.requireAll && depth > maxStrictDepth {
		return fmt.Sprintf("%s nests objects more than %d deep", at, maxStrictDepth)
	}
	if ap, ok := node["additionalProperties"]; !ok || ap != false {
		return fmt.Sprintf("%s is an object without \"additionalProperties\": false", at)
	}
	if !sub.requireAll {
		return ""
	}
	props, _ := node["properties"].(map[string]any)
	req, _ := node["required"].([]any)
	for name := range props {
		if !slices.Contains(req, any(name)) {
			return fmt.Sprintf("%s/properties/%s is not in \"required\" (strict mode requires every property; make it nullable instead)", at, name)
		}
	}
	return ""
}

// walkNamed walks each schema of a name → schema map (properties, $defs),
// in name order; at is the map's path.
func walkNamed(m map[string]any, at string, depth int, sub subset) string {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		child, ok := m[name].(map[string]any)
		if !ok {
			return fmt.Sprintf("%s/%s is not a schema object", at, name)
		}
		if p := walkSchema(child, at+"/"+name, depth, sub); p != "" {
			return p
		}
	}
	return ""
}

// isObject reports whether a schema node describes an object.
func isObject(node map[string]any) bool {
	switch t := node["type"].(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	_, ok := node["properties"]
	return ok
}

// anthropicOutputConfigModel reports whether an Anthropic model takes
// output_config's JSON schema format: the Claude 4.5 generation and later,
// and Opus 4.1. Older models (Claude 3.x, Sonnet 4, Opus 4) get a forced
// tool instead.
func anthropicOutputConfigModel(model string) bool {
	for _, old := range []string{"claude-3", "claude-2", "claude-instant"} {
		if strings.HasPrefix(model, old) {
			return false
		}
	}
	for _, old := range []string{"claude-sonnet-4", "claude-opus-4"} {
		if model == old || strings.HasPrefix(model, old+"-2") {
			return false // claude-sonnet-4-20250514, not claude-sonnet-4-5
		}
	}
	return true
}

// StructuredFor says how a Task built from cfg would ask for JSON, and
// why, without building it (no API key needed): what `tenax validate`
// prints.
func StructuredFor(cfg Config) (Structured, error) {
	wire := ProviderOpenAI
	switch cfg.Provider {
	case ProviderAnthropic, ProviderBedrock:
		wire = cfg.Provider
	case ProviderGemini, ProviderVertex:
		wire = ProviderGemini
	}
	if cfg.Provider == ProviderMock {
		cfg.Model = cmpOr(cfg.Model, "mock-echo")
	}
	cfg.Output = cmpOr(cfg.Output, OutputText)
	var schema schemaDoc
	if len(cfg.Schema) > 0 {
		var err error
		if schema, err = decodeSchema(cfg.Schema); err != nil {
			return Structured{}, err
		}
	}
	return chooseStructured(cfg, wire, schema), nil
}

// chooseStructured decides how cfg asks for JSON; cfg has its defaults.
func chooseStructured(cfg Config, wire string, schema schemaDoc) Structured {
	if cfg.Output != OutputJSON {
		return Structured{ModeText, "output is text"}
	}
	if wire == ProviderBedrock {
		return bedrockStructured(schema)
	}
	if wire == ProviderGemini {
		return geminiStructured(schema)
	}
	if wire == ProviderAnthropic {
		if schema == nil {
			return Structured{ModePrompt, "Anthropic has no JSON mode without a schema: the prompt must ask for JSON (validate.json_schema would be sent as structured output)"}
		}
		if !anthropicOutputConfigModel(cfg.Model) {
			if cfg.ThinkingBudget > 0 {
				return Structured{ModePrompt, fmt.Sprintf("%s predates output_config, and a forced tool cannot be combined with extended thinking", cfg.Model)}
			}
			return Structured{ModeTool, fmt.Sprintf("%s predates output_config: the schema is sent as a tool the model must call", cfg.Model)}
		}
		if p := fitProblem(schema, anthropicSubset); p != "" {
			if cfg.ThinkingBudget > 0 {
				return Structured{ModePrompt, p + "; a forced tool cannot be combined with extended thinking"}
			}
			return Structured{ModeTool, p + ": the schema is sent as a tool the model must call instead of output_config"}
		}
		return Structured{ModeOutputConfig, "validate.json_schema fits Anthropic's structured outputs: sent as output_config.format"}
	}
	if schema == nil {
		return Structured{ModeJSONObject, "output is json and there is no validate.json_schema: response_format json_object"}
	}
	if p := fitProblem(schema, openAIStrict); p != "" {
		return Structured{ModeJSONObject, p + ": response_format json_object instead of a strict json_schema"}
	}
	return Structured{ModeJSONSchema, "validate.json_schema fits OpenAI's strict subset: response_format json_schema, strict"}
}

// mentionsJSON reports whether any message says "json", which OpenAI's
// json_object mode requires.
func mentionsJSON(msgs []Message) bool {
	for _, m := range msgs {
		if indexFold(m.Content, "json") {
			return true
		}
	}
	return false
}

// indexFold reports whether s contains the ASCII lower-case word w,
// ignoring ASCII case, without allocating.
func indexFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		j := 0
		for ; j < len(w); j++ {
			c := s[i+j]
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			if c != w[j] {
				break
			}
		}
		if j == len(w) {
			return true
		}
	}
	return false
}

// jsonInstruction is added to the system prompt under ModeJSONObject when
// no message says "JSON".
const jsonInstruction = "Answer with JSON."
