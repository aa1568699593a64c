package spec

// meantKeys maps keys that other tools use, or that tenax uses elsewhere, to
// the key a spec wants there, by the path of the mapping they appear in
// ("" is the top level). An unknown key too far from every valid one for a
// spelling suggestion is looked up here: `command:` in an exec task is not
// a typo of anything, but it is what argv is called elsewhere.
var meantKeys = map[string]map[string]string{
	"": {
		"tasks": "task", "job": "task",
		"retries": "retry", "max_retries": "retry.max_attempts", "attempts": "retry.max_attempts",
		"parallelism": "concurrency", "workers": "concurrency", "max_concurrency": "concurrency",
		"rate": "rate_limit", "rpm": "rate_limit", "ratelimit": "rate_limit",
		"circuit_breaker": "breaker", "validation": "validate", "schema": "validate.json_schema",
		"json_schema": "validate.json_schema", "inputs": "input", "data": "input",
	},
	"task": {
		"command": "argv", "cmd": "argv", "args": "argv", "arguments": "argv", "exec": "argv", "run": "argv",
		"cwd": "dir", "workdir": "dir", "working_dir": "dir", "directory": "dir",
		"environment": "env",
		"endpoint":    "url", "uri": "url",
		"api_base": "base_url", "base_path": "base_url", "api_url": "base_url", "baseurl": "base_url",
		"token": "api_key", "api_token": "api_key", "key": "api_key", "apikey": "api_key",
		"system_prompt": "system", "user_prompt": "prompt", "template": "prompt", "message": "prompt", "messages": "prompt",
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
