package spec

import (
	"reflect"
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
			`job.yaml:4:1: unknown key "max_retries": max_attempts counts the first attempt too, so max_retries: N is max_attempts: N+1 (did you mean "retry.max_attempts"?)`},
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

// TestPeerToolKeysSuggestTheTenaxKey: the keys of the tools people come
// from (circuit_breaker_threshold, retry.max_retries, batch_size, …) got a
// bare "unknown key", with nothing to say which tenax key does the same.
func TestPeerToolKeysSuggestTheTenaxKey(t *testing.T) {
	const task = "task:\n  type: exec\n  argv: [echo]\n"
	tests := []struct {
		name, src string
		// want is the line reported: file:line:col, the key, the note
		// and the suggestion.
		want string
	}{
		{"circuit_breaker_threshold", task + "circuit_breaker_threshold: 5\n",
			`job.yaml:4:1: unknown key "circuit_breaker_threshold": the consecutive counted failures that open the breaker (did you mean "breaker.threshold"?)`},
		{"breaker.failure_threshold", task + "breaker:\n  failure_threshold: 5\n",
			`job.yaml:5:3: unknown key "failure_threshold" in breaker: the consecutive counted failures that open the breaker (did you mean "threshold"?)`},
		{"breaker.enabled", task + "breaker:\n  enabled: false\n",
			`job.yaml:5:3: unknown key "enabled" in breaker: tenax's breaker is always on: breaker.threshold sets how many consecutive failures open it, breaker.count which classes count, and breaker.on_trip: wait lets the job go on by itself after a cool-down (did you mean "threshold"?)`},
		{"retry.max_retries", task + "retry:\n  max_retries: 3\n",
			`job.yaml:5:3: unknown key "max_retries" in retry: max_attempts counts the first attempt too, so max_retries: N is max_attempts: N+1 (did you mean "max_attempts"?)`},
		{"task.max_retries", task + "  max_retries: 3\n",
			`job.yaml:4:3: unknown key "max_retries" in task: retry is a top-level key, beside task; max_attempts counts the first attempt too, so max_retries: N is max_attempts: N+1 (did you mean "retry.max_attempts"?)`},
		{"batch_size", task + "batch_size: 10\n",
			`job.yaml:4:1: unknown key "batch_size": dispatch this many items, wait for all of them to finish, pause pacing.batch_delay, go on (did you mean "pacing.batch_size"?)`},
		{"max_concurrent", task + "max_concurrent: 4\n",
			`job.yaml:4:1: unknown key "max_concurrent": the most attempts in flight at once (did you mean "concurrency.max"?)`},
		{"batch_delay", task + "batch_delay: 2s\n",
			`job.yaml:4:1: unknown key "batch_delay": the pause between two batches (did you mean "pacing.batch_delay"?)`},
		{"file_delay", task + "file_delay: 0.5\n",
			`job.yaml:4:1: unknown key "file_delay": the pause between two items' dispatches (did you mean "pacing.item_delay"?)`},
		{"retry_backoff_base", task + "retry_backoff_base: 2\n",
			`job.yaml:4:1: unknown key "retry_backoff_base": the first retry's delay, which doubles (retry.backoff.multiplier) each time (did you mean "retry.backoff.base"?)`},
		{"max_retry_backoff", task + "max_retry_backoff: 60\n",
			`job.yaml:4:1: unknown key "max_retry_backoff": the longest delay between two retries (did you mean "retry.backoff.max"?)`},
		{"top-level mode", task + "mode: batch\n",
			`job.yaml:4:1: unknown key "mode": mode is a key of the task: online (one call per attempt) or batch (the provider's batch API) (did you mean "task.mode"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", nil)
			if err == nil {
				t.Fatalf("Parse accepted %q", tt.src)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("Parse:\n got %s\nwant %s", got, tt.want)
			}
		})
	}
}

// TestEveryPeerKeyNamesAKeyOfTheSpec: a peer key's suggestion must be a
// key a spec has, or "did you mean" sends the user to another unknown key.
func TestEveryPeerKeyNamesAKeyOfTheSpec(t *testing.T) {
	for from, pk := range peerKeys {
		parts := strings.Split(pk.To, ".")
		typ := reflect.TypeFor[Spec]()
		for _, part := range parts {
			_, index := fieldsOf(typ)
			i, ok := index[part]
			if !ok {
				t.Errorf("peerKeys[%q] = %q: the spec has no key %q there", from, pk.To, part)
				break
			}
			typ = typ.Field(i).Type
		}
	}
}
