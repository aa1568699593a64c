package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// maxBody is the largest request body the providers take (32 MB); a
// larger one gets 413.
const maxBody = 32 << 20

// chatRequest is the part of either provider's request the mock reads.
type chatRequest struct {
	Model               *string         `json:"model"`
	Messages            *[]wireMessage  `json:"messages"`
	System              json.RawMessage `json:"system"` // Anthropic: a string or text blocks
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	ResponseFormat      *responseFormat `json:"response_format"` // OpenAI
	OutputFormat        *outputFormat   `json:"output_format"`   // Anthropic
	OutputConfig        *struct {       // Anthropic, structured outputs GA
		Format *outputFormat `json:"format"`
	} `json:"output_config"`
	Tools      []wireTool      `json:"tools"`
	ToolChoice json.RawMessage `json:"tool_choice"`
	// Store and Metadata ask OpenAI to keep the answer, tagged
	// (stored.go).
	Store    *bool             `json:"store"`
	Metadata map[string]string `json:"metadata"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// responseFormat is OpenAI's response_format.
type responseFormat struct {
	Type       string `json:"type"`
	JSONSchema *struct {
		Name   string          `json:"name"`
		Schema json.RawMessage `json:"schema"`
		Strict *bool           `json:"strict"`
	} `json:"json_schema"`
}

// outputFormat is Anthropic's structured output format.
type outputFormat struct {
	Type   string          `json:"type"`
	Schema json.RawMessage `json:"schema"`
}

// wireTool is a tool in either dialect: OpenAI's {type, function: {name,
// parameters}}, Anthropic's {name, input_schema}.
type wireTool struct {
	Type     string `json:"type"`
	Function *struct {
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	} `json:"function"`
	Name        string          `json:"name"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// name and schema of a tool in either dialect.
func (t wireTool) name() string {
	if t.Function != nil {
		return t.Function.Name
	}
	return t.Name
}

func (t wireTool) schema() json.RawMessage {
	if t.Function != nil {
		return t.Function.Parameters
	}
	return t.InputSchema
}

type wireMessage struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"tool_call_id"`
	// ToolCalls are an OpenAI assistant turn's calls, read only to count
	// the agent model's steps.
	ToolCalls json.RawMessage `json:"tool_calls"`
}

// block is a content block of Anthropic (or an OpenAI content part).
type block struct {
	Type    string          `json:"type"`
	Text    string          `json:"text"`
	Content json.RawMessage `json:"content"` // tool_result
}

// blocks returns content that is an array of blocks; nil for a string.
func blocks(raw json.RawMessage) []block {
	var bs []block
	if json.Unmarshal(raw, &bs) != nil {
		return nil
	}
	return bs
}

// text returns content that is a string or an array of blocks, with the
// text of tool results.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var b strings.Builder
	for _, bl := range blocks(raw) {
		b.WriteString(bl.Text)
		if bl.Type == "tool_result" {
			b.WriteString(text(bl.Content))
		}
	}
	return b.String()
}

// exchange is one request being answered.
// window is the context window of the exchange's model.
func (x *exchange) window() int {
	if w := x.s.cfg.ContextWindow; w > 0 {
		return w
	}
	return x.d.contextWindow
}

type exchange struct {
	s         *Server
	w         http.ResponseWriter
	r         *http.Request
	d         *dialect
	seq       int64
	requestID string
	fault     fault
	body      []byte
	req       chatRequest

	model        string
	deployment   string    // Azure's deployment or Bedrock's model id, from the path: the model
	start        time.Time // when Bedrock's handler began, for its metrics
	key          string
	msgs         []Message
	prompt       string
	promptTokens int
	maxTokens    int        // 0: not set
	limits       limitState // after admission
	// converseTools says a Converse request has a toolConfig.
	converseTools bool
	// signsCalls says the model is played as Gemini 3's, which signs its
	// function calls and wants the signatures back (thoughtsig.go);
	// refusal is what its decoder found wrong with the request, which
	// the validation returns.
	signsCalls bool
	refusal    *apiError
	// served says the request came over a connection (ServeHTTP), not
	// the in-process Transport: the mock is then a provider apart from
	// its client, which goes on with a request whose client left, as a
	// real one does (and bills it); abandoned says that happened.
	served, abandoned bool
}

func (x *exchange) header() http.Header { return x.w.Header() }

// fail writes e in the dialect's shape and counts it.
func (x *exchange) fail(e apiError) {
	for k, v := range e.header {
		x.header().Set(k, v)
	}
	if e.counter != 0 {
		x.s.count(e.counter)
	}
	x.write(e.status, x.d.errorBody(x.requestID, e))
}

// write sends status and a JSON body.
func (x *exchange) write(status int, body []byte) {
	x.header().Set("Content-Type", "application/json")
	x.header().Set("Content-Length", fmt.Sprint(len(body)))
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body)
}

// readBody reads the request body, refusing one past maxBody with 413.
func (x *exchange) readBody() bool {
	body, err := io.ReadAll(io.LimitReader(x.r.Body, maxBody+1))
	if err != nil {
		return false // the client is gone
	}
	if len(body) > maxBody {
		x.fail(x.d.errs[errTooLarge](x))
		return false
	}
	x.body = body
	return true
}

// chat answers a chat completion (OpenAI) or a message (Anthropic).
func (s *Server) chat(x *exchange) outcome {
	f, latency := s.draw()
	x.fault = f
	if !x.readRequest() {
		return answered
	}
	x.model = *x.req.Model
	x.msgs = conversation(x.req)
	x.prompt = promptOf(x.msgs)
	x.promptTokens = tokens(x.msgs...)
	switch {
	case x.req.MaxCompletionTokens != nil:
		x.maxTokens = *x.req.MaxCompletionTokens
	case x.req.MaxTokens != nil:
		x.maxTokens = *x.req.MaxTokens
	}
	s.record(Recorded{Path: x.r.URL.Path, Model: x.model, Messages: x.msgs, Header: redact(x.r.Header)})
	if !knownModel(x.model) {
		x.fail(x.d.errs[errUnknownModel](x))
		return answered
	}
	if x.promptTokens+x.maxTokens > x.window() {
		x.fail(x.d.errs[errContextLength](x))
		return answered
	}

	a := s.compose(x)
	now := time.Now()
	c := cost{tokens: x.promptTokens + x.budget(a)}
	if x.d.outputLimit {
		c = cost{tokens: x.promptTokens, output: x.budget(a)}
	}
	st := s.admit(x.d, x.model, now, c)
	x.limits = st
	x.d.limitHeaders(x.header(), st, now)
	if st.refused != 0 {
		x.fail(x.d.rateLimited(x, st))
		return answered
	}
	if x.d.outputLimit {
		s.giveBack(x.d, x.model, now, c.output-a.completionTokens)
	}

	if f == faultTimeout {
		s.count(cTimeouts)
		select {
		case <-x.r.Context().Done():
		case <-s.held:
		}
		return answered
	}
	if !x.wait(latency) {
		return answered
	}
	if f == faultReset {
		s.count(cResets)
		return resetConn
	}
	midStream := x.req.Stream && (f == faultServer || f == faultOverloaded)
	if k, ok := faultErr[f]; ok && !midStream {
		x.fail(x.d.errs[k](x))
		return answered
	}
	if x.req.Stream {
		return s.stream(x, a)
	}
	body := x.d.answer(x, a)
	s.count(faultCounter[f])
	s.keep(x, body)
	if f == faultMalformed {
		return x.cut(http.StatusOK, body, len(body)/2)
	}
	x.write(http.StatusOK, body)
	return answered
}

// wait waits an answer's latency and reports whether to answer. A
// request whose client leaves meanwhile is answered all the same when
// the mock serves over connections (x.served), as a provider finishes
// and bills a request whose client died, and stores it when asked to
// (store: true); in-process, the mock is the client's own and ends
// with it. Close ends the wait.
func (x *exchange) wait(latency time.Duration) bool {
	if sleep(x.r.Context(), latency) {
		return true
	}
	if !x.served {
		return false
	}
	x.abandoned = true
	select {
	case <-time.After(latency):
		return true
	case <-x.s.held:
		return false
	}
}

// budget is what a request reserves for its answer: max_tokens, or the
// answer's tokens when it sets none.
func (x *exchange) budget(a answer) int {
	if x.maxTokens > 0 {
		return x.maxTokens
	}
	return a.completionTokens
}

// cut sends status, the header of a body of len(body) bytes and only
// its first n bytes, then drops the connection: what a client sees when
// a connection dies in the middle of an answer.
func (x *exchange) cut(status int, body []byte, n int) outcome {
	x.header().Set("Content-Length", fmt.Sprint(len(body)))
	if x.header().Get("Content-Type") == "" {
		x.header().Set("Content-Type", "application/json")
	}
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body[:n])
	return cutConn
}

// conversation returns the request's messages as text, Anthropic's
// system prompt first.
func conversation(req chatRequest) []Message {
	var list []wireMessage
	if req.Messages != nil {
		list = *req.Messages
	}
	msgs := make([]Message, 0, len(list)+1)
	if sys := text(req.System); sys != "" {
		msgs = append(msgs, Message{Role: "system", Content: sys})
	}
	for _, m := range list {
		msgs = append(msgs, Message{Role: m.Role, Content: text(m.Content)})
	}
	return msgs
}

// promptOf returns what the mock answers to: the last user message, or on
// a re-ask (a conversation with an assistant turn) the user message before
// the first assistant turn, so that the heal loop's re-ask gets the
// answer the first question deserved.
func promptOf(msgs []Message) string {
	last := ""
	for _, m := range msgs {
		switch m.Role {
		case "user":
			last = m.Content
		case "assistant":
			return last
		}
	}
	return last
}

// tokens estimates the tokens of msgs as runes/4, at least 1.
func tokens(msgs ...Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content)
	}
	return max(n/4, 1)
}

// redact returns a copy of h with its credentials replaced.
//
// Only the values of headers known to carry no secret are kept: a
// gateway's own header (X-Gw: ${GW_TOKEN}) is as secret as the API key,
// and the mock cannot know which of a spec's headers came from the
// environment.
func redact(h http.Header) http.Header {
	out := h.Clone()
	for name, values := range out {
		if _, ok := plainHeaders[name]; ok || strings.HasPrefix(name, "X-Stainless-") {
			continue
		}
		for i := range values {
			values[i] = "REDACTED"
		}
	}
	return out
}

// plainHeaders are the request headers, in canonical form, whose values
// the log and Recorded keep: what the SDKs and HTTP itself send, which
// says how a request was made and holds no credential.
var plainHeaders = map[string]struct{}{
	"Accept": {}, "Accept-Encoding": {}, "Accept-Language": {}, "Connection": {}, "Content-Length": {},
	"Content-Type": {}, "User-Agent": {}, "Anthropic-Version": {}, "Anthropic-Beta": {},
	"Idempotency-Key": {}, "Openai-Organization": {}, "Openai-Project": {}, "Traceparent": {},
}

// maskKey shows a key as OpenAI does in a 401: a prefix, stars, the last
// four characters.
func maskKey(k string) string {
	if len(k) <= 8 {
		return strings.Repeat("*", len(k))
	}
	return k[:3] + strings.Repeat("*", len(k)-7) + k[len(k)-4:]
}

// sleep waits d or until ctx is done, and reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// readRequest reads, decodes and validates a messages or chat request as
// the provider does, in its order: the body, its JSON, the API key, then
// the fields. It answers the error and returns false at the first that
// fails.
func (x *exchange) readRequest() bool {
	if !x.readBody() {
		return false
	}
	decode := func(x *exchange) error { return json.Unmarshal(x.body, &x.req) }
	if x.d.decode != nil {
		decode = x.d.decode
	}
	if err := decode(x); err != nil {
		x.fail(x.d.errs[errBadJSON](x))
		return false
	}
	if x.deployment != "" {
		x.req.Model = &x.deployment
	}
	if x.key = x.d.apiKey(x.r); x.key == "" {
		x.fail(x.d.errs[errMissingKey](x))
		return false
	}
	if x.d.verify != nil {
		if e := x.d.verify(x); e != nil {
			x.fail(*e)
			return false
		}
	}
	if e := x.d.validate(x); e != nil {
		x.fail(*e)
		return false
	}
	return true
}
