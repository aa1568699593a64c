package spec

import (
	"strings"
	"testing"
)

// TestMisplacedKeysSuggestTheKeyMeant: `command:` in an exec task was an
// unknown key with no suggestion, `url:` in an llm task did not say
// base_url.
func TestMisplacedKeysSuggestTheKeyMeant(t *testing.T) {
	const exec = "task:\n  type: exec\n"
	tests := []struct {
		name, src, want string
	}{
		{"command in an exec task", exec + "  command: [echo, hi]\n",
			`job.yaml:3:3: unknown key "command" in task (did you mean "argv"?)`},
		{"cwd in an exec task", exec + "  argv: [echo]\n  cwd: /tmp\n",
			`job.yaml:4:3: unknown key "cwd" in task (did you mean "dir"?)`},
		{"url in an llm task", llmTask + "  model: m\n  url: http://127.0.0.1:8089/v1\n",
			`job.yaml:6:8: task.url: does not apply to llm tasks (it is for http tasks) (did you mean "base_url"?)`},
		{"api_base in an llm task", llmTask + "  model: m\n  api_base: http://127.0.0.1:8089/v1\n",
			`job.yaml:6:3: unknown key "api_base" in task (did you mean "base_url"?)`},
		{"base_url in an http task", "task:\n  type: http\n  url: http://x/{{.id}}\n  base_url: http://x\n",
			`job.yaml:4:13: task.base_url: does not apply to http tasks (it is for llm tasks) (did you mean "url"?)`},
		{"system_prompt in an llm task", llmTask + "  model: m\n  system_prompt: be brief\n",
			`job.yaml:6:3: unknown key "system_prompt" in task (did you mean "system"?)`},
		{"max_retries at the top", exec + "  argv: [echo]\nmax_retries: 3\n",
			`job.yaml:4:1: unknown key "max_retries" (did you mean "retry.max_attempts"?)`},
		{"a typo still gets the nearest key", exec + "  argvv: [echo]\n",
			`job.yaml:3:3: unknown key "argvv" in task (did you mean "argv"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse:\n%v\nwant a line:\n%s", err, tt.want)
			}
		})
	}
}

// TestBadIndentationIsReportedAtTheWrongLine: the parser reported a key
// indented too deep on the line before it, with "mapping value is not
// allowed in this context".
func TestBadIndentationIsReportedAtTheWrongLine(t *testing.T) {
	tests := []struct {
		name, src, want string
	}{
		{"a key deeper than a key with a value",
			"task:\n  type: exec\n    argv: [echo]\n",
			`job.yaml:3:5: bad indentation: "argv" is indented deeper than "type" on line 2, which already has a value: indent it to column 3 beside "type", or make "type" a mapping`},
		{"deeper under a nested key",
			"task:\n  type: exec\n  argv: [echo]\nretry:\n  max_attempts: 3\n    max_hint: 1s\n",
			`job.yaml:6:5: bad indentation: "max_hint" is indented deeper than "max_attempts" on line 5`},
		{"a key between two columns",
			"task:\n  type: exec\n  argv: [echo]\n retry: {max_attempts: 3}\n",
			`job.yaml:4:2: bad indentation: "retry" is indented to column 2, where no key above it is ("task" on line 1 is at column 1)`},
		{"a block scalar's colons are text",
			"task:\n  type: llm\n  provider: mock\n  model: m\n  prompt: |\n    Answer: yes or no\n    Item: {{.id}}\n  max_tokens: 5\n    stop: [x]\n",
			`job.yaml:9:5: bad indentation: "stop" is indented deeper than "max_tokens" on line 8`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("Parse:\n%v\nwant:\n%s", err, tt.want)
			}
		})
	}
}
