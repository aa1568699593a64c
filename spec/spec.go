package spec

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

// Spec is a resolved job spec: every ${VAR} expanded, every default
// applied, every relative path made absolute against the spec file's
// directory, every regex compiled. Its fields are plain values that the
// job package turns into tasks, policies and the engine's configuration.
type Spec struct {
	// Name names the job; by default the spec file's base name without
	// its extension.
	Name string `yaml:"name"`
	// Input is the file of work items (the CLI's --input may replace it).
	Input Input `yaml:"input"`
	// Task is what runs for each item.
	Task Task `yaml:"task"`
	// Validate checks each output; a failed check starts the heal loop.
	Validate Validate `yaml:"validate"`
	// Heal bounds the re-asks after invalid output.
	Heal Heal `yaml:"heal"`
	// Retry is the retry policy for retryable failures.
	Retry Retry `yaml:"retry"`
	// Breaker is the circuit breaker's configuration.
	Breaker Breaker `yaml:"breaker"`
	// Concurrency bounds the attempts in flight.
	Concurrency Concurrency `yaml:"concurrency"`
	// RateLimit paces calls to the provider's limits.
	RateLimit RateLimit `yaml:"rate_limit"`
	// Pacing adds batches and pauses, for those who need them.
	Pacing Pacing `yaml:"pacing"`
	// Checkpoint says how often results are made durable.
	Checkpoint Checkpoint `yaml:"checkpoint"`
	// Budget stops dispatch when the job has spent this much.
	Budget Budget `yaml:"budget"`
	// Cache is the LLM response cache.
	Cache Cache `yaml:"cache"`
	// CheckinEvery pauses every N finished items on a terminal to show
	// the latest outputs; 0 never pauses.
	CheckinEvery int `yaml:"checkin_every"`
	// Classify holds the user's classification rules, evaluated before
	// the defaults.
	Classify []ClassifyRule `yaml:"classify"`
	// Prices gives the cost of models the task does not know, by model
	// name.
	Prices map[string]Price `yaml:"prices"`
	// Mock configures the simulated provider (task.provider: mock).
	Mock Mock `yaml:"mock"`
	// Batch configures provider batch mode (task.mode: batch).
	Batch Batch `yaml:"batch"`
	// Routes are the deployments an llm job may call (docs/routes.md);
	// none is the task's own provider, model and key alone.
	Routes []Route `yaml:"routes"`
	// Routing is how a call chooses among the routes of one tier:
	// "weighted" (default), "least_loaded", "cost" or "latency".
	Routing string `yaml:"routing"`
	// Fallbacks says which failures move an item to another route.
	Fallbacks Fallbacks `yaml:"fallbacks"`

	path    string
	dir     string
	secrets []string
	// valuePos and keyPos are where each written value and key is, by
	// its path, for ErrorAt.
	valuePos, keyPos map[string]pos
	// placeholders are the {name}s of the task's templates.
	placeholders []Placeholder
}

// Input names the input file. In YAML it is a path string or a mapping.
type Input struct {
	// Path is the input file, absolute once resolved; "" when the spec
	// leaves the input to the command line.
	Path string `yaml:"path"`
	// Format is "jsonl", "csv" or "txt"; by default from Path's extension.
	Format string `yaml:"format"`
	// OnBadLine is "fail" (default: refuse to start) or "record" (record a
	// bad line's item as failed and go on).
	OnBadLine string `yaml:"on_bad_line"`
}

// Task is the task to run for each item. Type selects which of the other
// fields apply: the llm, exec or http ones (see the field comments).
type Task struct {
	// Type is "llm", "exec" or "http".
	Type string `yaml:"type"`

	// Provider (llm) is "openai" (any OpenAI-compatible base_url),
	// "anthropic", "azure", "bedrock", "gemini", "vertex" or "mock".
	Provider string `yaml:"provider"`
	// BaseURL (llm) replaces the provider's default endpoint; for azure it
	// is the resource's endpoint, required.
	BaseURL string `yaml:"base_url"`
	// APIKey (llm) authenticates the calls; usually ${SOME_API_KEY}. It is
	// always treated as a secret.
	APIKey string `yaml:"api_key"`
	// Model (llm) is the model name.
	Model string `yaml:"model"`
	// System (llm) is the system prompt template.
	System string `yaml:"system"`
	// Prompt (llm) is the user prompt template, rendered from the item's
	// fields.
	Prompt string `yaml:"prompt"`
	// MaxTokens (llm) bounds the answer, reasoning and thinking included;
	// 0 (unset) lets the task choose: 1024, 16384 for OpenAI's reasoning
	// models, thinking_budget + 1024 with thinking on.
	MaxTokens int `yaml:"max_tokens"`
	// MaxTokensCeiling (llm) lets a re-ask after an answer cut off at
	// max_tokens double max_tokens, up to this; 0 never raises it.
	MaxTokensCeiling int `yaml:"max_tokens_ceiling"`
	// Temperature (llm) is the sampling temperature; nil leaves the
	// provider's default.
	Temperature *float64 `yaml:"temperature"`
	// TopP (llm) is nucleus sampling's top_p, 0 to 1.
	TopP *float64 `yaml:"top_p"`
	// Stop (llm) lists stop sequences.
	Stop []string `yaml:"stop"`
	// Seed (llm, OpenAI wire) asks for repeatable sampling.
	Seed *int64 `yaml:"seed"`
	// ReasoningEffort (llm) is OpenAI's reasoning_effort (minimal, low,
	// medium, high) or Anthropic's effort (low, medium, high).
	ReasoningEffort string `yaml:"reasoning_effort"`
	// ThinkingBudget (llm, anthropic) turns on extended thinking with this
	// many tokens (at least 1024).
	ThinkingBudget int `yaml:"thinking_budget"`
	// CachePrompt (llm, anthropic) marks the system prompt for the
	// provider's prompt cache.
	CachePrompt bool `yaml:"cache_prompt"`
	// APIVersion (llm, azure) is Azure OpenAI's api-version; default
	// 2024-10-21.
	APIVersion string `yaml:"api_version"`
	// AzureADToken (llm, azure) is an Entra ID access token, sent as a
	// bearer token instead of an api-key; always a secret.
	AzureADToken string `yaml:"azure_ad_token"`
	// Region (llm, bedrock, vertex, or anthropic with a project) is the
	// AWS region of Bedrock's endpoint, empty meaning the AWS SDK's
	// ($AWS_REGION, the profile's region); or Vertex AI's Google Cloud
	// location ("us-central1", "global"), empty meaning
	// $GOOGLE_CLOUD_LOCATION (for Claude, also $CLOUD_ML_REGION).
	Region string `yaml:"region"`
	// Project (llm, vertex or anthropic) is the Google Cloud project of
	// Vertex AI; for vertex empty means $GOOGLE_CLOUD_PROJECT. On provider
	// anthropic a project is what selects Claude on Vertex AI (Google
	// credentials, task.region its location) instead of Anthropic's API.
	Project string `yaml:"project"`
	// ExtraBody (llm) adds fields to every request body (vLLM's or
	// Ollama's own options).
	ExtraBody Object `yaml:"extra_body"`
	// Mode (llm) is "online" (the default, also when empty: one call per
	// attempt) or "batch" (the provider's batch API, in waves; see Batch).
	Mode string `yaml:"mode"`
	// Tools (llm) are the tools the model may call: with them the task
	// runs as an agent, model and tool calls over many steps
	// (docs/agents.md).
	Tools []Tool `yaml:"tools"`
	// MaxSteps (llm with tools) bounds the model's answers per attempt;
	// 0 (unset) is 10.
	MaxSteps int `yaml:"max_steps"`
	// MaxConsecutiveErrors (llm with tools) fails the item after this
	// many steps in a row fed errors back to the model; 0 (unset) is 3.
	MaxConsecutiveErrors int `yaml:"max_consecutive_errors"`
	// MaxToolResultBytes (llm with tools) cuts every tool result to this
	// many bytes before it is recorded and sent; 0 (unset) is 32768.
	MaxToolResultBytes int `yaml:"max_tool_result_bytes"`
	// KeepWholeSteps (llm with tools) is how many of the latest steps are
	// sent with their tool results whole; 0 (unset) is 3.
	KeepWholeSteps int `yaml:"keep_whole_steps"`
	// OldToolResultBytes (llm with tools) cuts the tool results of steps
	// older than KeepWholeSteps to this many bytes; 0 (unset) is 1024.
	OldToolResultBytes int `yaml:"old_tool_result_bytes"`
	// Store (llm with tools; openai, azure) sends each of an agent's
	// model calls with store: true and metadata naming the call, so that
	// the provider keeps the answer (OpenAI's stored chat completions)
	// and a run resumed after a kill reads back an answer that arrived
	// as the process died, instead of paying for it again
	// (docs/agents.md, "Stored answers"). It keeps the items'
	// conversations at the provider: off unless set.
	Store bool `yaml:"store"`

	// Argv (exec) is the command as an argv template, never run through a
	// shell.
	Argv []string `yaml:"argv"`
	// Stdin (exec) is a template written to the command's stdin.
	Stdin string `yaml:"stdin"`
	// Env (exec) adds variables to the command's environment.
	Env map[string]string `yaml:"env"`
	// ExitCodes (exec) overrides the class of exit codes.
	ExitCodes ExitCodes `yaml:"exit_codes"`
	// Dir (exec) is the command's working directory, absolute once
	// resolved; "" is tenax's own.
	Dir string `yaml:"dir"`
	// AllowOptionValues (exec) lets item values start an argument with
	// "-", which the program would read as an option; by default such an
	// item fails unless the value comes after a "--" argument.
	AllowOptionValues bool `yaml:"allow_option_values"`

	// Method (http) is the request method; default GET, or POST when a
	// body is set.
	Method string `yaml:"method"`
	// URL (http) is the request URL template.
	URL string `yaml:"url"`
	// Headers (http, llm) are header templates for an http task, and
	// headers added to every request of an llm task.
	Headers map[string]string `yaml:"headers"`
	// Body (http) is the request body template.
	Body string `yaml:"body"`

	// Output is "text" or "json": how the task's answer becomes the
	// record's output. Default json for an llm task validated by a JSON
	// Schema, text otherwise.
	Output string `yaml:"output"`
	// Timeout bounds one attempt; default 60s for llm, 30s for http, none
	// (0) for exec.
	Timeout time.Duration `yaml:"timeout"`
	// MaxAnswerBytes bounds a successful answer: a response body after
	// decompression, a command's stdout; 0 (unset) is the tasks' 16 MiB.
	// A longer one fails the item (class item).
	MaxAnswerBytes int64 `yaml:"max_answer_bytes"`
}

// ExitCodes lists exit codes of an exec task by the class they mean,
// overriding the defaults (75 retryable, 126 and 127 fatal).
type ExitCodes struct {
	Retryable []int `yaml:"retryable"`
	Fatal     []int `yaml:"fatal"`
	Item      []int `yaml:"item"`
}

// Validate configures the output checks; any that is set must pass.
type Validate struct {
	// JSONSchema is a schema file or an inline schema.
	JSONSchema Schema `yaml:"json_schema"`
	// Regex must match the output text; Regexp is its compiled form.
	Regex  string         `yaml:"regex"`
	Regexp *regexp.Regexp `yaml:"-"`
	// Command gets the output on stdin; a non-zero exit means invalid,
	// with its stderr as the error. In YAML a list, or one string naming
	// the program alone.
	Command Command `yaml:"command"`
	// Timeout bounds the command; default 30s.
	Timeout time.Duration `yaml:"timeout"`
}

// Schema is a JSON Schema given by file or inline. In YAML it is a path
// string or a mapping (the schema itself, written in YAML).
type Schema struct {
	// Path is the schema file, absolute once resolved.
	Path string
	// Inline is an inline schema as JSON.
	Inline json.RawMessage

	inline any // the inline schema with its key order, for Redacted
}

// IsSet reports whether a schema was given.
func (s Schema) IsSet() bool { return s.Path != "" || len(s.Inline) > 0 }

// Object is a JSON object written as a YAML mapping (task.extra_body).
type Object struct {
	// JSON is the object as JSON; nil when unset.
	JSON json.RawMessage

	inline any // the mapping with its key order, for Redacted
}

// Command is an argv. In YAML it may be a list or a single string, which
// is the program alone (never split, never run through a shell).
type Command []string

// Heal bounds the heal loop (see package heal).
type Heal struct {
	// MaxAttempts is the re-ask budget per item in all; default 8.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxErrorAttempts is the re-ask budget per error fingerprint;
	// default 5.
	MaxErrorAttempts int `yaml:"max_error_attempts"`
	// MaxSameOutput is the most re-asks in a row about one byte-identical
	// invalid answer before the item stops as stuck; default 1 (the
	// second re-ask about the same answer is stuck); 0 turns the rule off
	// (the other budgets still bound the item).
	MaxSameOutput int `yaml:"max_same_output"`
	// Hints are added to the feedback when their regex matches the error.
	Hints []Hint `yaml:"hints"`
}

// Hint is a piece of advice given to the model when an error matches.
type Hint struct {
	// Match is the regex; Regexp its compiled form.
	Match  string         `yaml:"match"`
	Regexp *regexp.Regexp `yaml:"-"`
	// Hint is the advice.
	Hint string `yaml:"hint"`
}

// Retry is the retry policy.
type Retry struct {
	// MaxAttempts is the most consecutive retryable failures of an item;
	// default 5.
	MaxAttempts int `yaml:"max_attempts"`
	// MaxElapsed bounds an item's wall time; 0 (default) is no bound.
	MaxElapsed time.Duration `yaml:"max_elapsed"`
	// MaxHint caps server retry hints; default 2m.
	MaxHint time.Duration `yaml:"max_hint"`
	// Backoff is the delay schedule between retries.
	Backoff Backoff `yaml:"backoff"`
}

// Backoff is the delay before retry n: min(max, base*multiplier^(n-1)),
// jittered, then bounded by Min and Max.
type Backoff struct {
	Base       time.Duration `yaml:"base"`       // default 1s
	Multiplier float64       `yaml:"multiplier"` // default 2
	Min        time.Duration `yaml:"min"`        // default 0
	Max        time.Duration `yaml:"max"`        // default 60s
	// Jitter is "proportional" (default), "full", "equal", "decorrelated"
	// or "none".
	Jitter string `yaml:"jitter"`
}

// Breaker configures the circuit breaker.
type Breaker struct {
	// Threshold is the consecutive counted failures that open it;
	// default 5.
	Threshold int `yaml:"threshold"`
	// FailureRate (0..1) also opens it when the window's failure rate
	// reaches it; 0 (default) disables the rate rule.
	FailureRate float64 `yaml:"failure_rate"`
	// Window is the number of outcomes the rate is computed over; default
	// 20 when FailureRate is set.
	Window int `yaml:"window"`
	// OnTrip is "prompt", "abort" or "wait"; "" (default) prompts on a
	// terminal and aborts otherwise.
	OnTrip string `yaml:"on_trip"`
	// ResetTimeout is how long "wait" waits before half-open; default 60s.
	ResetTimeout time.Duration `yaml:"reset_timeout"`
	// Probes is the attempts let through when half-open; default 1.
	Probes int `yaml:"probes"`
	// Count lists the classes of final failures that count toward the
	// breaker (retryable, fatal, item, invalid); empty (default) counts
	// them all. [fatal, retryable] lets a run of bad items go on while a
	// broken setup or an outage still stops it.
	Count []string `yaml:"count"`
}

// MaxConcurrency is the highest concurrency.max a spec may set: ten
// thousand calls in flight is beyond any provider's per-key limit and any
// one machine's sockets, and a higher number is a typo that would cost a
// goroutine per slot.
const MaxConcurrency = 10_000

// Concurrency bounds the attempts in flight.
type Concurrency struct {
	// Max is the most attempts in flight; default 32 for llm tasks, 8
	// otherwise.
	Max int `yaml:"max"`
	// Adaptive starts low and finds the provider's real limit.
	Adaptive bool `yaml:"adaptive"`
	// Initial is the adaptive start; 0 (default) lets the engine choose.
	Initial int `yaml:"initial"`
}

// RateLimit caps the call rate; 0 is no limit.
type RateLimit struct {
	RequestsPerMinute int `yaml:"requests_per_minute"`
	TokensPerMinute   int `yaml:"tokens_per_minute"`
}

// Pacing runs items in batches with pauses; all zero (default) is one
// continuous pipeline.
type Pacing struct {
	BatchSize  int           `yaml:"batch_size"`
	BatchDelay time.Duration `yaml:"batch_delay"`
	ItemDelay  time.Duration `yaml:"item_delay"`
}

// Checkpoint says how often results are flushed and fsynced.
type Checkpoint struct {
	FlushEvery    int           `yaml:"flush_every"`    // default 100 records
	FlushInterval time.Duration `yaml:"flush_interval"` // default 1s
}

// Budget stops dispatch when reached; 0 is no budget.
type Budget struct {
	MaxCostUSD float64 `yaml:"max_cost_usd"`
	MaxTokens  int64   `yaml:"max_tokens"`
}

// Cache is the LLM response cache.
type Cache struct {
	// Enabled defaults to true for llm tasks, false otherwise.
	Enabled bool `yaml:"enabled"`
	// Dir is the cache directory, absolute once resolved; "" is the job
	// home's cache directory.
	Dir string `yaml:"dir"`
	// MaxBytes bounds the cache's log (DefaultCacheMaxBytes unless set);
	// past it the oldest entries are evicted. 0 is no bound.
	MaxBytes int64 `yaml:"max_bytes"`
}

// DefaultCacheMaxBytes is cache.max_bytes unless a spec sets it: 1 GiB,
// some 200,000 answers of a few kilobytes, or 6 million of the quick
// start's.
const DefaultCacheMaxBytes = 1 << 30

// ClassifyRule is a user classification rule as written in the spec; Rule
// is its compiled form (see classify.NewRule).
type ClassifyRule struct {
	Name     string        `yaml:"name"`
	Match    string        `yaml:"match"`
	Status   []int         `yaml:"status"`
	Code     []string      `yaml:"code"`
	ExitCode []int         `yaml:"exit_code"`
	Class    string        `yaml:"class"`
	Rule     classify.Rule `yaml:"-"`
}

// Price is a model's price in USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
	// CachedInputPerMTok prices input read from the provider's prompt
	// cache; 0 means input_per_mtok.
	CachedInputPerMTok float64 `yaml:"cached_input_per_mtok"`
	// CacheWritePerMTok prices input written to Anthropic's prompt cache;
	// 0 means input_per_mtok.
	CacheWritePerMTok float64 `yaml:"cache_write_per_mtok"`
}

// Mock configures the simulated provider.
type Mock struct {
	// Latency of each answer; default 20ms.
	Latency Latency `yaml:"latency"`
	// Seed makes the simulation repeatable; default 42.
	Seed int64 `yaml:"seed"`
	// RPM and TPM are rate limits per model and dialect, refilled
	// continuously as the providers refill theirs; 0 is unlimited.
	RPM int `yaml:"rpm"`
	TPM int `yaml:"tpm"`
	// Errors are the fractions of calls that fail, by kind.
	Errors MockErrors `yaml:"errors"`
	// LogRequests, when set, is a file (relative to the spec) that every
	// request and answer is appended to, as JSON lines with API keys
	// redacted: what the job really sent, re-asks included.
	LogRequests string `yaml:"log_requests"`
	// Batch configures the simulated batch APIs.
	Batch MockBatch `yaml:"batch"`
}

// Latency is a uniform range; in YAML one duration (Min = Max) or a
// mapping {min, max}.
type Latency struct {
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// MockErrors are fractions (0..1, summing to at most 1) of calls that fail
// with each kind of error.
type MockErrors struct {
	RateLimit     float64 `yaml:"rate_limit"`
	Server        float64 `yaml:"server"`
	Overloaded    float64 `yaml:"overloaded"`
	Timeout       float64 `yaml:"timeout"`
	Reset         float64 `yaml:"reset"`
	Malformed     float64 `yaml:"malformed"`
	InvalidOutput float64 `yaml:"invalid_output"`
	Auth          float64 `yaml:"auth"`
	// The provider's other refusals and broken answers (see mock.Faults).
	Quota           float64 `yaml:"quota"`
	SpendLimit      float64 `yaml:"spend_limit"`
	PaymentRequired float64 `yaml:"payment_required"`
	Forbidden       float64 `yaml:"forbidden"`
	TooLarge        float64 `yaml:"too_large"`
	ContextLength   float64 `yaml:"context_length"`
	ContentFilter   float64 `yaml:"content_filter"`
	Refusal         float64 `yaml:"refusal"`
	Truncated       float64 `yaml:"truncated"`
}

// Path returns the spec file's path as given to Load (the name given to
// Parse).
func (s *Spec) Path() string { return s.path }

// Dir returns the directory relative paths in the spec were resolved
// against.
func (s *Spec) Dir() string { return s.dir }

// Load reads, expands, decodes, defaults and validates the spec file at
// path, then checks the files it names (see the package documentation).
// env looks up ${VAR}s (os.LookupEnv in production). Every problem found
// is reported at once as Errors, each with file:line:col; a file that
// cannot be read, or is over MaxBytes, is a plain error.
func Load(path string, env func(string) (string, bool)) (*Spec, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	return parseSpec(path, data, dir, env, true)
}

// readFile reads a spec file of at most MaxBytes, refusing a larger one
// before reading it.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > MaxBytes {
		return nil, errors.New(tooLarge(path, fi.Size()))
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if len(data) > MaxBytes {
		// Not a regular file (a pipe): its size was unknown.
		return nil, errors.New(tooLarge(path, int64(len(data))))
	}
	return data, nil
}

// Parse is Load without the file system: name is used in errors and for
// the default job name, dir is what relative paths are resolved against.
// It never reads a file, so it does not check the files the spec names.
func Parse(name string, data []byte, dir string, env func(string) (string, bool)) (*Spec, error) {
	return parseSpec(name, data, dir, env, false)
}

// parseSpec is Parse, checking the named files when files is set.
func parseSpec(name string, data []byte, dir string, env func(string) (string, bool), files bool) (*Spec, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	d := newDecoder(name, env)
	d.files = files
	s := &Spec{path: name, dir: dir}
	d.decodeFile(data, s)
	if len(d.errs) == 0 {
		d.finish(s)
	}
	if len(d.errs) > 0 {
		return nil, d.result()
	}
	always := append([]string{s.Task.APIKey, s.Task.AzureADToken}, d.urlSecrets("task.base_url", s.Task.BaseURL)...)
	for i, r := range s.Routes {
		always = append(always, r.APIKey)
		always = append(always, d.urlSecrets(fmt.Sprintf("routes[%d].base_url", i), r.BaseURL)...)
	}
	s.secrets = d.secretValues(always...)
	s.valuePos, s.keyPos = d.set, d.keyPos
	s.placeholders = d.kept
	slices.SortStableFunc(s.placeholders, func(a, b Placeholder) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col)) })
	return s, nil
}

// ErrorAt returns a problem with the spec found after loading it (job's
// check that the input file exists), positioned at the value the spec
// wrote for key ("input.path", "task.argv[0]"), else at the key, else at
// the file's start. The message is format's, as is.
func (s *Spec) ErrorAt(key, format string, args ...any) *Error {
	p, ok := s.valuePos[key]
	if !ok {
		p, ok = s.keyPos[key]
	}
	if !ok {
		p = pos{1, 1}
	}
	return &Error{File: s.path, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, args...)}
}

// abs makes a path from the spec absolute against its directory.
func (s *Spec) abs(p string) string {
	if p == "" || filepath.IsAbs(p) || s.dir == "" {
		return p
	}
	return filepath.Join(s.dir, p)
}

// defaultName is the spec file's base name without its extension.
func defaultName(path string) string {
	base := filepath.Base(path)
	return strings.TrimSuffix(base, filepath.Ext(base))
}
