package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/internal/lazyregexp"
)

// The allowed values of the spec's enumerations.
var (
	taskTypes  = []string{"llm", "exec", "http"}
	providers  = []string{"openai", "anthropic", "azure", "bedrock", "gemini", "vertex", "mock"}
	efforts    = []string{"minimal", "low", "medium", "high"}
	outputs    = []string{"text", "json"}
	formats    = []string{"jsonl", "csv", "txt"}
	onBadLines = []string{"fail", "record"}
	jitters    = []string{"proportional", "full", "equal", "decorrelated", "none"}
	onTrips    = []string{"prompt", "abort", "wait"}
	// countedClasses are the final failure classes breaker.count chooses
	// from (canceled never counts).
	countedClasses = []string{"retryable", "fatal", "item", "invalid"}
	methods        = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}
)

// taskKeys says which task keys belong to which task type; the others
// (type, output, timeout) apply to all. A key may belong to several.
var taskKeys = map[string][]string{
	"llm": {"provider", "base_url", "api_key", "model", "system", "prompt", "max_tokens", "temperature",
		"max_tokens_ceiling", "top_p", "stop", "seed", "reasoning_effort", "thinking_budget", "cache_prompt",
		"api_version", "azure_ad_token", "region", "project", "headers", "extra_body", "mode",
		"tools", "max_steps", "max_consecutive_errors", "max_tool_result_bytes", "keep_whole_steps", "old_tool_result_bytes"},
	"exec": {"argv", "stdin", "env", "exit_codes", "dir", "allow_option_values"},
	"http": {"method", "url", "headers", "body"},
}

// finish applies the defaults, validates every value and resolves
// relative paths, recording every problem.
func (d *decoder) finish(s *Spec) {
	d.defaults(s)
	d.checkInput(s)
	d.checkTask(s)
	d.checkValidate(s)
	d.checkPolicies(s)
	d.checkClassify(s)
	d.checkMock(s)
	d.checkBatch(s)
	d.checkRoutes(s)
	d.checkOutputToolName(s)
	d.checkProject(s)
	if d.files {
		d.checkFiles(s)
	}
	d.resolvePaths(s)
}

// isSet reports whether the spec wrote path with a non-null value.
func (d *decoder) isSet(path string) bool {
	_, ok := d.set[path]
	return ok
}

// at returns the position of the first of paths the spec wrote (its
// value, else its key), else the start of the file.
func (d *decoder) at(paths ...string) pos {
	for _, p := range paths {
		if v, ok := d.set[p]; ok {
			return v
		}
		if k, ok := d.keyPos[p]; ok {
			return k
		}
	}
	return pos{1, 1}
}

// problem records a problem with the value at path or, when the spec did
// not write it, at the key of the first of parents it did write.
func (d *decoder) problem(path string, parents []string, format string, args ...any) {
	p, ok := d.set[path]
	if !ok {
		p = d.at(path)
		for _, parent := range parents {
			if k, found := d.keyPos[parent]; found {
				p = k
				break
			}
		}
	}
	d.errorf(p, "", "%s: %s", path, fmt.Sprintf(format, args...))
}

// oneOf checks an enumerated value; "" passes (it means unset).
func (d *decoder) oneOf(path, value string, allowed []string) {
	if value == "" || slices.Contains(allowed, value) {
		return
	}
	d.errorf(d.at(path), suggest(value, allowed), "%s: unknown value %s (want %s)", path, d.shown(path, quote(value)), orList(allowed))
}

// orList writes "a, b or c".
func orList(words []string) string {
	if len(words) == 1 {
		return words[0]
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// defaults fills in every value the spec did not write.
func (d *decoder) defaults(s *Spec) {
	// The first default for a path wins: the task-specific ones come
	// before the general ones.
	defaulted := map[string]bool{}
	def := func(path string, apply func()) {
		if !d.isSet(path) && !defaulted[path] {
			defaulted[path] = true
			apply()
		}
	}
	inputDefaults(s, def)
	routeDefaults(s, def)
	d.markRehearsed(s)
	taskDefaults(s, def)
	policyDefaults(s, def)
	d.mockDefaults(s, def)
}

// A defaulter applies a path's default unless the spec wrote the path or
// an earlier default set it.
type defaulter func(path string, apply func())

// inputDefaults defaults the job's name and its input's format and
// bad-line policy.
func inputDefaults(s *Spec, def defaulter) {
	def("name", func() { s.Name = defaultName(s.path) })
	if s.Input.Path != "" {
		def("input.format", func() {
			ext := strings.ToLower(filepath.Ext(s.Input.Path))
			switch ext {
			case ".jsonl", ".ndjson":
				s.Input.Format = "jsonl"
			case ".csv":
				s.Input.Format = "csv"
			case ".txt":
				s.Input.Format = "txt"
			}
		})
	}
	def("input.on_bad_line", func() { s.Input.OnBadLine = "fail" })

}

// taskDefaults defaults what depends on the task's type.
func taskDefaults(s *Spec, def defaulter) {
	t := &s.Task
	switch t.Type {
	case "llm":
		def("task.max_tokens", func() {
			// Room for the answer after the reasoning or thinking that
			// counts against max_tokens: task/llm's defaults, which the
			// manifest then shows.
			switch {
			case t.ThinkingBudget > 0:
				t.MaxTokens = t.ThinkingBudget + 1024
			case t.Provider != "anthropic" && reasoningModel(t.Model):
				t.MaxTokens = 16384
			default:
				t.MaxTokens = 1024
			}
		})
		def("task.timeout", func() { t.Timeout = 60 * time.Second })
		def("task.output", func() {
			t.Output = "text"
			if s.Validate.JSONSchema.IsSet() {
				t.Output = "json"
			}
		})
		def("concurrency.max", func() { s.Concurrency.Max = 32 })
		def("cache.enabled", func() { s.Cache.Enabled = true })
	case "http":
		def("task.timeout", func() { t.Timeout = 30 * time.Second })
		def("task.method", func() {
			t.Method = "GET"
			if t.Body != "" {
				t.Method = "POST"
			}
		})
	}
	if t.Method != "" {
		t.Method = strings.ToUpper(t.Method)
	}
	if t.Output == "" {
		t.Output = "text"
	}

}

// policyDefaults defaults validation, heal, retry, breaker, concurrency
// and checkpoint settings.
func policyDefaults(s *Spec, def defaulter) {
	def("validate.timeout", func() { s.Validate.Timeout = 30 * time.Second })
	def("heal.max_attempts", func() { s.Heal.MaxAttempts = 8 })
	def("heal.max_error_attempts", func() { s.Heal.MaxErrorAttempts = 5 })
	def("heal.max_same_output", func() { s.Heal.MaxSameOutput = 1 })
	def("cache.max_bytes", func() { s.Cache.MaxBytes = DefaultCacheMaxBytes })

	r := &s.Retry
	def("retry.max_attempts", func() { r.MaxAttempts = 5 })
	def("retry.max_hint", func() { r.MaxHint = 2 * time.Minute })
	def("retry.backoff.base", func() { r.Backoff.Base = time.Second })
	def("retry.backoff.multiplier", func() { r.Backoff.Multiplier = 2 })
	def("retry.backoff.max", func() { r.Backoff.Max = 60 * time.Second })
	def("retry.backoff.jitter", func() { r.Backoff.Jitter = "proportional" })

	b := &s.Breaker
	def("breaker.threshold", func() { b.Threshold = 5 })
	if b.FailureRate > 0 {
		def("breaker.window", func() { b.Window = 20 })
	}
	def("breaker.reset_timeout", func() { b.ResetTimeout = 60 * time.Second })
	def("breaker.probes", func() { b.Probes = 1 })

	def("concurrency.max", func() { s.Concurrency.Max = 8 })
	def("checkpoint.flush_every", func() { s.Checkpoint.FlushEvery = 100 })
	def("checkpoint.flush_interval", func() { s.Checkpoint.FlushInterval = time.Second })

}

// mockDefaults defaults the simulated provider.
func (d *decoder) mockDefaults(s *Spec, def defaulter) {
	// The simulated provider's defaults matter only when it is used (or
	// configured), and would only clutter the manifest otherwise.
	if s.Task.Provider != "mock" && !d.isSet("mock") && !slices.ContainsFunc(s.Routes, func(r Route) bool { return r.Provider == "mock" || r.Mock.Rehearsed }) {
		return
	}
	m := &s.Mock
	switch {
	case !d.isSet("mock.latency"):
		m.Latency = Latency{Min: 20 * time.Millisecond, Max: 20 * time.Millisecond}
	case !d.isSet("mock.latency.max") && d.isSet("mock.latency.min"):
		m.Latency.Max = m.Latency.Min
	}
	def("mock.seed", func() { m.Seed = 42 })
}

func (d *decoder) checkInput(s *Spec) {
	d.oneOf("input.format", s.Input.Format, formats)
	d.oneOf("input.on_bad_line", s.Input.OnBadLine, onBadLines)
	if d.files && s.Input.Path != "" {
		// A directory is never an input, whatever its name says; a missing
		// file is job's to report, as --input may replace it.
		if fi, err := os.Stat(s.abs(s.Input.Path)); err == nil && fi.IsDir() {
			key := "input"
			if _, mapping := d.keyPos["input.path"]; mapping {
				key = "input.path"
			}
			d.errorf(d.at(key), "", "%s: %s is a directory; tenax reads one file", key, s.Input.Path)
			return
		}
	}
	if s.Input.Path != "" && s.Input.Format == "" {
		d.problem("input", nil, "cannot tell the format of %s from its extension (want .jsonl, .ndjson, .csv or .txt, or set input.format)", quote(s.Input.Path))
	}
}

func (d *decoder) checkTask(s *Spec) {
	t := &s.Task
	task := []string{"task"}
	switch {
	case t.Type == "":
		d.problem("task.type", task, "missing (want %s)", orList(taskTypes))
		return
	case !slices.Contains(taskTypes, t.Type):
		d.oneOf("task.type", t.Type, taskTypes)
		return
	}
	// A key of another task type is a mistake the decoder cannot see.
	for _, typ := range taskTypes {
		if typ == t.Type {
			continue
		}
		for _, k := range taskKeys[typ] {
			if p := "task." + k; d.isSet(p) && !slices.Contains(taskKeys[t.Type], k) {
				d.errorf(d.at(p), misplacedKeys[t.Type][k], "%s: does not apply to %s tasks (it is for %s tasks)", p, t.Type, typ)
			}
		}
	}
	d.oneOf("task.output", t.Output, outputs)
	if t.MaxAnswerBytes < 0 {
		d.problem("task.max_answer_bytes", nil, "must not be negative, got %d", t.MaxAnswerBytes)
	}
	switch t.Type {
	case "llm":
		if t.Provider == "" {
			d.problem("task.provider", task, "missing for an llm task (want %s)", orList(providers))
		}
		d.oneOf("task.provider", t.Provider, providers)
		if t.Model == "" && t.Provider != "mock" {
			d.problem("task.model", task, "missing for an llm task")
		}
		if t.Prompt == "" {
			d.problem("task.prompt", task, "missing for an llm task")
		}
		d.checkLLM(t)
	case "exec":
		if len(t.Argv) == 0 {
			d.problem("task.argv", task, "missing or empty for an exec task (a list: program, then arguments)")
		} else if t.Argv[0] == "" {
			d.problem("task.argv[0]", []string{"task.argv"}, "the program name is empty")
		}
		for _, class := range []struct {
			name  string
			codes []int
		}{{"retryable", t.ExitCodes.Retryable}, {"fatal", t.ExitCodes.Fatal}, {"item", t.ExitCodes.Item}} {
			for i, c := range class.codes {
				if c < 0 || c > 255 {
					d.problem(fmt.Sprintf("task.exit_codes.%s[%d]", class.name, i), nil, "%d is not an exit code (want 0-255)", c)
				}
			}
		}
	case "http":
		if t.URL == "" {
			d.problem("task.url", task, "missing for an http task")
		}
		d.oneOf("task.method", t.Method, methods)
	}
	d.checkTemplates(t)
}

// checkCloud checks the settings of the providers that authenticate with
// their cloud's credentials: bedrock's region, vertex's project and
// location (task.region), and anthropic's when task.project puts it on
// Vertex AI (Claude on Vertex AI).
func (d *decoder) checkCloud(t *Task) {
	switch {
	case t.Provider == "bedrock":
		if d.isSet("task.api_key") {
			d.problem("task.api_key", nil, "bedrock signs its calls with AWS credentials from the SDK's chain ($AWS_ACCESS_KEY_ID, AWS_PROFILE, SSO, the instance role), not an api_key")
		}
	case t.Provider == "vertex":
		if d.isSet("task.api_key") {
			d.problem("task.api_key", nil, "vertex authenticates with Google credentials (application default credentials: $GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, the metadata server), not an api_key; the Gemini API's key is provider gemini's")
		}
	case t.ClaudeOnVertex(t.Provider):
		if d.isSet("task.api_key") {
			d.problem("task.api_key", nil, "Claude on Vertex AI (provider anthropic with task.project) authenticates with Google credentials (application default credentials: $GOOGLE_APPLICATION_CREDENTIALS, gcloud auth application-default login, the metadata server), not an api_key; drop task.project to call Anthropic's API with the key")
		}
		if t.Region == "" && d.vertexLocationFromEnv() == "" {
			d.problem("task.region", []string{"task.project"}, "missing: Claude on Vertex AI needs a location (us-east5, europe-west1, global…), or $GOOGLE_CLOUD_LOCATION")
		}
	default:
		if d.isSet("task.region") {
			d.problem("task.region", nil, "is for providers bedrock and vertex, and anthropic with task.project (Claude on Vertex AI) only")
		}
	}
	if d.isSet("task.region") {
		d.checkRegion("task.region", t.cloud(t.Provider), t.Region)
	}
}

// checkProject refuses a task.project that no task or route can use:
// it is Vertex AI's, for provider vertex and for anthropic (which it puts
// on Vertex AI).
func (d *decoder) checkProject(s *Spec) {
	if !d.isSet("task.project") || s.Task.Type != "llm" {
		return
	}
	google := func(provider string) bool { return provider == "vertex" || provider == "anthropic" }
	if google(s.Task.Provider) || slices.ContainsFunc(s.Routes, func(r Route) bool { return google(r.Provider) }) {
		return
	}
	d.problem("task.project", nil, "is for provider vertex, and anthropic on Vertex AI, only")
}

// ClaudeOnVertex reports whether a task or route of provider calls
// Claude on Vertex AI rather than Anthropic's API: provider anthropic in
// a task with a Google Cloud project.
func (t *Task) ClaudeOnVertex(provider string) bool {
	return provider == "anthropic" && t.Project != ""
}

// VertexLocationEnv lists the variables that name Vertex AI's location
// when task.region does not, the first set wins: Google's, then Anthropic's
// Vertex SDKs'.
var VertexLocationEnv = []string{"GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION"}

// vertexLocationFromEnv is the location the spec's environment names, ""
// when none.
func (d *decoder) vertexLocationFromEnv() string {
	for _, name := range VertexLocationEnv {
		if v, ok := d.env(name); ok && v != "" {
			return v
		}
	}
	return ""
}

// cloud is the cloud whose regions a task's or route's provider takes:
// "aws" for bedrock, "gcp" for vertex and Claude on Vertex AI, "" for
// the others.
func (t *Task) cloud(provider string) string {
	switch {
	case provider == "bedrock":
		return "aws"
	case provider == "vertex", t.ClaudeOnVertex(provider):
		return "gcp"
	}
	return ""
}

// Region names as the clouds spell them: AWS's us-east-1, us-gov-west-1;
// Google Cloud's us-central1, europe-west4, the multi-regions us and eu,
// and global.
var (
	awsRegion    = lazyregexp.New(`^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-[0-9]+$`)
	vertexRegion = lazyregexp.New(`^(global|us|eu|[a-z]+-[a-z]+[0-9]+)$`)
)

// checkRegion refuses a region that cloud cannot have: a Vertex location
// given to Bedrock, a typo, an AWS region given to Vertex. Other
// providers' regions ("" cloud) are labels and not checked.
func (d *decoder) checkRegion(path, cloud, region string) {
	switch {
	case cloud == "aws" && !awsRegion().MatchString(region):
		d.problem(path, nil, "%q is not an AWS region (us-east-1, eu-west-3, ap-southeast-2…)", region)
	case cloud == "gcp" && !vertexRegion().MatchString(region):
		d.problem(path, nil, "%q is not a Vertex AI location (us-central1, europe-west4, global…)", region)
	}
}

// checkLLM checks the llm task's sampling, reasoning and provider keys.
func (d *decoder) checkLLM(t *Task) {
	d.checkTools(t)
	if t.MaxTokens < 1 {
		d.problem("task.max_tokens", nil, "must be at least 1, got %d", t.MaxTokens)
	}
	if t.MaxTokensCeiling < 0 || t.MaxTokensCeiling > 0 && t.MaxTokensCeiling < t.MaxTokens {
		d.problem("task.max_tokens_ceiling", nil, "must be at least task.max_tokens (%d), got %d", t.MaxTokens, t.MaxTokensCeiling)
	}
	if t.Temperature != nil && (*t.Temperature < 0 || *t.Temperature > 2) {
		d.problem("task.temperature", nil, "must be between 0 and 2, got %g", *t.Temperature)
	}
	if t.TopP != nil && (*t.TopP < 0 || *t.TopP > 1) {
		d.problem("task.top_p", nil, "must be between 0 and 1, got %g", *t.TopP)
	}
	for i, stop := range t.Stop {
		if stop == "" {
			d.problem(fmt.Sprintf("task.stop[%d]", i), nil, "a stop sequence cannot be empty")
		}
	}
	anthropic := t.Provider == "anthropic"
	if !anthropic && len(t.Stop) > 4 {
		d.problem("task.stop", nil, "OpenAI takes at most 4 stop sequences, got %d", len(t.Stop))
	}
	if anthropic && t.Seed != nil {
		d.problem("task.seed", nil, "anthropic has no seed")
	}
	allowed := efforts
	if anthropic {
		allowed = efforts[1:]
	}
	d.oneOf("task.reasoning_effort", t.ReasoningEffort, allowed)
	if d.isSet("task.thinking_budget") {
		switch {
		case !anthropic:
			d.problem("task.thinking_budget", nil, "extended thinking is anthropic's; OpenAI's reasoning models take task.reasoning_effort")
		case t.ThinkingBudget < 1024:
			d.problem("task.thinking_budget", nil, "must be at least 1024 (anthropic's minimum), got %d", t.ThinkingBudget)
		case t.MaxTokens > 0 && t.ThinkingBudget >= t.MaxTokens:
			d.problem("task.thinking_budget", nil, "must be less than task.max_tokens (%d), which holds the thinking and the answer", t.MaxTokens)
		case t.Temperature != nil && *t.Temperature != 1:
			d.problem("task.temperature", nil, "extended thinking takes no temperature other than 1")
		}
	}
	d.checkStore(t)
	if t.CachePrompt && !anthropic {
		d.problem("task.cache_prompt", nil, "is anthropic's; OpenAI caches long prompts by itself (the cached tokens are counted all the same)")
	}
	if d.isSet("task.base_url") {
		d.checkBaseURL("task.base_url", t.BaseURL)
	}
	if t.Provider == "azure" {
		if t.BaseURL == "" {
			d.problem("task.base_url", []string{"task"}, "missing for azure: the resource's endpoint, https://NAME.openai.azure.com")
		}
	} else {
		for _, k := range []string{"task.api_version", "task.azure_ad_token"} {
			if d.isSet(k) {
				d.problem(k, nil, "is for provider azure only")
			}
		}
	}
	if t.APIKey != "" && t.AzureADToken != "" {
		d.problem("task.azure_ad_token", nil, "give task.api_key or task.azure_ad_token, not both")
	}
	d.checkCloud(t)
	for name := range t.Headers {
		if !isToken(name) {
			d.problem("task.headers."+name, nil, "%s is not a valid header name", quote(name))
		}
	}
}

// checkStore refuses task.store where no stored completions are: on a
// provider that keeps none, on the in-process mock (which dies with the
// process, and what it stored with it), and on a task with no tools
// (only an agent's steps look stored answers up).
func (d *decoder) checkStore(t *Task) {
	if !t.Store {
		return
	}
	switch {
	case t.Provider == "mock":
		d.problem("task.store", nil, "the in-process mock dies with the process, and what it stored with it: run `tenax mock` and point provider openai's base_url at it")
	case t.Provider != "openai" && t.Provider != "azure":
		d.problem("task.store", nil, "%s keeps no stored completions to look answers up in; only openai's and azure's chat completions do: remove task.store", t.Provider)
	case len(t.Tools) == 0:
		d.problem("task.store", nil, "is for agent items (task.tools): their model calls are the ones a resumed run looks up")
	}
}

// reasoningModel reports whether an OpenAI model reasons before it answers
// (o1, o3, o4, gpt-5 and their snapshots), as task/llm decides it.
func reasoningModel(model string) bool {
	for _, p := range []string{"o1", "o3", "o4", "gpt-5"} {
		if model == p || strings.HasPrefix(model, p+"-") {
			return true
		}
	}
	return false
}

// isToken reports whether s is an RFC 9110 token, as header names must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}

func (d *decoder) checkValidate(s *Spec) {
	v := &s.Validate
	if v.Regex != "" {
		re, err := regexp.Compile(v.Regex)
		if err != nil {
			d.problem("validate.regex", nil, "%s", regexpMessage(err))
		}
		v.Regexp = re
	}
	if d.isSet("validate.command") && (len(v.Command) == 0 || v.Command[0] == "") {
		d.problem("validate.command", nil, "the program name is empty")
	}
	for i := range s.Heal.Hints {
		h := &s.Heal.Hints[i]
		p := fmt.Sprintf("heal.hints[%d]", i)
		if h.Match == "" {
			d.problem(p+".match", []string{p}, "missing (a regex matched against the error)")
			continue
		}
		re, err := regexp.Compile(h.Match)
		if err != nil {
			d.problem(p+".match", nil, "%s", regexpMessage(err))
			continue
		}
		h.Regexp = re
		if h.Hint == "" {
			d.problem(p+".hint", []string{p}, "missing (the advice to give when match matches)")
		}
	}
}

// regexpMessage shortens a regexp error to what is wrong.
func regexpMessage(err error) string {
	return "invalid regex: " + strings.TrimPrefix(err.Error(), "error parsing regexp: ")
}

func (d *decoder) checkPolicies(s *Spec) {
	atLeast := func(path string, v, least int) {
		if v < least {
			d.problem(path, nil, "must be at least %d, got %d", least, v)
		}
	}
	atLeast("heal.max_attempts", s.Heal.MaxAttempts, 0)
	atLeast("heal.max_error_attempts", s.Heal.MaxErrorAttempts, 1)
	atLeast("heal.max_same_output", s.Heal.MaxSameOutput, 0)
	if s.Cache.MaxBytes < 0 {
		d.problem("cache.max_bytes", nil, "must not be negative, got %d (0 is no bound)", s.Cache.MaxBytes)
	}

	r := s.Retry
	atLeast("retry.max_attempts", r.MaxAttempts, 1)
	if r.Backoff.Multiplier < 1 {
		d.problem("retry.backoff.multiplier", nil, "must be at least 1, got %g", r.Backoff.Multiplier)
	}
	d.oneOf("retry.backoff.jitter", r.Backoff.Jitter, jitters)
	if r.Backoff.Max > 0 && r.Backoff.Min > r.Backoff.Max {
		d.problem("retry.backoff.min", nil, "%s is more than retry.backoff.max (%s)", r.Backoff.Min, r.Backoff.Max)
	}

	b := s.Breaker
	atLeast("breaker.threshold", b.Threshold, 1)
	if b.FailureRate < 0 || b.FailureRate > 1 {
		d.problem("breaker.failure_rate", nil, "must be between 0 and 1, got %g", b.FailureRate)
	}
	atLeast("breaker.window", b.Window, 0)
	d.oneOf("breaker.on_trip", b.OnTrip, onTrips)
	atLeast("breaker.probes", b.Probes, 1)
	for i, c := range b.Count {
		p := fmt.Sprintf("breaker.count[%d]", i)
		if c == "" {
			d.problem(p, nil, "empty class (want %s)", orList(countedClasses))
			continue
		}
		d.oneOf(p, c, countedClasses)
	}

	c := s.Concurrency
	atLeast("concurrency.max", c.Max, 1)
	if c.Max > MaxConcurrency {
		d.problem("concurrency.max", nil, "%d is more than tenax runs at once (at most %d); a limit this high protects nothing — use rate_limit to bound the calls", c.Max, MaxConcurrency)
	}
	atLeast("concurrency.initial", c.Initial, 0)
	if c.Initial > c.Max && c.Max >= 1 {
		d.problem("concurrency.initial", nil, "%d is more than concurrency.max (%d)", c.Initial, c.Max)
	}
	atLeast("rate_limit.requests_per_minute", s.RateLimit.RequestsPerMinute, 0)
	atLeast("rate_limit.tokens_per_minute", s.RateLimit.TokensPerMinute, 0)
	atLeast("pacing.batch_size", s.Pacing.BatchSize, 0)
	atLeast("checkpoint.flush_every", s.Checkpoint.FlushEvery, 1)
	if s.Budget.MaxCostUSD < 0 {
		d.problem("budget.max_cost_usd", nil, "must not be negative, got %g", s.Budget.MaxCostUSD)
	}
	if s.Budget.MaxTokens < 0 {
		d.problem("budget.max_tokens", nil, "must not be negative, got %d", s.Budget.MaxTokens)
	}
	atLeast("checkin_every", s.CheckinEvery, 0)
	for model, p := range s.Prices {
		for key, v := range map[string]float64{"input_per_mtok": p.InputPerMTok, "output_per_mtok": p.OutputPerMTok,
			"cached_input_per_mtok": p.CachedInputPerMTok, "cache_write_per_mtok": p.CacheWritePerMTok} {
			if v < 0 {
				d.problem(join(join("prices", model), key), nil, "must not be negative, got %g", v)
			}
		}
	}
}

// checkClassify compiles the classification rules, pointing each problem
// at the key it is about.
func (d *decoder) checkClassify(s *Spec) {
	fieldKeys := map[string]string{"message": "match", "status": "status", "code": "code", "exit_code": "exit_code", "class": "class"}
	for i := range s.Classify {
		c := &s.Classify[i]
		p := fmt.Sprintf("classify[%d]", i)
		rule, err := classify.NewRule(c.Name, c.Match, c.Status, c.Code, c.ExitCode, c.Class)
		if err != nil {
			var re *classify.RuleError
			if !errors.As(err, &re) {
				d.problem(p, nil, "%v", err)
				continue
			}
			msg := strings.TrimPrefix(re.Err.Error(), "classify: ")
			if re.Field == "message" {
				msg = regexpMessage(re.Err)
			}
			key := p
			if k, ok := fieldKeys[re.Field]; ok {
				key = p + "." + k
			}
			sugg := ""
			if re.Field == "class" && c.Class != "" {
				sugg = suggest(c.Class, []string{"retryable", "fatal", "item", "invalid", "canceled"})
			}
			d.errorf(d.at(key, p), sugg, "%s: %s", key, msg)
			continue
		}
		c.Rule = rule
	}
}

func (d *decoder) checkMock(s *Spec) {
	m := s.Mock
	if m.Latency.Min > m.Latency.Max {
		d.problem("mock.latency.min", []string{"mock.latency"}, "%s is more than mock.latency.max (%s)", m.Latency.Min, m.Latency.Max)
	}
	if m.RPM < 0 {
		d.problem("mock.rpm", nil, "must not be negative, got %d", m.RPM)
	}
	if m.TPM < 0 {
		d.problem("mock.tpm", nil, "must not be negative, got %d", m.TPM)
	}
	d.checkMockErrors("mock.errors", m.Errors)
}

// checkMockErrors checks the fault fractions at path (mock.errors, or a
// mock route's).
func (d *decoder) checkMockErrors(path string, e MockErrors) {
	sum := 0.0
	for _, f := range []struct {
		key string
		v   float64
	}{
		{"rate_limit", e.RateLimit}, {"server", e.Server}, {"overloaded", e.Overloaded}, {"timeout", e.Timeout},
		{"reset", e.Reset}, {"malformed", e.Malformed}, {"invalid_output", e.InvalidOutput}, {"auth", e.Auth},
		{"quota", e.Quota}, {"spend_limit", e.SpendLimit}, {"payment_required", e.PaymentRequired},
		{"forbidden", e.Forbidden}, {"too_large", e.TooLarge}, {"context_length", e.ContextLength},
		{"content_filter", e.ContentFilter}, {"refusal", e.Refusal}, {"truncated", e.Truncated},
	} {
		if f.v < 0 || f.v > 1 {
			d.problem(path+"."+f.key, nil, "must be a fraction between 0 and 1, got %g", f.v)
		}
		sum += f.v
	}
	if sum > 1+1e-9 {
		d.problem(path, nil, "the fractions add up to %g, more than 1", sum)
	}
}

// resolvePaths makes the spec's relative paths absolute against its
// directory: the input, the schema file, the cache and working
// directories, and a command's program when it starts with ./ or ../ (a
// bare name is looked up on PATH, as a shell would).
func (d *decoder) resolvePaths(s *Spec) {
	abs := s.abs
	program := func(argv []string) {
		if len(argv) > 0 && isRelativeProgram(argv[0]) {
			argv[0] = abs(argv[0])
		}
	}
	s.Input.Path = abs(s.Input.Path)
	s.Validate.JSONSchema.Path = abs(s.Validate.JSONSchema.Path)
	s.Cache.Dir = abs(s.Cache.Dir)
	s.Task.Dir = abs(s.Task.Dir)
	program(s.Task.Argv)
	program(s.Validate.Command)
}

// isRelativeProgram reports whether argv[0] names a file relative to the
// current directory.
func isRelativeProgram(p string) bool {
	return strings.HasPrefix(p, "./") || strings.HasPrefix(p, "../") ||
		filepath.Separator != '/' && (strings.HasPrefix(p, `.\`) || strings.HasPrefix(p, `..\`))
}
