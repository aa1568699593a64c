package llm

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// ProviderGemini is Google's Gemini API (generativelanguage.googleapis.com),
// authenticated by an API key; ProviderVertex is the same models on
// Google Cloud's Vertex AI, authenticated by Google credentials in a
// project and location. Both speak generateContent, through a Generator
// (package task/llm/gemini, on Google's genai SDK) given as
// Config.Gemini: the SDK stays out of the imports of every package that
// only reads tasks. Model is the model's name ("gemini-2.5-flash").
const (
	ProviderGemini = "gemini"
	ProviderVertex = "vertex"
)

// Generator makes Gemini's generateContent call: package task/llm/gemini's
// Client is one. send is the task's HTTP client with its capture of the
// response: every request of the call goes through it.
type Generator interface {
	Generate(ctx context.Context, req GenerateRequest, send func(*http.Request) (*http.Response, error)) (GenerateReply, error)
}

// GenerateDecoder is a Generator that reads a generateContent answer it
// did not fetch itself: what a Gemini batch returns for each request
// (package batch), read as the online answer is.
type GenerateDecoder interface {
	DecodeGenerate(body []byte) (GenerateReply, error)
}

// GenerateRequest is one generateContent call: what a Generator sends.
type GenerateRequest struct {
	// Model is the model's name.
	Model string
	// System are the system instruction's text parts.
	System []string
	// Messages are the conversation's user and assistant turns (the
	// assistant's are Gemini's "model" role).
	Messages []Message
	// MaxTokens is generationConfig.maxOutputTokens; 0 sends none.
	MaxTokens int
	// Temperature, TopP and Seed are sent when set.
	Temperature, TopP *float64
	Seed              *int64
	// Stop lists stop sequences.
	Stop []string
	// JSON asks for a JSON answer: responseMimeType application/json.
	JSON bool
	// Schema, when set, is the answer's JSON schema
	// (responseJsonSchema); it implies JSON.
	Schema map[string]any
	// Extra is merged into the request body: what a model takes beyond
	// the common configuration (generationConfig.thinkingConfig, …); nil
	// sends none.
	Extra map[string]any
	// Tools are an agent's tools (tools[].functionDeclarations): set on
	// an agent's step, with Steps.
	Tools []agent.Def
	// Steps are the agent's steps so far, sent after Messages: each a
	// model content of text and functionCall parts, then a user content
	// of functionResponse parts (docs/agents.md).
	Steps []agent.Step
}

// GenerateReply is what a generateContent answer says.
type GenerateReply struct {
	// Text is the first candidate's text parts, joined (thoughts left
	// out).
	Text string
	// FinishReason is the candidate's finishReason (STOP, MAX_TOKENS,
	// SAFETY, RECITATION, …), or, for a prompt blocked before any
	// candidate, promptFeedback.blockReason.
	FinishReason string
	// PromptBlocked says FinishReason is promptFeedback's blockReason.
	PromptBlocked bool
	// Safety names the safety ratings that blocked the answer or the
	// prompt ("HARM_CATEGORY_DANGEROUS_CONTENT probability HIGH"); ""
	// when none did.
	Safety string
	// Usage is the answer's usageMetadata: cached input inside
	// InputTokens, thoughts inside OutputTokens and ReasoningTokens.
	Usage task.Usage
	// Calls are the first candidate's functionCall parts, in order.
	Calls []agent.Call
}

// geminiSender returns the call in generateContent's shape, made by the
// task's Generator; the SDK behind it does not retry: tenax alone decides.
func (t *Task) geminiSender() func(context.Context, *call, *capture) (reply, error) {
	base := GenerateRequest{Model: t.cfg.Model, Temperature: t.cfg.Temperature, TopP: t.cfg.TopP, Seed: t.cfg.Seed,
		Stop: t.cfg.Stop, Extra: t.cfg.ExtraBody}
	switch t.structured.Mode {
	case ModeJSONSchema:
		base.JSON, base.Schema = true, t.schema.sendable()
	case ModeJSONObject:
		base.JSON = true
	}
	return func(ctx context.Context, c *call, cp *capture) (reply, error) {
		req := base
		req.MaxTokens = c.maxTokens
		req.Messages = make([]Message, 0, len(c.msgs))
		for _, m := range c.msgs {
			if m.Role == "system" {
				req.System = append(req.System, m.Content)
				continue
			}
			req.Messages = append(req.Messages, m)
		}
		if c.agent != nil {
			req.Tools, req.Steps = c.agent.defs, c.agent.steps
			// generateContent refuses function calling with a JSON
			// response mime type on the models tenax prices (Gemini 2.x):
			// an agent's steps go without it, and its final answer is
			// validated and healed as any other.
			req.JSON, req.Schema = false, nil
		}
		send := func(r *http.Request) (*http.Response, error) {
			for _, name := range sortedKeys(t.cfg.Headers) {
				r.Header.Set(name, t.cfg.Headers[name])
			}
			return cp.middleware(r, t.cfg.HTTPClient.Do)
		}
		out, err := t.cfg.Gemini.Generate(ctx, req, send)
		if err != nil {
			return reply{}, err
		}
		return geminiReply(out), nil
	}
}

// geminiReply reads a generateContent answer: MAX_TOKENS is a cut-off
// answer, and a block (of the answer, or of the prompt before any answer:
// finish reason PROMPT_BLOCKED) a content filter's stop carrying the
// ratings that blocked it.
func geminiReply(out GenerateReply) reply {
	rep := reply{content: out.Text, finish: out.FinishReason, usage: out.Usage, calls: out.Calls}
	if out.PromptBlocked {
		rep.finish = geminiPromptBlocked
		rep.filter = strings.TrimSuffix("promptFeedback.blockReason "+out.FinishReason+"; "+out.Safety, "; ")
	} else if geminiBlocked(out.FinishReason) {
		rep.filter = cmpOr(out.Safety, "finishReason "+out.FinishReason)
	}
	return rep
}

// geminiPromptBlocked is the finish reason of a Gemini answer with no
// candidate, its prompt blocked (promptFeedback.blockReason).
const geminiPromptBlocked = "PROMPT_BLOCKED"

// geminiBlocked reports whether a Gemini finish reason is a block: its
// safety filters, a recitation of its training data, a blocklist's term,
// prohibited content, personal data (SPII), or a blocked prompt.
func geminiBlocked(finish string) bool {
	switch finish {
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
		"IMAGE_PROHIBITED_CONTENT", geminiPromptBlocked:
		return true
	}
	return false
}

// geminiDetail completes the Error of a Google error response
// ({"error": {"code", "message", "status", "details"}}, google.rpc.Status):
// its status (RESOURCE_EXHAUSTED, INVALID_ARGUMENT, …) is its code, which
// package classify reads, unless the details say more: an ErrorInfo's
// API_KEY_INVALID, or a QuotaFailure on a per-day quota, which tenax names
// RESOURCE_EXHAUSTED_PER_DAY (no item passes until the day turns). A
// RetryInfo's retryDelay is the retry hint, as Retry-After would be.
func geminiDetail(e *Error, body []byte) {
	var doc struct {
		Error struct {
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Error.Status == "" {
		return
	}
	e.Type, e.Code = doc.Error.Status, doc.Error.Status
	if doc.Error.Message != "" && e.Message == "" {
		e.Message = doc.Error.Message
	}
	applyGoogleDetails(e, doc.Error.Details)
}

// applyGoogleDetails reads google.rpc's ErrorInfo, QuotaFailure and
// RetryInfo into e.
func applyGoogleDetails(e *Error, details []map[string]any) {
	for _, d := range details {
		kind, _ := d["@type"].(string)
		switch strings.TrimPrefix(kind, "type.googleapis.com/") {
		case "google.rpc.ErrorInfo":
			if reason, _ := d["reason"].(string); reason == "API_KEY_INVALID" {
				e.Code = reason
			}
		case "google.rpc.QuotaFailure":
			violations, _ := d["violations"].([]any)
			for _, v := range violations {
				vm, _ := v.(map[string]any)
				id, _ := vm["quotaId"].(string)
				if strings.Contains(id, "PerDay") {
					e.Code = GeminiDailyQuota
				}
			}
		case "google.rpc.RetryInfo":
			if s, _ := d["retryDelay"].(string); s != "" && e.Hint == 0 {
				if d, err := time.ParseDuration(s); err == nil && d > 0 {
					e.Hint = d
				}
			}
		}
	}
}

// GeminiStatusError is the *Error of a request that failed inside a
// Gemini batch, whose result carries a google.rpc.Status ({"code",
// "message", "details"}) in place of an HTTP response: the same Error the
// failure online would have been. code is the canonical gRPC code
// (13 INTERNAL); a value of 100 or more is taken as an HTTP status.
func GeminiStatusError(provider string, code int, message string, details []map[string]any) *Error {
	e := &Error{Provider: provider, Message: message, Status: http.StatusInternalServerError, Type: "INTERNAL"}
	if code >= 100 {
		e.Status = code
		e.Type = googleStatusName[code]
	} else if c, ok := googleCodes[code]; ok {
		e.Status, e.Type = c.status, c.name
	}
	e.Code = e.Type
	applyGoogleDetails(e, details)
	return e
}

// googleCodes are the canonical gRPC codes with the HTTP status Google's
// REST APIs answer each with (google.rpc.Code).
var googleCodes = map[int]struct {
	name   string
	status int
}{
	1: {"CANCELLED", 499}, 2: {"UNKNOWN", 500}, 3: {"INVALID_ARGUMENT", 400}, 4: {"DEADLINE_EXCEEDED", 504},
	5: {"NOT_FOUND", 404}, 6: {"ALREADY_EXISTS", 409}, 7: {"PERMISSION_DENIED", 403}, 8: {"RESOURCE_EXHAUSTED", 429},
	9: {"FAILED_PRECONDITION", 400}, 10: {"ABORTED", 409}, 11: {"OUT_OF_RANGE", 400}, 12: {"UNIMPLEMENTED", 501},
	13: {"INTERNAL", 500}, 14: {"UNAVAILABLE", 503}, 15: {"DATA_LOSS", 500}, 16: {"UNAUTHENTICATED", 401},
}

// googleStatusName is the status name of an HTTP status, as Google's REST
// APIs pair them.
var googleStatusName = map[int]string{400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
	404: "NOT_FOUND", 409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 499: "CANCELLED", 500: "INTERNAL", 501: "UNIMPLEMENTED",
	503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}

// GeminiDailyQuota is the code of a Gemini 429 RESOURCE_EXHAUSTED whose
// QuotaFailure names a per-day quota: fatal, where a per-minute limit's
// RESOURCE_EXHAUSTED is the rate limit.
const GeminiDailyQuota = "RESOURCE_EXHAUSTED_PER_DAY"

// checkGeminiSampling refuses what generateContent has no field for.
func checkGeminiSampling(cfg Config) error {
	switch {
	case cfg.Gemini == nil:
		return errors.New("llm: provider " + cfg.Provider + " needs Config.Gemini, the generateContent client (package task/llm/gemini)")
	case cfg.ThinkingBudget != 0:
		return errors.New("llm: a thinking budget is anthropic's API; on " + cfg.Provider + " send generationConfig.thinkingConfig with extra_body")
	case cfg.ReasoningEffort != "":
		return errors.New("llm: reasoning_effort is not a generateContent field; on " + cfg.Provider + " send generationConfig.thinkingConfig with extra_body")
	case cfg.CachePrompt:
		return errors.New("llm: cache_prompt is anthropic's API; gemini caches implicitly, and counts the cached tokens")
	case cfg.Provider == ProviderVertex && cfg.APIKey != "":
		return errors.New("llm: vertex authenticates with Google credentials (application default credentials), not an api_key; the Gemini API's key is provider gemini's")
	case cfg.Temperature != nil && *cfg.Temperature > 2:
		return errors.New("llm: gemini's temperature is from 0 to 2")
	case cfg.Seed != nil && (*cfg.Seed < -1<<31 || *cfg.Seed > 1<<31-1):
		return errors.New("llm: gemini's seed is a 32-bit integer, got " + strconv.FormatInt(*cfg.Seed, 10))
	}
	return nil
}

// geminiStructured says how a Gemini task asks for JSON: a schema as
// responseJsonSchema, else responseMimeType application/json alone.
func geminiStructured(schema schemaDoc) Structured {
	if schema == nil {
		return Structured{ModeJSONObject, "responseMimeType application/json, without a schema"}
	}
	return Structured{ModeJSONSchema, "validate.json_schema is sent as responseJsonSchema, with responseMimeType application/json"}
}
