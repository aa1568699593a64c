package spec

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// envOf returns an env lookup over a map.
func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// parse parses src as job.yaml in /specs, failing the test on error.
func parse(t *testing.T, src string, env map[string]string) *Spec {
	t.Helper()
	s, err := Parse("job.yaml", []byte(src), "/specs", envOf(env))
	if err != nil {
		t.Fatalf("Parse:\n%v", err)
	}
	return s
}

const llmTask = "task:\n  type: llm\n  provider: mock\n  prompt: hi\n"

func TestBadSpecsReportEveryProblemWithPosition(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want []string
	}{
		{
			name: "unknown key suggests the near miss",
			src:  "task:\n  type: llm\n  provider: openai\n  modle: gpt-4o\n  prompt: hi\n",
			want: []string{`job.yaml:4:3: unknown key "modle" in task (did you mean "model"?)`},
		},
		{
			name: "unknown top-level key and one with no near miss",
			src:  "taks:\n  type: llm\nzzzzzz: 1\n",
			want: []string{
				`job.yaml:1:1: unknown key "taks" (did you mean "task"?)`,
				`job.yaml:3:1: unknown key "zzzzzz"`,
			},
		},
		{
			name: "wrong type",
			src:  llmTask + "concurrency: {max: \"lots\"}\n",
			want: []string{`job.yaml:5:20: concurrency.max: expected an integer, got "lots"`},
		},
		{
			name: "mapping where a scalar belongs",
			src:  llmTask + "retry:\n  max_attempts:\n    n: 3\n",
			want: []string{`job.yaml:7:5: retry.max_attempts: expected an integer, got a mapping`},
		},
		{
			name: "bad jitter suggests the mode",
			src:  llmTask + "retry:\n  backoff: {jitter: fuul}\n",
			want: []string{`job.yaml:6:21: retry.backoff.jitter: unknown value "fuul" (want proportional, full, equal, decorrelated or none) (did you mean "full"?)`},
		},
		{
			name: "missing environment variable points at the ${",
			src:  "task:\n  type: llm\n  provider: openai\n  model: m\n  prompt: p\n  api_key: sk-${OPENAI_API_KEY}\n",
			want: []string{`job.yaml:6:15: task.api_key: environment variable OPENAI_API_KEY is not set (export it, or write ${OPENAI_API_KEY:-default})`},
		},
		{
			name: "missing environment variable in a quoted string",
			src:  "task:\n  type: http\n  url: \"https://x/${HOST}\"\n",
			want: []string{`job.yaml:3:19: task.url: environment variable HOST is not set (export it, or write ${HOST:-default})`},
		},
		{
			name: "negative concurrency",
			src:  llmTask + "concurrency:\n  max: -3\n",
			want: []string{`job.yaml:6:8: concurrency.max: must be at least 1, got -3`},
		},
		{
			// 100000000 was accepted, and the engine started a goroutine per
			// slot whatever the item count (18 GB with one item).
			name: "concurrency beyond the documented maximum",
			src:  llmTask + "concurrency:\n  max: 100000000\n",
			want: []string{`job.yaml:6:8: concurrency.max: 100000000 is more than tenax runs at once (at most 10000); a limit this high protects nothing — use rate_limit to bound the calls`},
		},
		{
			name: "bad regex",
			src:  llmTask + "heal:\n  hints:\n    - match: \"(unclosed\"\n      hint: h\n",
			want: []string{"job.yaml:7:14: heal.hints[0].match: invalid regex: missing closing ): `(unclosed`"},
		},
		{
			name: "impossible values are all reported at once",
			src: llmTask + `retry:
  max_attempts: 0
  backoff:
    base: soon
breaker:
  failure_rate: 1.5
  on_trip: never
`,
			want: []string{
				`job.yaml:8:11: retry.backoff.base: invalid duration "soon" (want e.g. "500ms", "2s", "1m", or a number of seconds)`,
			},
		},
		{
			name: "validation problems are all reported at once",
			src: llmTask + `retry:
  max_attempts: 0
breaker:
  failure_rate: 1.5
  on_trip: never
`,
			want: []string{
				`job.yaml:6:17: retry.max_attempts: must be at least 1, got 0`,
				`job.yaml:8:17: breaker.failure_rate: must be between 0 and 1, got 1.5`,
				`job.yaml:9:12: breaker.on_trip: unknown value "never" (want prompt, abort or wait)`,
			},
		},
		{
			name: "unknown task type",
			src:  "task:\n  type: sql\n",
			want: []string{`job.yaml:2:9: task.type: unknown value "sql" (want llm, exec or http)`},
		},
		{
			name: "missing task",
			src:  "name: x\n",
			want: []string{`job.yaml:1:1: task.type: missing (want llm, exec or http)`},
		},
		{
			name: "llm without provider, model or prompt",
			src:  "task:\n  type: llm\n",
			want: []string{
				`job.yaml:1:1: task.provider: missing for an llm task (want openai, anthropic, azure, bedrock, gemini, vertex or mock)`,
				`job.yaml:1:1: task.model: missing for an llm task`,
				`job.yaml:1:1: task.prompt: missing for an llm task`,
			},
		},
		{
			name: "exec with empty argv and a key of another task type",
			src:  "task:\n  type: exec\n  argv: []\n  url: http://x\n",
			want: []string{
				`job.yaml:3:9: task.argv: missing or empty for an exec task (a list: program, then arguments)`,
				`job.yaml:4:8: task.url: does not apply to exec tasks (it is for http tasks)`,
			},
		},
		{
			name: "http without url",
			src:  "task:\n  type: http\n  method: post\n",
			want: []string{`job.yaml:1:1: task.url: missing for an http task`},
		},
		{
			name: "negative duration",
			src:  llmTask + "retry: {max_hint: -5s}\n",
			want: []string{`job.yaml:5:19: retry.max_hint: must not be negative, got -5s`},
		},
		{
			name: "classification rule with a misspelled class",
			src:  llmTask + "classify:\n  - name: quota\n    match: quota\n    class: fatl\n",
			want: []string{`job.yaml:8:12: classify[0].class: unknown class "fatl" (want retryable, fatal, item, invalid or canceled) (did you mean "fatal"?)`},
		},
		{
			name: "input with an unknown extension",
			src:  "input: units.json\n" + llmTask,
			want: []string{`job.yaml:1:8: input: cannot tell the format of "units.json" from its extension (want .jsonl, .ndjson, .csv or .txt, or set input.format)`},
		},
		{
			name: "yaml syntax error",
			src:  "task: [llm\n",
			want: []string{`job.yaml:1:7: sequence end token ']' not found`},
		},
		{
			name: "duplicate key",
			src:  llmTask + "name: a\nname: b\n",
			want: []string{`job.yaml:6:1: mapping key "name" already defined at [5:1]`},
		},
		{
			name: "alias to no anchor",
			src:  llmTask + "name: *nope\n",
			want: []string{`job.yaml:5:7: alias *nope refers to no anchor`},
		},
		{
			name: "two documents",
			src:  llmTask + "---\nname: b\n",
			want: []string{`job.yaml:6:1: a spec holds one YAML document; remove the second one`},
		},
		{
			name: "breaker.count names final failure classes",
			src:  llmTask + "breaker:\n  count: [fatal, retryabel, canceled]\n",
			want: []string{
				`job.yaml:6:18: breaker.count[1]: unknown value "retryabel" (want retryable, fatal, item or invalid) (did you mean "retryable"?)`,
				`job.yaml:6:29: breaker.count[2]: unknown value "canceled" (want retryable, fatal, item or invalid)`,
			},
		},
		{
			name: "empty spec",
			src:  "# nothing yet\n",
			want: []string{`job.yaml:1:1: the spec is empty: it needs at least a task`},
		},
		{
			// A template that does not parse was reported only when the
			// run built its task, without a position, after validate had
			// printed the spec.
			name: "templates that do not parse, at their place",
			src:  "task:\n  type: exec\n  argv: [echo, \"{{.word}\", \"{{.w | nosuch}}\"]\n  env: {A: \"{{end}}\"}\n",
			want: []string{
				`job.yaml:3:16: task.argv[1]: not a valid template: argv[1]:1: bad character U+007D '}'`,
				`job.yaml:3:28: task.argv[2]: not a valid template: argv[2]:1: function "nosuch" not defined`,
				`job.yaml:4:12: task.env.A: not a valid template: env[A]:1: unexpected {{end}}`,
			},
		},
		{
			name: "an llm prompt that does not parse",
			src:  "task: {type: llm, provider: mock, prompt: \"{{.a\", system: ok}\n",
			want: []string{`job.yaml:1:43: task.prompt: not a valid template: prompt:1: unclosed action`},
		},
		{
			name: "mock error fractions",
			src:  llmTask + "mock:\n  errors: {server: 0.8, timeout: 0.5}\n  rpm: 10\n  tpm: -1\n  latency: {min: 2s, max: 1s}\n",
			want: []string{
				`job.yaml:6:12: mock.errors: the fractions add up to 1.3, more than 1`,
				`job.yaml:8:8: mock.tpm: must not be negative, got -1`,
				`job.yaml:9:18: mock.latency.min: 2s is more than mock.latency.max (1s)`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", envOf(tt.env))
			if err == nil {
				t.Fatalf("Parse succeeded; want errors:\n%s", strings.Join(tt.want, "\n"))
			}
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("error %T is not spec.Errors: %v", err, err)
			}
			if got := err.Error(); got != strings.Join(tt.want, "\n") {
				t.Errorf("errors differ\n got:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
			var one *Error
			if !errors.As(err, &one) || one.Line < 1 || one.Col < 1 {
				t.Errorf("errors.As(*Error) = %+v, want a positioned *Error", one)
			}
		})
	}
}

func TestDefaultsFillWhatTheSpecLeavesOut(t *testing.T) {
	s := parse(t, "task:\n  type: llm\n  provider: openai\n  model: gpt-4o-mini\n  prompt: hi\n", nil)
	want := Spec{
		Name:  "job",
		Input: Input{OnBadLine: "fail"},
		Task: Task{Type: "llm", Provider: "openai", Model: "gpt-4o-mini", Prompt: "hi",
			MaxTokens: 1024, Output: "text", Timeout: 60 * time.Second},
		Validate: Validate{Timeout: 30 * time.Second},
		Heal:     Heal{MaxAttempts: 8, MaxErrorAttempts: 5, MaxSameOutput: 1},
		Retry: Retry{MaxAttempts: 5, MaxHint: 2 * time.Minute,
			Backoff: Backoff{Base: time.Second, Multiplier: 2, Max: 60 * time.Second, Jitter: "proportional"}},
		Breaker:     Breaker{Threshold: 5, ResetTimeout: 60 * time.Second, Probes: 1},
		Concurrency: Concurrency{Max: 32},
		Checkpoint:  Checkpoint{FlushEvery: 100, FlushInterval: time.Second},
		Cache:       Cache{Enabled: true, MaxBytes: DefaultCacheMaxBytes},
	}
	want.path, want.dir, want.valuePos, want.keyPos = s.path, s.dir, s.valuePos, s.keyPos
	if !reflect.DeepEqual(*s, want) {
		t.Errorf("defaults differ\n got %+v\nwant %+v", *s, want)
	}
}

func TestDefaultsDependOnTheTask(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		check func(s *Spec) string
	}{
		{"exec has no timeout, concurrency 8, no cache", "task: {type: exec, argv: [echo]}\n", func(s *Spec) string {
			if s.Task.Timeout != 0 || s.Concurrency.Max != 8 || s.Cache.Enabled || s.Task.Output != "text" {
				return "want timeout 0, concurrency 8, cache off, output text"
			}
			return ""
		}},
		{"http GETs with a 30s timeout", "task: {type: http, url: 'http://x'}\n", func(s *Spec) string {
			if s.Task.Method != "GET" || s.Task.Timeout != 30*time.Second {
				return "want GET and 30s"
			}
			return ""
		}},
		{"http with a body POSTs", "task: {type: http, url: 'http://x', body: '{}'}\n", func(s *Spec) string {
			if s.Task.Method != "POST" {
				return "want POST"
			}
			return ""
		}},
		{"llm with a JSON Schema answers json", llmTask + "validate: {json_schema: s.json}\n", func(s *Spec) string {
			if s.Task.Output != "json" {
				return "want output json"
			}
			return ""
		}},
		{"failure rate brings a window of 20", llmTask + "breaker: {failure_rate: 0.5}\n", func(s *Spec) string {
			if s.Breaker.Window != 20 {
				return "want window 20"
			}
			return ""
		}},
		{"mock provider gets latency and seed", llmTask, func(s *Spec) string {
			if s.Mock.Latency != (Latency{20 * time.Millisecond, 20 * time.Millisecond}) || s.Mock.Seed != 42 {
				return "want 20ms latency and seed 42"
			}
			return ""
		}},
		{"mock latency min alone is also the max", llmTask + "mock: {latency: {min: 5ms}}\n", func(s *Spec) string {
			if s.Mock.Latency != (Latency{5 * time.Millisecond, 5 * time.Millisecond}) {
				return "want 5ms..5ms"
			}
			return ""
		}},
		{"explicit zeros and false are kept", llmTask + "cache: {enabled: false}\nretry: {max_hint: 0}\n", func(s *Spec) string {
			if s.Cache.Enabled || s.Retry.MaxHint != 0 {
				return "want cache off and max_hint 0 as written"
			}
			return ""
		}},
		{"durations accept bare seconds", llmTask + "retry: {max_elapsed: 90, backoff: {base: 0.5, max: 2m}}\n", func(s *Spec) string {
			if s.Retry.MaxElapsed != 90*time.Second || s.Retry.Backoff.Base != 500*time.Millisecond || s.Retry.Backoff.Max != 2*time.Minute {
				return "want 90s, 500ms, 2m"
			}
			return ""
		}},
		{"anchors and merge keys", "task:\n  <<: &base {type: exec, argv: [a], timeout: 5s}\n  timeout: 7s\n", func(s *Spec) string {
			if s.Task.Type != "exec" || s.Task.Timeout != 7*time.Second || len(s.Task.Argv) != 1 {
				return "want the merged exec task with the explicit timeout"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := parse(t, tt.src, nil)
			if msg := tt.check(s); msg != "" {
				t.Errorf("%s; got %+v", msg, *s)
			}
		})
	}
}

func TestEnvironmentExpansion(t *testing.T) {
	env := map[string]string{"MODEL": "gpt-4o", "EMPTY": ""}
	tests := []struct {
		prompt string
		want   string
	}{
		{"use ${MODEL}", "use gpt-4o"},
		{"${UNSET:-fallback}", "fallback"},
		{"${EMPTY:-fallback}", "fallback"},
		{"cost $$5 and $5 and a lone $", "cost $5 and $5 and a lone $"},
		{"$${MODEL} stays", "${MODEL} stays"},
		{"{{.x}} ${MODEL}${MODEL}", "{{.x}} gpt-4ogpt-4o"},
	}
	for _, tt := range tests {
		src := "task:\n  type: llm\n  provider: mock\n  prompt: '" + tt.prompt + "'\n"
		if got := parse(t, src, env).Task.Prompt; got != tt.want {
			t.Errorf("prompt %q expands to %q, want %q", tt.prompt, got, tt.want)
		}
	}
	s := parse(t, llmTask+"concurrency: {max: '${N}'}\n", map[string]string{"N": "12"})
	if s.Concurrency.Max != 12 {
		t.Errorf("concurrency.max from ${N}=12 is %d", s.Concurrency.Max)
	}
	s = parse(t, llmTask+"name: ${INJECT}\n", map[string]string{"INJECT": "a\ntask: {type: exec}"})
	if s.Task.Type != "llm" || s.Name != "a\ntask: {type: exec}" {
		t.Errorf("a variable's value changed the spec's structure: type %q, name %q", s.Task.Type, s.Name)
	}
}

func TestInputIsAPathOrAMapping(t *testing.T) {
	tests := []struct {
		src  string
		want Input
	}{
		{"input: units.jsonl\n", Input{Path: "/specs/units.jsonl", Format: "jsonl", OnBadLine: "fail"}},
		{"input: /data/rows.CSV\n", Input{Path: "/data/rows.CSV", Format: "csv", OnBadLine: "fail"}},
		{"input: {path: ../lines.txt, on_bad_line: record}\n", Input{Path: "/lines.txt", Format: "txt", OnBadLine: "record"}},
		{"input:\n  path: data.log\n  format: txt\n", Input{Path: "/specs/data.log", Format: "txt", OnBadLine: "fail"}},
		{"", Input{OnBadLine: "fail"}},
	}
	for _, tt := range tests {
		if got := parse(t, tt.src+llmTask, nil).Input; got != tt.want {
			t.Errorf("%q: input = %+v, want %+v", tt.src, got, tt.want)
		}
	}
}

func TestRelativePathsResolveAgainstTheSpecDirectory(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "review.yaml"), envOf(map[string]string{"REVIEW_TOKEN": "t"}))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs("testdata")
	if s.Dir() != dir || s.Path() != filepath.Join("testdata", "review.yaml") {
		t.Errorf("Dir() = %q, Path() = %q; want %q and the path given", s.Dir(), s.Path(), dir)
	}
	checks := map[string][2]string{
		"input":            {s.Input.Path, filepath.Join(dir, "files.txt")},
		"argv[0]":          {s.Task.Argv[0], filepath.Join(dir, "review.sh")},
		"argv[1] template": {s.Task.Argv[1], "{{.text}}"},
		"validate.command": {s.Validate.Command[0], filepath.Join(dir, "check-review.sh")},
		"name":             {s.Name, "review"},
	}
	for what, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s = %q, want %q", what, c[0], c[1])
		}
	}

	s = parse(t, "task: {type: exec, argv: [python3, ./x.py], dir: work}\nvalidate: {command: [jq, .], json_schema: /abs/s.json}\ncache: {dir: .cache}\n", nil)
	if s.Task.Argv[0] != "python3" || s.Task.Argv[1] != "./x.py" || s.Task.Dir != "/specs/work" ||
		s.Validate.Command[0] != "jq" || s.Validate.JSONSchema.Path != "/abs/s.json" || s.Cache.Dir != "/specs/.cache" {
		t.Errorf("paths resolved wrongly: argv %q, dir %q, command %q, schema %q, cache %q",
			s.Task.Argv, s.Task.Dir, s.Validate.Command, s.Validate.JSONSchema.Path, s.Cache.Dir)
	}
}

func TestCommandIsAListOrOneProgram(t *testing.T) {
	s := parse(t, llmTask+"validate: {command: ./check.sh}\n", nil)
	if want := (Command{"/specs/check.sh"}); !reflect.DeepEqual(s.Validate.Command, want) {
		t.Errorf("command = %q, want %q", s.Validate.Command, want)
	}
	s = parse(t, llmTask+"validate: {command: [python3, -m, checker]}\n", nil)
	if want := (Command{"python3", "-m", "checker"}); !reflect.DeepEqual(s.Validate.Command, want) {
		t.Errorf("command = %q, want %q", s.Validate.Command, want)
	}
}

func TestInlineJSONSchemaKeepsItsShape(t *testing.T) {
	s := parse(t, llmTask+`validate:
  json_schema:
    type: object
    required: [es]
    properties:
      es: {type: string, minLength: 1}
    additionalProperties: false
`, nil)
	want := `{"type":"object","required":["es"],"properties":{"es":{"type":"string","minLength":1}},"additionalProperties":false}`
	if string(s.Validate.JSONSchema.Inline) != want {
		t.Errorf("inline schema = %s\nwant %s", s.Validate.JSONSchema.Inline, want)
	}
	if s.Validate.JSONSchema.Path != "" || s.Task.Output != "json" {
		t.Errorf("path %q, output %q; want no path and json output", s.Validate.JSONSchema.Path, s.Task.Output)
	}
	if !json.Valid(s.Validate.JSONSchema.Inline) {
		t.Error("inline schema is not valid JSON")
	}
}

func TestRedactedNeverShowsASecret(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY": "sk-live-abc123",
		"AUTH":           "bearer-zzz",
		"DB_PASSWORD":    "hunter2",
		"DEPLOY":         "prod",
		"PLAIN":          "visible-value",
		"API_CRED":       "cred-4567",
	}
	src := `name: ${PLAIN}
task:
  type: http
  url: https://example.com/${DEPLOY}?cred=${API_CRED}
  headers:
    Authorization: Bearer ${AUTH}
    X-Env: ${DEPLOY}
  body: '{"password": "${DB_PASSWORD}"}'
validate:
  json_schema: {description: "key ${OPENAI_API_KEY}"}
`
	s := parse(t, src, env)
	secrets := s.Secrets()
	// Every value expanded into the url, headers or body is a secret,
	// whatever its variable's name (API_CRED says nothing of KEY or TOKEN).
	for _, want := range []string{"bearer-zzz", "hunter2", "sk-live-abc123", "prod", "cred-4567"} {
		if !strings.Contains(strings.Join(secrets, "\n"), want) {
			t.Errorf("Secrets() = %q lacks %q", secrets, want)
		}
	}
	j, err := s.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	y, err := s.RedactedYAML()
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string][]byte{"json": j, "yaml": y} {
		for _, secret := range []string{"sk-live-abc123", "bearer-zzz", "hunter2", "cred-4567"} {
			if strings.Contains(string(out), secret) {
				t.Errorf("%s output shows the secret %q:\n%s", name, secret, out)
			}
		}
		if !strings.Contains(string(out), "visible-value") || !strings.Contains(string(out), "[redacted]") {
			t.Errorf("%s output should show the plain value and [redacted]:\n%s", name, out)
		}
	}
	if !json.Valid(j) {
		t.Errorf("Redacted() is not JSON: %s", j)
	}
	// The spec itself keeps the real values: the task needs them.
	if s.Task.Headers["Authorization"] != "Bearer bearer-zzz" {
		t.Errorf("the header was changed in the spec: %q", s.Task.Headers["Authorization"])
	}
}

func TestLiteralAPIKeyIsASecret(t *testing.T) {
	s := parse(t, "task: {type: llm, provider: openai, model: m, prompt: p, api_key: sk-literal}\n", nil)
	j, _ := s.Redacted()
	if strings.Contains(string(j), "sk-literal") {
		t.Errorf("a literal api_key shows in Redacted: %s", j)
	}
}

func TestSuggestion(t *testing.T) {
	keys := []string{"type", "provider", "model", "max_tokens", "timeout"}
	tests := []struct{ word, want string }{
		{"modle", "model"},
		{"Model", "model"},
		{"max_token", "max_tokens"},
		{"timout", "timeout"},
		{"tpye", "type"},
		{"sql", ""},
		{"completely_else", ""},
	}
	for _, tt := range tests {
		if got := suggest(tt.word, keys); got != tt.want {
			t.Errorf("suggest(%q) = %q, want %q", tt.word, got, tt.want)
		}
	}
}

// A merge key naming its own anchor twice once made decoding exponential
// (found by FuzzParse).
func TestSelfReferentialAliasesFailInsteadOfHanging(t *testing.T) {
	for _, src := range []string{
		"task: &x {<<: [*x, *x]}\n",
		"task: {type: llm, provider: mock, prompt: p}\nvalidate:\n  json_schema: &s {a: *s, b: *s}\n",
	} {
		_, err := Parse("job.yaml", []byte(src), "/specs", nil)
		if err == nil || !strings.Contains(err.Error(), "too large or too deeply nested") {
			t.Errorf("%q: error %v, want the size limit", src, err)
		}
	}
}

func TestDesignExampleLoads(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "translate.yaml"), envOf(map[string]string{"OPENAI_API_KEY": "sk-x"}))
	if err != nil {
		t.Fatal(err)
	}
	if s.Task.BaseURL != "https://api.openai.com/v1" || s.Task.APIKey != "sk-x" || s.Task.MaxTokens != 200 ||
		s.Task.Temperature == nil || *s.Task.Temperature != 0.2 || s.Task.Output != "json" {
		t.Errorf("task = %+v", s.Task)
	}
	if len(s.Heal.Hints) != 1 || s.Heal.Hints[0].Regexp == nil || !s.Heal.Hints[0].Regexp.MatchString("unexpected end of JSON input") {
		t.Errorf("heal hints not compiled: %+v", s.Heal.Hints)
	}
	if s.Concurrency != (Concurrency{Max: 32, Adaptive: true}) || s.RateLimit.TokensPerMinute != 2000000 || s.Breaker.OnTrip != "prompt" {
		t.Errorf("scheduling = %+v %+v %+v", s.Concurrency, s.RateLimit, s.Breaker)
	}
	if p := s.Prices["gpt-4o-mini"]; p.InputPerMTok != 0.15 || p.OutputPerMTok != 0.6 {
		t.Errorf("prices = %+v", s.Prices)
	}
}
