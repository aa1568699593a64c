package task

import (
	"context"
	"encoding/json"
	"time"
)

// Task performs one attempt of the work for one item. It is called once per
// attempt; retries, healing and classification are the engine's business,
// so a Task should not retry on its own.
//
// A Task must be safe for concurrent use: the engine calls Run from many
// goroutines at once. It must return promptly when ctx is done.
//
// Errors should carry what the classifier reads (see package classify): an
// HTTP status, a provider error code, an exit code, a retry hint. A task
// that knows the class for certain wraps its error with classify.As.
type Task interface {
	Run(ctx context.Context, item Item) (Result, error)
}

// Func adapts an ordinary function to the Task interface.
type Func func(ctx context.Context, item Item) (Result, error)

// Run calls f(ctx, item).
func (f Func) Run(ctx context.Context, item Item) (Result, error) { return f(ctx, item) }

// Item is one unit of input as a task sees it.
type Item struct {
	// Idx is the item's 0-based position in the input.
	Idx int
	// ID is the item's "id" field when it has one, for reports.
	ID string
	// Fields are the item's fields: a JSONL object, a CSV row keyed by
	// header, or {"text": line} for .txt input. Templates render from them.
	Fields map[string]any
	// Raw is the item as it was read, for the record's "input".
	Raw json.RawMessage
	// Feedback is set when the heal loop re-asks the item after an invalid
	// output; nil on the first generation.
	Feedback *Feedback
}

// Feedback is what the heal loop tells a task when it asks again after an
// invalid output.
type Feedback struct {
	// PreviousOutput is the output that failed validation.
	PreviousOutput string
	// Message is the formatted feedback: the error, its cause chain, the
	// first lines of stderr and every matching hint.
	Message string
	// Attempt counts the heal re-asks of this item so far, from 1.
	Attempt int
}

// Result is what one successful attempt produced.
type Result struct {
	// Output is the item's output as JSON: a JSON string for text output,
	// the value itself for JSON output.
	Output json.RawMessage
	// Usage is the tokens the attempt consumed, zero for non-LLM tasks.
	Usage Usage
	// CostUSD is the attempt's cost, when the task knows a price.
	CostUSD float64
	// CacheHit reports that the output came from the response cache and no
	// call was made.
	CacheHit bool
	// CacheKey is the response cache's key of the question this output
	// answers, "" when the task has no cache (or could not store the
	// output). The engine rejects the entry when the output proves
	// invalid, so the next run regenerates it, and stores a healed
	// output under the key of the item's first question. An output
	// error (*OutputError) carries the key too, with nothing stored.
	CacheKey string
	// FinishReason is why the provider stopped generating, in its own
	// words (OpenAI's finish_reason "stop", "length", "content_filter";
	// Anthropic's stop_reason "end_turn", "max_tokens", "refusal"); "" for
	// tasks that have none. It is set on failed attempts too, with the
	// Result returned beside the error.
	FinishReason string
	// Quota is what the provider's rate-limit headers said on the
	// attempt's response, nil when it sent none. It is set on failed
	// attempts too (a 429's headers most of all), with the Result
	// returned beside the error: the engine paces and pauses by it.
	Quota *Quota
	// Agent is what an agent item's loop did (steps, tool calls, errors
	// fed back), nil for a task that is not an agent. It is set on failed
	// attempts too, with the Result returned beside the error.
	Agent *AgentStats
}

// AgentStats is what one agent attempt did: an llm task with tools that
// called them over many steps (package task/agent). The record carries
// the last attempt's (docs/agents.md).
type AgentStats struct {
	// Steps counts the model's answers: each tool-calling step and the
	// final answer.
	Steps int `json:"steps"`
	// ToolCalls counts the calls the model asked for, by the tool's name
	// as the model gave it (an unknown tool's name included).
	ToolCalls map[string]int `json:"tool_calls,omitempty"`
	// ToolErrors counts, by tool, the calls whose error went back to the
	// model: arguments failing the schema, an unknown tool, a failed run.
	ToolErrors map[string]int `json:"tool_errors,omitempty"`
	// ErrorsFedBack counts every error fed back to the model.
	ErrorsFedBack int `json:"errors_fed_back"`
	// ConsecutiveErrorsPeak is the longest run of steps that fed errors
	// back with no successful step between them.
	ConsecutiveErrorsPeak int `json:"consecutive_errors_peak"`
	// FailedTool is the tool the attempt's failure is laid to: the one
	// interrupted with no result recorded (an *agent.InterruptedToolError),
	// or the one whose error was the last fed back when
	// max_consecutive_errors ended the item; "" otherwise.
	FailedTool string `json:"failed_tool,omitempty"`
	// Errors are the first MaxAgentErrors errors fed back, in order, each
	// as "tool: message", cut to MaxAgentErrorBytes.
	Errors []string `json:"errors,omitempty"`
	// Transcript is where the item's steps are kept, nil when no step log
	// keeps them.
	Transcript *Transcript `json:"transcript,omitempty"`
	// LeftProcesses, on River workers, says what became of the process
	// groups of exec tools that a worker which ran the item before (and
	// was killed) left: each group ended by the worker that took the item
	// up, or not ended, and why (on another host, its worker still
	// alive). Absent when none was left.
	LeftProcesses []string `json:"left_processes,omitempty"`
}

// Transcript locates an agent item's steps: its job's step log (a
// store.StepLog, named by its StepsLocation) and the item's key in it.
type Transcript struct {
	// Log names the step log: "steps.jsonl" in the job's directory, a
	// table, "memory".
	Log string `json:"log"`
	// Idx is the item's idx, under which the log keeps its steps.
	Idx int `json:"idx"`
	// N numbers the item's transcripts in the log: 1 for its first; a
	// run that starts the item over after a record of it (a resume with
	// --retry-failures) starts the next.
	N int `json:"n"`
}

// Bounds of AgentStats.Errors, so that a record stays one short line.
const (
	MaxAgentErrors     = 20
	MaxAgentErrorBytes = 300
)

// Quota is a provider's rate-limit headers on one response. A count whose
// header was absent is -1; a reset that was absent is 0.
type Quota struct {
	// RequestsLimit and RequestsRemaining count requests per minute.
	RequestsLimit, RequestsRemaining int
	// TokensLimit and TokensRemaining count tokens per minute.
	TokensLimit, TokensRemaining int
	// RequestsReset and TokensReset are how long until the quotas are
	// whole again.
	RequestsReset, TokensReset time.Duration
	// RetryAfter is the server's explicit retry hint on the same response
	// (retry-after-ms, Retry-After), 0 when it gave none.
	RetryAfter time.Duration
}

// OutputError reports an attempt whose call worked but whose output is
// unusable: JSON that does not parse, an empty answer. Its class is
// invalid, so the heal loop re-asks with Output and Err as feedback, and a
// successful call still resets the retry streak.
type OutputError struct {
	// Output is the unusable output as the task received it.
	Output string
	// Err says what is wrong with it.
	Err error
}

func (e *OutputError) Error() string { return "invalid output: " + e.Err.Error() }

// Unwrap returns the reason the output is unusable.
func (e *OutputError) Unwrap() error { return e.Err }

// Usage counts the tokens of LLM calls.
type Usage struct {
	// InputTokens counts every input token, cached ones included.
	InputTokens int64 `json:"input_tokens"`
	// OutputTokens counts every output token, reasoning and thinking
	// included.
	OutputTokens int64 `json:"output_tokens"`
	// CachedInputTokens are the input tokens read from the provider's
	// prompt cache (OpenAI's prompt_tokens_details.cached_tokens,
	// Anthropic's cache_read_input_tokens), priced lower.
	CachedInputTokens int64 `json:"cached_input_tokens,omitempty"`
	// CacheWriteTokens are the input tokens written to Anthropic's prompt
	// cache (cache_creation_input_tokens), priced higher.
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// ReasoningTokens are the output tokens spent on reasoning that is not
	// part of the answer (OpenAI's completion_tokens_details.
	// reasoning_tokens), when the provider says.
	ReasoningTokens int64 `json:"reasoning_tokens,omitempty"`
	// Impossible lists the counts a provider reported that no call can
	// have spent (negative, or past any context window: a 2^64-1 read as
	// -9.2e18), as it reported them ("prompt_tokens=-1e+06"); each was
	// counted as the call's estimate instead, so that token budgets stay
	// safe. "" when every count was possible.
	Impossible string `json:"impossible,omitempty"`
}

// Add returns the sum of u and v.
func (u Usage) Add(v Usage) Usage {
	sum := Usage{
		InputTokens:       u.InputTokens + v.InputTokens,
		OutputTokens:      u.OutputTokens + v.OutputTokens,
		CachedInputTokens: u.CachedInputTokens + v.CachedInputTokens,
		CacheWriteTokens:  u.CacheWriteTokens + v.CacheWriteTokens,
		ReasoningTokens:   u.ReasoningTokens + v.ReasoningTokens,
		Impossible:        u.Impossible,
	}
	switch {
	case sum.Impossible == "":
		sum.Impossible = v.Impossible
	case v.Impossible != "":
		sum.Impossible += "; " + v.Impossible
	}
	return sum
}

// Total returns input plus output tokens.
func (u Usage) Total() int64 { return u.InputTokens + u.OutputTokens }

// Preparer is implemented by tasks whose work before a call (rendering a
// prompt, estimating its tokens, keying a response cache) should be done once
// per attempt rather than once for each question the engine asks. The engine
// prepares an attempt, takes it through its gate with what Prepared says
// (tokens for the limiter and the budget; a cache hit passes without waiting),
// then runs it: prepare once, adjust after, as rate.Reservation does.
type Preparer interface {
	// Prepare readies the attempt for item. An error is the item's own
	// (a template that does not render): the engine classifies it as it
	// would an error from Run, without calling.
	Prepare(ctx context.Context, item Item) (Prepared, error)
}

// Prepared is one attempt made ready to run.
type Prepared struct {
	// Tokens is the estimate of the tokens the call will consume (prompt
	// and expected answer), 0 when unknown.
	Tokens int
	// Cached reports that Run will answer from the response cache without
	// calling the provider: nothing to pace or pay for.
	Cached bool
	// Run makes the call. It is called at most once.
	Run func(ctx context.Context) (Result, error)
}
