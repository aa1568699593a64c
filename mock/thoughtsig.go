package mock

import (
	"encoding/base64"
	"fmt"
	"hash/fnv"
	"strings"
)

// Gemini 3's thought signatures. A Gemini 3 model signs the first
// functionCall part of each answer with an opaque thoughtSignature and
// refuses, 400 INVALID_ARGUMENT, a request whose current turn (the
// contents after the last user text) holds a model content whose first
// functionCall part comes back without it, or with one it did not issue
// for that call. The mock plays this on the Gemini dialect for its models
// named as Gemini 3's: "gemini-3-mock-agent" (or gemini-3.1-…, gemini-4-…)
// is mock-agent as a Gemini 3 model (docs/mock.md, "Gemini 3's thought
// signatures").

// geminiGeneration splits a model name of the Gemini dialect's path:
// "gemini-3-mock-agent" is the mock model mock-agent, played as a model
// that signs its function calls; any other name is itself, unsigned.
func geminiGeneration(model string) (string, bool) {
	v, ok := strings.CutPrefix(model, "gemini-")
	if !ok {
		return model, false
	}
	version, rest, ok := strings.Cut(v, "-")
	major := 0
	for _, r := range version {
		if r < '0' || r > '9' {
			break
		}
		major = major*10 + int(r-'0')
	}
	if !ok || major < 3 || !knownModel(rest) {
		return model, false
	}
	return rest, true
}

// signaturePrefix starts every signature the mock issues, before the
// hash of the call it signs.
const signaturePrefix = "tenax-mock-thought:"

// thoughtSignature is the mock's signature of a function call, in the
// JSON's standard base64: bound to the call's name and id, so that a
// signature sent back on another call is refused as a real one is.
func thoughtSignature(name, id string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name + "\x00" + id))
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "%s%016x", signaturePrefix, h.Sum64()))
}

// skipSignatures are the values Google documents for a function call the
// model did not issue (a trace moved from another model): the API skips
// its check. They are compared as the bytes their base64url spelling
// decodes to, as the API reads a bytes field in either alphabet.
var skipSignatures = []string{"skip_thought_signature_validator", "context_engineering_is_the_way_to_go"}

// signatureBytes decodes a thoughtSignature as the API does: standard or
// URL-safe base64, padded or not.
func signatureBytes(s string) ([]byte, bool) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// signatureAccepted reports whether sig is the mock's signature of the
// call, or one of the documented skips.
func signatureAccepted(sig, name, id string) bool {
	got, ok := signatureBytes(sig)
	if !ok {
		return false
	}
	for _, skip := range append([]string{thoughtSignature(name, id)}, skipSignatures...) {
		if want, _ := signatureBytes(skip); string(want) == string(got) {
			return true
		}
	}
	return false
}

// unsignedCall is the refusal of a request whose current turn holds a
// function call without its signature, or with one the model did not
// issue for it: the first functionCall part of each model content after
// the last user content with text. The messages are the APIs' own
// (position and the content block are 1-based), nil when all is well.
func unsignedCall(in generateRequest, vertex bool) *apiError {
	if in.Contents == nil {
		return nil
	}
	contents := *in.Contents
	turn := 0
	for i, c := range contents {
		if c.Role != "model" {
			for _, p := range c.Parts {
				if p.FunctionResponse == nil && p.Text != "" {
					turn = i + 1
				}
			}
		}
	}
	for i := turn; i < len(contents); i++ {
		c := contents[i]
		if c.Role != "model" {
			continue
		}
		for _, p := range c.Parts {
			if p.FunctionCall == nil {
				continue
			}
			fc := p.FunctionCall
			switch {
			case p.ThoughtSignature == "" && vertex:
				return googleInvalid(fmt.Sprintf("Unable to submit request because function call `%s` in the %d. content block is missing a `thought_signature`. Learn more: https://docs.cloud.google.com/vertex-ai/generative-ai/docs/thought-signatures", fc.Name, i+1))
			case p.ThoughtSignature == "":
				return googleInvalid(fmt.Sprintf("Function call is missing a thought_signature in functionCall parts. This is required for tools to work correctly, and missing thought_signature may lead to degraded model performance. Additional data, function call `default_api:%s` , position %d. Please refer to https://ai.google.dev/gemini-api/docs/thought-signatures for more details.", fc.Name, i+1))
			case !signatureAccepted(p.ThoughtSignature, fc.Name, fc.ID) && vertex:
				return googleInvalid("Unable to submit request because Thought signature is not valid.. Learn more: https://cloud.google.com/vertex-ai/generative-ai/docs/model-reference/gemini")
			case !signatureAccepted(p.ThoughtSignature, fc.Name, fc.ID):
				return googleInvalid("Corrupted thought signature.")
			}
			break // only a content's first call is signed
		}
	}
	return nil
}
