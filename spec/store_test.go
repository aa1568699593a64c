package spec

import (
	"strings"
	"testing"
)

// task.store is taken where stored chat completions are (openai, azure)
// and refused with the reason elsewhere: on providers that keep none, on
// the in-process mock, and on a task with no tools.
func TestStoreIsRefusedWhereNoStoredCompletionsAre(t *testing.T) {
	const tools = "\n  tools: [{name: look, parameters: {type: object}, exec: {argv: [echo]}}]"
	tests := []struct {
		name, task string
		want       string // "" when the spec is fine
	}{
		{"openai", "provider: openai\n  model: m\n  store: true" + tools, ""},
		{"azure", "provider: azure\n  base_url: https://r.openai.azure.com\n  model: d\n  store: true" + tools, ""},
		{"anthropic", "provider: anthropic\n  model: m\n  store: true" + tools, "task.store: anthropic keeps no stored completions"},
		{"bedrock", "provider: bedrock\n  region: eu-west-1\n  model: m\n  store: true" + tools, "task.store: bedrock keeps no stored completions"},
		{"gemini", "provider: gemini\n  api_key: k\n  model: m\n  store: true" + tools, "task.store: gemini keeps no stored completions"},
		{"vertex", "provider: vertex\n  project: p\n  region: us-central1\n  model: m\n  store: true" + tools, "task.store: vertex keeps no stored completions"},
		{"the in-process mock", "provider: mock\n  model: mock-agent\n  store: true" + tools, "task.store: the in-process mock dies with the process"},
		{"no tools", "provider: openai\n  model: m\n  store: true", "task.store: is for agent items"},
		{"off anywhere", "provider: anthropic\n  model: m\n  store: false" + tools, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "task:\n  type: llm\n  prompt: hi\n  " + tt.task + "\n"
			_, err := Parse("job.yaml", []byte(src), "/specs", envOf(nil))
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Parse:\n%v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Parse = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
