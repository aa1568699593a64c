package spec

import "strings"

// meantKeys maps keys that other tools use, or that tenax uses elsewhere, to
// the key a spec wants there, by the path of the mapping they appear in
// ("" is the top level). An unknown key too far from every valid one for a
// spelling suggestion is looked up here: `command:` in an exec task is not
// a typo of anything, but it is what argv is called elsewhere.
var meantKeys = map[string]map[string]string{
	"": {
		"tasks": "task", "job": "task",
		"retries": "retry", "attempts": "retry.max_attempts",
		"parallelism": "concurrency", "workers": "concurrency", "max_concurrency": "concurrency",
		"rate": "rate_limit", "rpm": "rate_limit", "ratelimit": "rate_limit",
		"circuit_breaker": "breaker", "validation": "validate", "schema": "validate.json_schema",
		"json_schema": "validate.json_schema", "inputs": "input", "data": "input",
		"input_file": "input", "input_path": "input",
	},
	"task": {
		"command": "argv", "cmd": "argv", "args": "argv", "arguments": "argv", "exec": "argv", "run": "argv",
		"cwd": "dir", "workdir": "dir", "working_dir": "dir", "directory": "dir",
		"environment": "env", "request_timeout": "timeout",
		"endpoint": "url", "uri": "url",
		"api_base": "base_url", "base_path": "base_url", "api_url": "base_url", "baseurl": "base_url",
		"token": "api_key", "api_token": "api_key", "key": "api_key", "apikey": "api_key",
		"system_prompt": "system", "user_prompt": "prompt", "template": "prompt", "message": "prompt", "messages": "prompt",
		"system_message": "system", "prompt_template": "prompt", "user_prompt_template": "prompt",
		"max_output_tokens": "max_tokens", "max_completion_tokens": "max_tokens",
		"data": "body", "payload": "body", "verb": "method",
	},
}

// misplacedKeys maps a key of one task type, written in a task of another
// type, to the key that type has for the same purpose.
var misplacedKeys = map[string]map[string]string{
	"llm":  {"url": "base_url", "body": "prompt"},
	"http": {"base_url": "url", "prompt": "body"},
	"exec": {"prompt": "stdin", "body": "stdin"},
}

// peerKey is what a key of a peer tool's config is called in a spec: To is
// the tenax key's full path, Note what the user must know to carry the
// value over ("" when it carries over as it is).
type peerKey struct {
	To, Note string
}

// peerKeys maps the keys of the tools people come to tenax from (their
// retry wrappers, batch scripts and agent configs), by their full path in
// a spec, to the tenax key that does the same. They are looked up before
// any spelling suggestion: `breaker.failure_threshold` is no typo, and
// the note says what the nearest spelling would not (max_retries counts
// differently from max_attempts).
var peerKeys = map[string]peerKey{
	"max_retries":       {"retry.max_attempts", maxRetriesNote},
	"retry.max_retries": {"retry.max_attempts", maxRetriesNote},
	"task.max_retries":  {"retry.max_attempts", "retry is a top-level key, beside task; " + maxRetriesNote},
	"retry.retries":     {"retry.max_attempts", maxRetriesNote},

	"circuit_breaker_threshold": {"breaker.threshold", "the consecutive counted failures that open the breaker"},
	"breaker.failure_threshold": {"breaker.threshold", "the consecutive counted failures that open the breaker"},
	"breaker.enabled": {"breaker.threshold", "tenax's breaker is always on: breaker.threshold sets how many consecutive failures open it, " +
		"breaker.count which classes count, and breaker.on_trip: wait lets the job go on by itself after a cool-down"},
	"breaker.cooldown":         {"breaker.reset_timeout", ""},
	"breaker.recovery_timeout": {"breaker.reset_timeout", ""},

	"batch_size":     {"pacing.batch_size", "dispatch this many items, wait for all of them to finish, pause pacing.batch_delay, go on"},
	"batch_delay":    {"pacing.batch_delay", "the pause between two batches"},
	"file_delay":     {"pacing.item_delay", "the pause between two items' dispatches"},
	"item_delay":     {"pacing.item_delay", "the pause between two items' dispatches"},
	"max_concurrent": {"concurrency.max", "the most attempts in flight at once"},
	"concurrent":     {"concurrency.max", "the most attempts in flight at once"},

	"retry_backoff_base":   {"retry.backoff.base", "the first retry's delay, which doubles (retry.backoff.multiplier) each time"},
	"backoff_base":         {"retry.backoff.base", "the first retry's delay, which doubles (retry.backoff.multiplier) each time"},
	"retry.backoff_base":   {"retry.backoff.base", "the first retry's delay, which doubles (retry.backoff.multiplier) each time"},
	"max_retry_backoff":    {"retry.backoff.max", "the longest delay between two retries"},
	"max_backoff":          {"retry.backoff.max", "the longest delay between two retries"},
	"retry.max_backoff":    {"retry.backoff.max", "the longest delay between two retries"},
	"retry_backoff_factor": {"retry.backoff.multiplier", ""},

	"checkpoint_interval": {"checkpoint.flush_every", "results are made durable at least every this many records (and every checkpoint.flush_interval)"},
	"checkpoint_every":    {"checkpoint.flush_every", "results are made durable at least every this many records (and every checkpoint.flush_interval)"},

	"mode": {"task.mode", "mode is a key of the task: online (one call per attempt) or batch (the provider's batch API)"},
}

// maxRetriesNote says how a peer's retry count carries over.
const maxRetriesNote = "max_attempts counts the first attempt too, so max_retries: N is max_attempts: N+1"

// peerSuggestion returns, for the unknown key at path (its mapping's
// path) the key a peer tool's config means by it, as "did you mean" names
// it there (relative to path when it is under it, else in full), and the
// note to add to the message; ok is false when the key is no peer's.
func peerSuggestion(path, key string) (suggestion, note string, ok bool) {
	pk, ok := peerKeys[join(path, key)]
	if !ok {
		return "", "", false
	}
	suggestion = pk.To
	if path != "" {
		if rel, under := strings.CutPrefix(pk.To, path+"."); under {
			suggestion = rel
		}
	}
	return suggestion, pk.Note, true
}
