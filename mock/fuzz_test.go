package mock

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestEveryDialectHasEveryError(t *testing.T) {
	for _, d := range []*dialect{&openAI, &anthropic, &azureOpenAI, &bedrock} {
		for k, f := range d.errs {
			if f == nil {
				t.Errorf("%s has no error for kind %d", d.name, k)
			}
		}
	}
}

// FuzzRequestsAlwaysGetAnAnswer: whatever the body, every endpoint
// answers with a status and, unless it streams, a JSON body; it never
// panics.
func FuzzRequestsAlwaysGetAnAnswer(f *testing.F) {
	seeds := []string{
		`{"model": "mock-echo", "messages": [{"role": "user", "content": "hi"}]}`,
		`{"model": "mock-json", "max_tokens": 3, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "stream": true}`,
		`{"model": "mock-echo", "messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "properties": {"a": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"type": ["integer", "null"]}}}}}], "tool_choice": "required"}`,
		`{"model": "mock-echo", "max_tokens": 10, "messages": [{"role": "user", "content": "x"}], "output_format": {"type": "json_schema", "schema": {"anyOf": [{"type": "array", "items": {}}]}}}`,
		`{"model": "mock-echo", "messages": [{"role": "tool", "content": null}]}`,
		// A schema asking for a billion items gets a small answer.
		`{"model": "mock-echo", "messages": [{"role": "user", "content": "json"}], "response_format": {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "array", "minItems": 1e9, "items": {"$ref": "#"}}}}}`,
		`{"messages": null}`, `[]`, `null`, `{`, ``,
		// Converse bodies (the seeds' path index 5).
		`{"messages": [{"role": "user", "content": [{"text": "hi"}]}], "system": [{"text": "s"}], "inferenceConfig": {"maxTokens": 5}}`,
		`{"messages": [{"role": "user", "content": [{"text": "x"}]}], "toolConfig": {"tools": [{"toolSpec": {"name": "o", "inputSchema": {"json": {"type": "object"}}}}], "toolChoice": {"tool": {"name": "o"}}}}`,
		`{"messages": [{"role": "user", "content": [{"toolResult": {"content": [{"text": 1}]}}]}], "toolConfig": {"toolChoice": {"any": {}}}}`,
	}
	for i, s := range seeds {
		f.Add(s, uint8(0))
		if i >= len(seeds)-3 {
			f.Add(s, uint8(5))
		}
		f.Add(s, uint8(1))
	}
	paths := []string{"/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens", "/v1/models/x", "/nowhere", "/model/mock-echo/converse"}
	f.Fuzz(func(t *testing.T, body string, which uint8) {
		path := paths[int(which)%len(paths)]
		s := New(Config{Faults: Faults{InvalidOutput: 0.3, Truncated: 0.2, Refusal: 0.1}})
		req := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k")
		req.Header.Set("x-api-key", "k")
		req.Header.Set("anthropic-version", "2023-06-01")
		if strings.HasPrefix(path, "/model/") {
			req.Header.Set("Authorization", "AWS4-HMAC-SHA256 Credential=AKIAFUZZ/20261201/us-east-1/bedrock/aws4_request, SignedHeaders=host, Signature=00")
		}
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		if rec.Code < 200 || rec.Code > 599 {
			t.Fatalf("status %d", rec.Code)
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %q: status %d with a body that is not JSON: %s", path, body, rec.Code, rec.Body.Bytes())
		}
	})
}
