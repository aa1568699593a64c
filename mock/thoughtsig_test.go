package mock

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// geminiAgentBody is a generateContent request with one tool: the prompt,
// then, when call is set, a model content of that functionCall part (its
// thoughtSignature sig, none when "") and the user content answering it;
// later, when set, is a user text after them (a new turn).
func geminiAgentBody(call map[string]any, sig, later string) string {
	contents := []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": "Look up tea"}}}}
	if call != nil {
		part := map[string]any{"functionCall": call}
		if sig != "" {
			part["thoughtSignature"] = sig
		}
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{part}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
				"id": call["id"], "name": call["name"], "response": map[string]any{"output": "found"}}}}})
	}
	if later != "" {
		contents = append(contents, map[string]any{"role": "model", "parts": []any{map[string]any{"text": "found it"}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"text": later}}})
	}
	return string(mustJSON(map[string]any{"contents": contents, "tools": []any{map[string]any{"functionDeclarations": []any{map[string]any{
		"name": "search", "parametersJsonSchema": json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}},"required":["q"]}`)}}}}}))
}

// firstPart is the first part of a generateContent answer's candidate.
func firstPart(t *testing.T, body []byte) (call map[string]any, sig string) {
	t.Helper()
	var out struct {
		Candidates []struct {
			Content struct {
				Parts []struct {
					FunctionCall     map[string]any `json:"functionCall"`
					ThoughtSignature string         `json:"thoughtSignature"`
				} `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if err := json.Unmarshal(body, &out); err != nil || len(out.Candidates) == 0 || len(out.Candidates[0].Content.Parts) == 0 {
		t.Fatalf("answer %s: %v; want a candidate with parts", body, err)
	}
	p := out.Candidates[0].Content.Parts[0]
	return p.FunctionCall, p.ThoughtSignature
}

// A Gemini 3 model of the mock (gemini-3-mock-agent) signs the first
// functionCall part of its answer, and refuses, as Gemini 3 does, a
// request whose current turn sends that call back without the signature
// or with another call's: 400 INVALID_ARGUMENT with the Gemini API's
// message (Vertex AI's on its path). Google's documented skip value is
// accepted in either base64 alphabet, a call of an earlier turn is not
// checked, and a model not named as Gemini 3's neither signs nor checks.
func TestGemini3MockSignsFunctionCallsAndRefusesThemBackUnsigned(t *testing.T) {
	s := New(Config{Seed: 3})
	const path = "/v1beta/models/gemini-3-mock-agent:generateContent"
	first := raw(t, s, "POST", path, "gemini", geminiAgentBody(nil, "", ""), nil)
	if first.status != 200 {
		t.Fatalf("first step: %d %s", first.status, first.body)
	}
	call, sig := firstPart(t, first.body)
	if call == nil || sig == "" {
		t.Fatalf("first step answered %s: want a functionCall part with a thoughtSignature", first.body)
	}
	name := call["name"].(string)
	missing := fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position 2. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", name)
	for _, c := range []struct {
		name, path, sig, later string
		status                 int
		message                string
	}{
		{"the signature it issued", path, sig, "", 200, ""},
		{"no signature", path, "", "", 400, missing},
		{"no signature on Vertex AI", "/v1/projects/p/locations/global/publishers/google/models/gemini-3-mock-agent:generateContent", "", "", 400,
			"Unable to submit request because function call `" + name + "` in the 2. content block is missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures"},
		{"another call's signature", path, thoughtSignature("other", "call_x"), "", 400, "Corrupted thought signature."},
		{"the documented skip, as spelled", path, "skip_thought_signature_validator", "", 200, ""},
		{"the documented skip, in standard base64", path, "skip/thought/signature/validator", "", 200, ""},
		{"no signature in an earlier turn", path, "", "and now coffee", 200, ""},
		{"no signature to a model that is not Gemini 3's", "/v1beta/models/mock-agent:generateContent", "", "", 200, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := raw(t, s, "POST", c.path, "gemini", geminiAgentBody(call, c.sig, c.later), nil)
			if got.status != c.status {
				t.Fatalf("status %d %s, want %d", got.status, got.body, c.status)
			}
			if c.status != 200 {
				var e struct {
					Error struct {
						Code    int
						Message string
						Status  string
					}
				}
				_ = json.Unmarshal(got.body, &e)
				if e.Error.Code != 400 || e.Error.Status != "INVALID_ARGUMENT" || e.Error.Message != c.message {
					t.Errorf("error %s\nwant 400 INVALID_ARGUMENT %q", got.body, c.message)
				}
			}
		})
	}
	plain := raw(t, s, "POST", "/v1beta/models/mock-agent:generateContent", "gemini", geminiAgentBody(nil, "", ""), nil)
	if strings.Contains(string(plain.body), "thoughtSignature") {
		t.Errorf("mock-agent, not named as Gemini 3's, answered %s: want no thoughtSignature", plain.body)
	}
}
