package mock

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// finish is why an answer ended, named by each dialect its own way.
type finish uint8

const (
	finishStop finish = iota
	finishLength
	finishToolCalls
	finishContentFilter
	finishRefusal
)

// toolCall is a call of one of the request's tools.
type toolCall struct {
	id, name string
	args     string // JSON arguments (possibly broken by a fault)
}

// answer is a completion, good or broken by a fault.
type answer struct {
	text                           string
	refusal                        string
	calls                          []toolCall
	finish                         finish
	promptTokens, completionTokens int
}

// refusalText is what a refusing model says.
const refusalText = "I'm sorry, but I can't help with that."

// compose makes the answer the request deserves, deterministic from the
// prompt, then breaks it as the request's fault says:
//   - a tool call when the request has tools and the conversation does
//     not end with a tool's result: the forced tool (tool_choice), or the
//     first tool named in the prompt; with tool_choice "auto" only a tool
//     the prompt names is called, with "required" (OpenAI) or "any"
//     (Anthropic) the first tool when none is named. The arguments
//     conform to the tool's schema, filled from the prompt;
//   - JSON that conforms to a json_schema response format (OpenAI) or
//     output format (Anthropic);
//   - mock-json's object for a json_object response format or for
//     mock-json; the prompt itself for mock-echo.
func (s *Server) compose(x *exchange) answer {
	a := answer{finish: finishStop, promptTokens: x.promptTokens}
	schema := x.outputSchema()
	moves, agent := x.agentMove(s.cfg.Seed)
	var final []toolCall
	if out := x.outputTool(); agent && len(moves) == 0 && out != nil {
		final = x.agentOutputCall(s.cfg.Seed, out)
	}
	switch tool := x.toolToCall(); {
	case agent && len(moves) > 0:
		a.calls, a.finish = moves, finishToolCalls
	case len(final) > 0:
		a.calls, a.finish = final, finishToolCalls
	case tool != nil && !agent:
		args := mustJSON(fromSchema(tool.schema(), x.prompt, x.model))
		a.calls = []toolCall{{id: fmt.Sprintf("%s%012d", x.d.toolCallPrefix, x.seq), name: tool.name(), args: string(args)}}
		a.finish = finishToolCalls
	case schema != nil:
		a.text = string(mustJSON(fromSchema(schema, x.prompt, x.model)))
	case x.model == ModelJSON || x.req.ResponseFormat != nil && x.req.ResponseFormat.Type == "json_object":
		a.text = jsonAnswer(x.prompt)
	default:
		a.text = x.prompt
	}
	if n := len(s.cfg.Answers); n > 0 && x.fault != faultInvalidOutput {
		a.text, a.calls, a.finish = s.cfg.Answers[min(int(s.answered.Add(1))-1, n-1)], nil, finishStop
	}
	switch x.fault {
	case faultInvalidOutput:
		a = x.invalid(a, schema != nil)
	case faultTruncated:
		a = truncate(a, max(utf8.RuneCountInString(a.text+argsOf(a))/2, 1))
	case faultContentFilter:
		a.text, a.calls = string([]rune(a.text)[:utf8.RuneCountInString(a.text)/2]), nil
		a.finish = finishContentFilter
	case faultRefusal:
		a.text, a.calls, a.refusal, a.finish = "", nil, refusalText, finishRefusal
	}
	a.completionTokens = max(utf8.RuneCountInString(a.text+a.refusal+argsOf(a))/4, 1)
	if x.maxTokens > 0 && a.completionTokens > x.maxTokens {
		a = truncate(a, x.maxTokens*4)
		a.completionTokens = x.maxTokens
	}
	return a
}

// argsOf is the arguments of a's tool calls, concatenated.
func argsOf(a answer) string {
	var b strings.Builder
	for _, c := range a.calls {
		b.WriteString(c.args)
	}
	return b.String()
}

// truncate cuts a's text (or its tool call's arguments) to n runes, as
// max_tokens does: finish "length".
func truncate(a answer, n int) answer {
	cut := func(s string) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n])
		}
		return s
	}
	a.text = cut(a.text)
	if len(a.calls) > 0 {
		a.calls[0].args = cut(a.calls[0].args)
	}
	a.finish = finishLength
	return a
}

// invalid breaks a the way models break their output, differently from
// one request to the next (seq), so that a re-ask that fails again is not
// mistaken for a stuck loop: JSON that does not parse (a trailing comma,
// finished normally: a model's slip, not a cut, which is what the
// Truncated fault and max_tokens produce), or an object missing a
// required field; a refusal in prose for text. A tool call whose input
// the dialect sends as an object (Anthropic's tool_use) always misses a
// field: the API parses the input, so it cannot carry text that does not
// parse — which it would flatten to the same {} on every request, and the
// heal loop would see its re-asks change nothing.
func (x *exchange) invalid(a answer, structured bool) answer {
	switch {
	case len(a.calls) > 0 && x.seq%2 == 1 && !x.d.objectToolInput:
		a.calls[0].args = unparsable(a.calls[0].args, x.seq)
	case len(a.calls) > 0:
		a.calls[0].args = dropRequired(a.calls[0].args, x.seq)
	case structured && x.seq%2 == 1:
		a.text = unparsable(a.text, x.seq)
	case structured:
		a.text = dropRequired(a.text, x.seq)
	default:
		a.text = invalidAnswer(x.model, x.prompt, x.seq)
	}
	return a
}

// unparsable turns a JSON object into one with the request number and a
// trailing comma, which no JSON parser takes.
func unparsable(js string, seq int64) string {
	body, ok := strings.CutSuffix(strings.TrimSpace(js), "}")
	if !ok || len(body) < 2 {
		return js + ","
	}
	return body + fmt.Sprintf(`, "request": %d,}`, seq)
}

// dropRequired removes the first property of a JSON object (an object's
// properties are required in the schemas structured outputs take) and
// marks it with the request number; anything else becomes a string.
func dropRequired(js string, seq int64) string {
	var obj map[string]any
	if json.Unmarshal([]byte(js), &obj) != nil || len(obj) == 0 {
		return string(mustJSON(fmt.Sprintf("not an object (request %d)", seq)))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	delete(obj, keys[0])
	obj["request"] = seq
	return string(mustJSON(obj))
}

// jsonAnswer is mock-json's good answer.
func jsonAnswer(prompt string) string {
	return string(mustJSON(struct {
		Text   string `json:"text"`
		Length int    `json:"length"`
	}{prompt, utf8.RuneCountInString(prompt)}))
}

// invalidAnswer is a plausible but wrong answer for model, different for
// each request (seq).
func invalidAnswer(model, prompt string, seq int64) string {
	if model != ModelJSON {
		return fmt.Sprintf("I'm sorry, but I can't help with that (request %d).", seq)
	}
	if seq%2 == 0 {
		// "length" is missing.
		return string(mustJSON(map[string]any{"text": prompt, "request": seq}))
	}
	return unparsable(jsonAnswer(prompt), seq)
}

// outputSchema is the JSON schema the request's answer must conform to,
// nil if none.
func (x *exchange) outputSchema() json.RawMessage {
	if rf := x.req.ResponseFormat; rf != nil && rf.Type == "json_schema" && rf.JSONSchema != nil {
		if len(rf.JSONSchema.Schema) == 0 {
			return json.RawMessage(`{}`)
		}
		return rf.JSONSchema.Schema
	}
	if f := anthropicFormat(x.req); f != nil && f.Type == "json_schema" {
		return f.Schema
	}
	return nil
}

// toolChoice is the request's tool_choice in either dialect: mode is
// auto, none, required (OpenAI) / any (Anthropic) or a forced tool.
func (x *exchange) toolChoice() (mode, name string) {
	raw := x.req.ToolChoice
	if len(raw) == 0 || string(raw) == "null" {
		return "auto", ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, ""
	}
	var v struct {
		Type     string `json:"type"`
		Name     string `json:"name"`
		Function *struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	if json.Unmarshal(raw, &v) != nil {
		return "auto", ""
	}
	switch {
	case v.Function != nil:
		return "tool", v.Function.Name
	case v.Type == "tool":
		return "tool", v.Name
	}
	return v.Type, ""
}

// forcedTool is the tool the request's tool_choice forces, "" if none.
func forcedTool(x *exchange) string {
	_, name := x.toolChoice()
	return name
}

func toolByName(tools []wireTool, name string) *wireTool {
	for i := range tools {
		if tools[i].name() == name {
			return &tools[i]
		}
	}
	return nil
}

// toolToCall picks the tool the answer calls, nil for an answer in text.
func (x *exchange) toolToCall() *wireTool {
	tools := x.req.Tools
	if len(tools) == 0 {
		return nil
	}
	mode, name := x.toolChoice()
	switch mode {
	case "none":
		return nil
	case "tool":
		// A forced tool is called whatever the conversation holds, as the
		// real APIs do: a re-ask that answers the last call with a
		// tool_result still gets a tool call back.
		return toolByName(tools, name)
	}
	if x.afterToolResult() {
		return nil
	}
	lower := strings.ToLower(x.prompt)
	for i := range tools {
		if n := tools[i].name(); n != "" && strings.Contains(lower, strings.ToLower(n)) {
			return &tools[i]
		}
	}
	if mode == "required" || mode == "any" {
		return &tools[0]
	}
	return nil
}

// afterToolResult reports a conversation that ends with a tool's result:
// the model answers it in text.
func (x *exchange) afterToolResult() bool {
	msgs := *x.req.Messages
	last := msgs[len(msgs)-1]
	if last.Role == "tool" {
		return true
	}
	for _, b := range blocks(last.Content) {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// fromSchema returns a value that conforms to the JSON schema raw, filled
// from the prompt: strings are the prompt, numbers its length in runes
// (within the schema's bounds), booleans true, enums and consts their
// first value, arrays hold minItems items (at least one), objects every
// property and every required name. A required name the schema does not
// describe (`required: [text]` without `properties`, which both APIs
// take) gets what model would answer for it unasked — mock-json's "text"
// and "length" — or the prompt: a real model fills the names it is told
// are required, so an object without them is not an answer a model gives.
func fromSchema(raw json.RawMessage, prompt, model string) any {
	var root map[string]any
	if json.Unmarshal(raw, &root) != nil {
		return prompt
	}
	f := filler{root: root, prompt: prompt, budget: maxSchemaValues}
	if model == ModelJSON {
		_ = json.Unmarshal([]byte(jsonAnswer(prompt)), &f.free)
	}
	return f.value(root, 0)
}

// maxSchemaValues bounds the values fromSchema builds, so that a schema
// with a huge minItems or deep recursion gets a small answer.
const maxSchemaValues = 1000

// filler builds one value from a schema for fromSchema.
type filler struct {
	root   map[string]any
	prompt string
	free   map[string]any // what the model answers unasked, by name
	budget int            // values left to build
}

func (f *filler) value(s map[string]any, depth int) any {
	if depth > 16 || s == nil || f.budget <= 0 {
		return nil
	}
	f.budget--
	if ref, ok := s["$ref"].(string); ok {
		return f.value(resolveRef(f.root, ref), depth+1)
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	for _, k := range []string{"anyOf", "oneOf", "allOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			if sub, ok := alts[0].(map[string]any); ok {
				return f.value(sub, depth+1)
			}
		}
	}
	typ := schemaType(s)
	n := float64(utf8.RuneCountInString(f.prompt))
	switch typ {
	case "object":
		return f.object(s, depth)
	case "array":
		items, _ := s["items"].(map[string]any)
		count := 1
		if m, ok := s["minItems"].(float64); ok && m > 1 {
			count = int(min(m, float64(f.budget)))
		}
		arr := make([]any, count)
		for i := range arr {
			arr[i] = f.value(items, depth+1)
		}
		return arr
	case "integer", "number":
		if lo, ok := s["minimum"].(float64); ok {
			n = max(n, lo)
		}
		if hi, ok := s["maximum"].(float64); ok {
			n = min(n, hi)
		}
		return n
	case "boolean":
		return true
	case "null":
		return nil
	}
	return f.prompt
}

// schemaType is the type a schema node describes: its "type", the first
// that is not null of a list of types, or an object when it has
// properties or required.
func schemaType(s map[string]any) string {
	typ, _ := s["type"].(string)
	if list, ok := s["type"].([]any); ok {
		for _, t := range list {
			if t, ok := t.(string); ok && t != "null" {
				typ = t
				break
			}
		}
	}
	if typ == "" {
		if _, ok := s["properties"]; ok {
			typ = "object"
		} else if _, ok := s["required"]; ok {
			typ = "object"
		}
	}
	return typ
}

// object fills every property of an object schema, and each required
// name it does not describe with what the model answers unasked.
func (f *filler) object(s map[string]any, depth int) map[string]any {
	obj := map[string]any{}
	props, _ := s["properties"].(map[string]any)
	for name, p := range props {
		sub, _ := p.(map[string]any)
		obj[name] = f.value(sub, depth+1)
	}
	required, _ := s["required"].([]any)
	for _, r := range required {
		name, ok := r.(string)
		if _, done := obj[name]; !ok || done {
			continue
		}
		if v, ok := f.free[name]; ok {
			obj[name] = v
		} else {
			obj[name] = f.prompt
		}
	}
	return obj
}

// resolveRef follows a local reference such as "#/$defs/item".
func resolveRef(root map[string]any, ref string) map[string]any {
	path, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil
	}
	var cur any = root
	for _, part := range strings.Split(path, "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")]
	}
	m, _ := cur.(map[string]any)
	return m
}
