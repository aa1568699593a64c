package mock

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// dialect is the wire format of a request: which provider it imitates.
type dialect uint8

const (
	openAI dialect = iota + 1
	anthropic
)

// The models the mock answers.
const (
	// ModelEcho answers with the prompt itself.
	ModelEcho = "mock-echo"
	// ModelJSON answers {"text": <prompt>, "length": <runes>} as JSON text.
	ModelJSON = "mock-json"
)

// outcome tells ServeHTTP and the transport what the connection must do
// after handle returns.
type outcome uint8

const (
	answered outcome = iota
	resetConn
)

// ServeHTTP answers one request as OpenAI's chat completions
// (POST /v1/chat/completions, /chat/completions) or Anthropic's messages
// (POST /v1/messages) would. A Reset fault hijacks the connection and
// closes it with a TCP reset.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.handle(w, r) == resetConn {
		resetConnection(w)
	}
}

// chatRequest is the part of either provider's request the mock reads.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            []wireMessage   `json:"messages"`
	System              json.RawMessage `json:"system"` // Anthropic: a string or text blocks
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
}

type wireMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// text returns content that is a string or an array of text blocks.
func text(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
	}
	return b.String()
}

// handle serves one request and says whether the connection must reset.
func (s *Server) handle(w http.ResponseWriter, r *http.Request) outcome {
	s.stats.requests.Add(1)
	var d dialect
	switch r.URL.Path {
	case "/v1/chat/completions", "/chat/completions":
		d = openAI
	case "/v1/messages", "/messages":
		d = anthropic
	default:
		http.Error(w, "404 page not found: the mock serves POST /v1/chat/completions and POST /v1/messages", http.StatusNotFound)
		return answered
	}
	seq, f, latency := s.draw()
	rs := &responder{w: w, d: d, seq: seq}
	rs.setIDs()
	if r.Method != http.MethodPost {
		rs.fail(http.StatusMethodNotAllowed, "invalid_request_error", "", "", "Method "+r.Method+" not allowed; use POST")
		return answered
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return answered // the client is gone
	}
	var req chatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "",
			"We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly.)")
		return answered
	}
	msgs := conversation(req)
	key := apiKey(r, d)
	s.record(Recorded{Path: r.URL.Path, Model: req.Model, Messages: msgs, Header: redact(r.Header)})

	if key == "" {
		s.stats.authErrors.Add(1)
		if d == openAI {
			rs.fail(http.StatusUnauthorized, "invalid_request_error", "", "",
				"You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")
		} else {
			rs.fail(http.StatusUnauthorized, "authentication_error", "", "", "x-api-key header is required")
		}
		return answered
	}
	maxTokens := req.MaxTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = req.MaxCompletionTokens
	}
	if d == anthropic && maxTokens == nil {
		rs.fail(http.StatusBadRequest, "invalid_request_error", "", "", "max_tokens: Field required")
		return answered
	}

	prompt := promptOf(msgs)
	ans := answer{finish: "stop"}
	switch req.Model {
	case ModelEcho:
		ans.text = prompt
	case ModelJSON:
		ans.text = jsonAnswer(prompt)
	}
	if f == faultInvalidOutput {
		ans.text = invalidAnswer(req.Model, prompt, seq)
	} else if n := len(s.cfg.Answers); n > 0 {
		ans.text = s.cfg.Answers[min(int(s.answered.Add(1))-1, n-1)]
	}
	ans.promptTokens = tokens(msgs...)
	ans.completionTokens = max(utf8.RuneCountInString(ans.text)/4, 1)
	if maxTokens != nil && *maxTokens > 0 && ans.completionTokens > *maxTokens {
		ans.text = string([]rune(ans.text)[:*maxTokens*4])
		ans.completionTokens, ans.finish = *maxTokens, "length"
	}
	budget := ans.completionTokens
	if maxTokens != nil && *maxTokens > 0 {
		budget = *maxTokens
	}

	lim := s.admit(time.Now(), ans.promptTokens+budget)
	rs.limits(lim, s.cfg.RPM, s.cfg.TPM)
	if lim.limited {
		s.stats.rateLimited.Add(1)
		rs.hiddenRateLimit(lim, req.Model, s.cfg.RPM, s.cfg.TPM)
		return answered
	}
	if req.Model != ModelEcho && req.Model != ModelJSON {
		if d == openAI {
			rs.fail(http.StatusNotFound, "invalid_request_error", "model_not_found", "",
				fmt.Sprintf("The model `%s` does not exist or you do not have access to it.", req.Model))
		} else {
			rs.fail(http.StatusNotFound, "not_found_error", "", "", "model: "+req.Model)
		}
		return answered
	}

	if f == faultTimeout {
		s.stats.timeouts.Add(1)
		select {
		case <-r.Context().Done():
		case <-s.held:
		}
		return answered
	}
	if !sleep(r.Context(), latency) {
		return answered
	}
	switch f {
	case faultRateLimit:
		s.stats.rateLimited.Add(1)
		rs.header().Set("Retry-After", "1")
		if d == openAI {
			rs.header().Set("retry-after-ms", "1000")
			rs.fail(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "",
				fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per min (RPM): Limit 60, Used 60, Requested 1. Please try again in 1s. Visit https://platform.openai.com/account/rate-limits to learn more.", req.Model))
		} else {
			rs.fail(http.StatusTooManyRequests, "rate_limit_error", "", "",
				"This request would exceed the rate limit for your organization of 50 requests per minute. Please reduce the rate of your requests or try again later.")
		}
	case faultServer:
		s.stats.serverErrors.Add(1)
		if d == openAI {
			rs.fail(http.StatusInternalServerError, "server_error", "", "",
				"The server had an error while processing your request. Sorry about that!")
		} else {
			rs.fail(http.StatusInternalServerError, "api_error", "", "", "Internal server error")
		}
	case faultOverloaded:
		s.stats.overloaded.Add(1)
		if d == openAI {
			rs.fail(http.StatusServiceUnavailable, "server_error", "", "",
				"The engine is currently overloaded, please try again later")
		} else {
			rs.fail(529, "overloaded_error", "", "", "Overloaded")
		}
	case faultReset:
		s.stats.resets.Add(1)
		return resetConn
	case faultAuth:
		s.stats.authErrors.Add(1)
		if d == openAI {
			rs.fail(http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "",
				"Incorrect API key provided: "+maskKey(key)+". You can find your API key at https://platform.openai.com/account/api-keys.")
		} else {
			rs.fail(http.StatusUnauthorized, "authentication_error", "", "", "invalid x-api-key")
		}
	case faultMalformed:
		s.stats.malformed.Add(1)
		full := rs.success(req.Model, ans)
		rs.write(http.StatusOK, full[:len(full)/2])
	default:
		if f == faultInvalidOutput {
			s.stats.invalidOutputs.Add(1)
		} else {
			s.stats.succeeded.Add(1)
		}
		rs.write(http.StatusOK, rs.success(req.Model, ans))
	}
	return answered
}

// conversation returns the request's messages as text, Anthropic's
// system prompt first.
func conversation(req chatRequest) []Message {
	msgs := make([]Message, 0, len(req.Messages)+1)
	if sys := text(req.System); sys != "" {
		msgs = append(msgs, Message{Role: "system", Content: sys})
	}
	for _, m := range req.Messages {
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

// jsonAnswer is mock-json's good answer.
func jsonAnswer(prompt string) string {
	b, _ := json.Marshal(struct {
		Text   string `json:"text"`
		Length int    `json:"length"`
	}{prompt, utf8.RuneCountInString(prompt)})
	return string(b)
}

// invalidAnswer is a plausible but wrong answer for model. Like a real
// model's mistakes, it differs from one request to the next (seq), so a
// re-ask that fails again is not mistaken for a stuck loop.
func invalidAnswer(model, prompt string, seq int64) string {
	if model != ModelJSON {
		return fmt.Sprintf("I'm sorry, but I can't help with that (request %d).", seq)
	}
	if seq%2 == 0 {
		// "length" is missing.
		b, _ := json.Marshal(map[string]any{"text": prompt, "request": seq})
		return string(b)
	}
	// Cut off in the middle of the text; the request number after the
	// cut keeps two cut answers to one prompt from being identical.
	b, _ := json.Marshal(prompt)
	cut := string(b[:min(len(b)-1, len(b)/2+int(seq%5))])
	return `{"text": ` + strings.ToValidUTF8(cut, "") + fmt.Sprintf(" (request %d", seq)
}

// answer is a good (or plausibly wrong) completion.
type answer struct {
	text                           string
	finish                         string // OpenAI's finish_reason: stop or length
	promptTokens, completionTokens int
}

// tokens estimates the tokens of msgs as runes/4, at least 1.
func tokens(msgs ...Message) int {
	n := 0
	for _, m := range msgs {
		n += utf8.RuneCountInString(m.Content)
	}
	return max(n/4, 1)
}

// apiKey returns the key the request authenticates with, "" if none.
func apiKey(r *http.Request, d dialect) string {
	if d == anthropic {
		if k := r.Header.Get("X-Api-Key"); k != "" {
			return k
		}
	}
	auth := r.Header.Get("Authorization")
	if k, ok := strings.CutPrefix(auth, "Bearer "); ok {
		return strings.TrimSpace(k)
	}
	return ""
}

// redact returns a copy of h with its credentials replaced.
func redact(h http.Header) http.Header {
	out := h.Clone()
	for _, name := range []string{"Authorization", "X-Api-Key", "Api-Key"} {
		if out.Get(name) != "" {
			out.Set(name, "REDACTED")
		}
	}
	return out
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

// responder writes one response in the request's dialect.
type responder struct {
	w         http.ResponseWriter
	d         dialect
	seq       int64
	requestID string
}

func (rs *responder) header() http.Header { return rs.w.Header() }

// setIDs sets the request id header every response carries.
func (rs *responder) setIDs() {
	rs.requestID = fmt.Sprintf("req_mock%012d", rs.seq)
	if rs.d == openAI {
		rs.header().Set("x-request-id", rs.requestID)
		rs.header().Set("openai-processing-ms", "1")
	} else {
		rs.header().Set("request-id", rs.requestID)
	}
}

// limits sets the rate limit headers of the window's state.
func (rs *responder) limits(st limitState, rpm, tpm int) {
	h := rs.header()
	if rs.d == openAI {
		if rpm > 0 {
			h.Set("x-ratelimit-limit-requests", strconv.Itoa(rpm))
			h.Set("x-ratelimit-remaining-requests", strconv.Itoa(st.reqRemain))
			h.Set("x-ratelimit-reset-requests", goDuration(st.reqReset))
		}
		if tpm > 0 {
			h.Set("x-ratelimit-limit-tokens", strconv.Itoa(tpm))
			h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(st.tokRemain))
			h.Set("x-ratelimit-reset-tokens", goDuration(st.tokReset))
		}
		return
	}
	now := time.Now()
	if rpm > 0 {
		h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(rpm))
		h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(st.reqRemain))
		h.Set("anthropic-ratelimit-requests-reset", rfc3339(now, st.reqReset))
	}
	if tpm > 0 {
		h.Set("anthropic-ratelimit-tokens-limit", strconv.Itoa(tpm))
		h.Set("anthropic-ratelimit-tokens-remaining", strconv.Itoa(st.tokRemain))
		h.Set("anthropic-ratelimit-tokens-reset", rfc3339(now, st.tokReset))
	}
}

// goDuration formats d as OpenAI's reset headers do: "6m0s", "1s", "20ms".
func goDuration(d time.Duration) string {
	return max(d, 0).Round(time.Millisecond).String()
}

// rfc3339 formats now+d, rounded up to the second, as Anthropic's reset
// headers do.
func rfc3339(now time.Time, d time.Duration) string {
	return now.Add(max(d, 0)).Add(time.Second - 1).Truncate(time.Second).UTC().Format(time.RFC3339)
}

// hiddenRateLimit answers a request refused by the hidden limit.
func (rs *responder) hiddenRateLimit(st limitState, model string, rpm, tpm int) {
	secs := int(math.Ceil(st.retryAfter.Seconds()))
	secs = max(secs, 1)
	rs.header().Set("Retry-After", strconv.Itoa(secs))
	if rs.d == anthropic {
		what, limit := "requests", rpm
		if st.byTokens {
			what, limit = "input tokens", tpm
		}
		rs.fail(http.StatusTooManyRequests, "rate_limit_error", "", "",
			fmt.Sprintf("This request would exceed the rate limit for your organization of %d %s per minute. Please reduce the rate of your requests or try again later.", limit, what))
		return
	}
	rs.header().Set("retry-after-ms", strconv.FormatInt(max(st.retryAfter.Milliseconds(), 1), 10))
	wait := goDuration(st.retryAfter)
	if st.byTokens {
		rs.fail(http.StatusTooManyRequests, "tokens", "rate_limit_exceeded", "",
			fmt.Sprintf("Rate limit reached for %s in organization org-mock on tokens per min (TPM): Limit %d, Used %d, Requested %d. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, tpm, st.usedTokens, st.requested, wait))
		return
	}
	rs.fail(http.StatusTooManyRequests, "requests", "rate_limit_exceeded", "",
		fmt.Sprintf("Rate limit reached for %s in organization org-mock on requests per min (RPM): Limit %d, Used %d, Requested 1. Please try again in %s. Visit https://platform.openai.com/account/rate-limits to learn more.", model, rpm, st.usedRequest, wait))
}

// fail writes an error in the dialect's shape. OpenAI's code and param
// are null when empty; Anthropic's body has no code or param.
func (rs *responder) fail(status int, typ, code, param, message string) {
	var body any
	if rs.d == openAI {
		type openAIError struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		}
		e := openAIError{Message: message, Type: typ}
		if code != "" {
			e.Code = &code
		}
		if param != "" {
			e.Param = &param
		}
		body = struct {
			Error openAIError `json:"error"`
		}{e}
	} else {
		type anthropicError struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		}
		body = struct {
			Type      string         `json:"type"`
			Error     anthropicError `json:"error"`
			RequestID string         `json:"request_id"`
		}{"error", anthropicError{typ, message}, rs.requestID}
	}
	b, _ := json.Marshal(body)
	rs.write(status, b)
}

// success returns the body of a completed answer.
func (rs *responder) success(model string, a answer) []byte {
	var body any
	if rs.d == openAI {
		type msg struct {
			Role    string  `json:"role"`
			Content string  `json:"content"`
			Refusal *string `json:"refusal"`
		}
		type choice struct {
			Index        int     `json:"index"`
			Message      msg     `json:"message"`
			Logprobs     *string `json:"logprobs"`
			FinishReason string  `json:"finish_reason"`
		}
		body = struct {
			ID                string   `json:"id"`
			Object            string   `json:"object"`
			Created           int64    `json:"created"`
			Model             string   `json:"model"`
			Choices           []choice `json:"choices"`
			Usage             any      `json:"usage"`
			SystemFingerprint string   `json:"system_fingerprint"`
		}{
			ID:      fmt.Sprintf("chatcmpl-mock%012d", rs.seq),
			Object:  "chat.completion",
			Created: time.Now().Unix(),
			Model:   model,
			Choices: []choice{{Message: msg{Role: "assistant", Content: a.text}, FinishReason: a.finish}},
			Usage: map[string]int{
				"prompt_tokens":     a.promptTokens,
				"completion_tokens": a.completionTokens,
				"total_tokens":      a.promptTokens + a.completionTokens,
			},
			SystemFingerprint: "fp_mock",
		}
	} else {
		stop := "end_turn"
		if a.finish == "length" {
			stop = "max_tokens"
		}
		type block struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		body = struct {
			ID           string         `json:"id"`
			Type         string         `json:"type"`
			Role         string         `json:"role"`
			Model        string         `json:"model"`
			Content      []block        `json:"content"`
			StopReason   string         `json:"stop_reason"`
			StopSequence *string        `json:"stop_sequence"`
			Usage        map[string]int `json:"usage"`
		}{
			ID:         fmt.Sprintf("msg_mock%012d", rs.seq),
			Type:       "message",
			Role:       "assistant",
			Model:      model,
			Content:    []block{{"text", a.text}},
			StopReason: stop,
			Usage:      map[string]int{"input_tokens": a.promptTokens, "output_tokens": a.completionTokens},
		}
	}
	b, _ := json.Marshal(body)
	return b
}

// write sends status and body as JSON.
func (rs *responder) write(status int, body []byte) {
	rs.header().Set("Content-Type", "application/json")
	rs.header().Set("Content-Length", strconv.Itoa(len(body)))
	rs.w.WriteHeader(status)
	_, _ = rs.w.Write(body)
}
