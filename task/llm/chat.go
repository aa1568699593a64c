package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// chatRequest builds the body of a chat completions request from a
// call's messages and max_tokens, the one part that changes from call to
// call: what is fixed for the task (the model, sampling, response_format,
// extra_body) is encoded once, by the SDK's own encoder, when New builds
// the task. The SDK is then handed the finished body (param.SetJSON), so
// no call pays the SDK's reflection-based encoding of its parameters, nor
// the re-parsing of the body that extra_body's sjson edits cost.
type chatRequest struct {
	// messages is false when extra_body sets "messages" itself.
	messages bool
	// tokensKey is "max_tokens" or, for reasoning models,
	// "max_completion_tokens"; "" when extra_body sets it.
	tokensKey string
	// rest is the fixed fields, each preceded by a comma, in key order.
	rest []byte
}

// newChatRequest encodes the task's fixed chat completion fields. A value
// of extra_body that cannot be encoded as JSON is an error.
func (t *Task) newChatRequest() (*chatRequest, error) {
	raw, err := t.openAIParams().MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("llm: encoding the request: %w", err)
	}
	fields, err := t.fixedFields(raw, "messages")
	if err != nil {
		return nil, err
	}
	r := &chatRequest{messages: true, tokensKey: "max_tokens"}
	if reasoningModel(t.cfg.Model) {
		r.tokensKey = "max_completion_tokens"
	}
	if _, ok := fields["messages"]; ok {
		r.messages = false
	}
	if _, ok := fields[r.tokensKey]; ok {
		r.tokensKey = ""
	}
	if r.rest, err = joinFields(fields); err != nil {
		return nil, err
	}
	return r, nil
}

// fixedFields decodes raw, the SDK's encoding of a task's fixed request
// fields, drops perCall (each call writes its own) and sets extra_body's,
// which win over the SDK's as they did set after its encoding. A value of
// extra_body that cannot be encoded as JSON is an error.
func (t *Task) fixedFields(raw []byte, perCall ...string) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("llm: encoding the request: %w", err)
	}
	for _, name := range perCall {
		delete(fields, name)
	}
	for name, v := range t.cfg.ExtraBody {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("llm: extra_body %q: %w", name, err)
		}
		fields[name] = b
	}
	return fields, nil
}

// joinFields encodes fields compact, each preceded by a comma, in key
// order: the fixed tail of every call's body.
func joinFields(fields map[string]json.RawMessage) ([]byte, error) {
	var buf bytes.Buffer
	for _, name := range sortedKeys(fields) {
		key, _ := json.Marshal(name)
		buf.WriteByte(',')
		buf.Write(key)
		buf.WriteByte(':')
		if err := json.Compact(&buf, fields[name]); err != nil {
			return nil, fmt.Errorf("llm: encoding the request's %s: %w", name, err)
		}
	}
	return buf.Bytes(), nil
}

// body is the request's JSON for msgs and maxTokens (0 sends none):
// compact, with HTML characters escaped as encoding/json does, so the
// SDK's compaction of it changes nothing. more are messages of other
// shapes (an agent's tool calls and results), sent after msgs.
func (r *chatRequest) body(msgs []Message, maxTokens int, more ...any) ([]byte, error) {
	size := len(r.rest) + 64
	for _, m := range msgs {
		size += len(m.Content) + len(m.Content)/8 + 32
	}
	buf := bytes.NewBuffer(make([]byte, 0, size))
	buf.WriteByte('{')
	if r.messages {
		buf.WriteString(`"messages":`)
		if err := json.NewEncoder(buf).Encode(msgs); err != nil {
			return nil, fmt.Errorf("llm: encoding the messages: %w", err)
		}
		buf.Truncate(buf.Len() - 1) // Encode's newline
		if err := appendToArray(buf, more); err != nil {
			return nil, err
		}
	}
	if r.tokensKey != "" && maxTokens > 0 {
		if buf.Len() > 1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('"')
		buf.WriteString(r.tokensKey)
		buf.WriteString(`":`)
		buf.Write(strconv.AppendInt(buf.AvailableBuffer(), int64(maxTokens), 10))
	}
	rest := r.rest
	if buf.Len() == 1 && len(rest) > 0 {
		rest = rest[1:]
	}
	buf.Write(rest)
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

// openAIParams is what every call of the task sends in OpenAI's format
// beside its messages and max_tokens: the model, sampling, reasoning
// effort and the structured-output mode.
func (t *Task) openAIParams() openai.ChatCompletionNewParams {
	base := openai.ChatCompletionNewParams{Model: t.cfg.Model}
	if t.cfg.Temperature != nil {
		base.Temperature = openai.Float(*t.cfg.Temperature)
	}
	if t.cfg.TopP != nil {
		base.TopP = openai.Float(*t.cfg.TopP)
	}
	if t.cfg.Seed != nil {
		base.Seed = openai.Int(*t.cfg.Seed)
	}
	if len(t.cfg.Stop) > 0 {
		base.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: t.cfg.Stop}
	}
	if t.cfg.ReasoningEffort != "" {
		base.ReasoningEffort = shared.ReasoningEffort(t.cfg.ReasoningEffort)
	}
	switch t.structured.Mode {
	case ModeJSONObject:
		base.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
	case ModeJSONSchema:
		base.ResponseFormat = openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
			JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "output", Schema: t.schema.sendable(), Strict: openai.Bool(true)},
		}}
	}
	return base
}

// chatCompletion is what tenax reads of a chat completion: the first
// choice and the usage. Numbers are read as float64 so that a server that
// writes 12.0 for 12 is read as the SDK reads it.
type chatCompletion struct {
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

// chatChoice is what tenax reads of a choice of a chat completion.
type chatChoice struct {
	FinishReason string      `json:"finish_reason"`
	Message      chatMessage `json:"message"`
	// ContentFilterResults is Azure's verdict beside the choice.
	ContentFilterResults json.RawMessage `json:"content_filter_results"`
}

// chatMessage is what tenax reads of a choice's message.
type chatMessage struct {
	Content   string `json:"content"`
	Refusal   string `json:"refusal"`
	ToolCalls []struct {
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// chatUsage is a chat completion's usage.
type chatUsage struct {
	PromptTokens        float64 `json:"prompt_tokens"`
	CompletionTokens    float64 `json:"completion_tokens"`
	PromptTokensDetails struct {
		CachedTokens float64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	CompletionTokensDetails struct {
		ReasoningTokens float64 `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// decodeChatCompletion reads a chat completion, online or from a batch's
// results. A body that is not JSON is an error; a field of an unexpected
// type is read as absent, as the SDK's lenient decoder does, rather than
// failing the whole answer.
func decodeChatCompletion(body []byte) (reply, error) {
	comp, ok := readChatCompletion(body)
	if !ok {
		// Anything the quick reader does not take for certain, encoding/json
		// reads, as it always did: the quick reader's answer is the same.
		comp = chatCompletion{}
		if err := json.Unmarshal(body, &comp); err != nil {
			var typeErr *json.UnmarshalTypeError
			if !errors.As(err, &typeErr) {
				return reply{}, fmt.Errorf("error parsing response json: %w", err)
			}
		}
	}
	u := comp.Usage
	var n usageCounts
	rep := reply{usage: task.Usage{
		InputTokens:       n.count("prompt_tokens", u.PromptTokens),
		OutputTokens:      n.count("completion_tokens", u.CompletionTokens),
		CachedInputTokens: n.count("cached_tokens", u.PromptTokensDetails.CachedTokens),
		ReasoningTokens:   n.count("reasoning_tokens", u.CompletionTokensDetails.ReasoningTokens),
		Impossible:        n.impossible,
	}}
	if len(comp.Choices) > 0 {
		ch := comp.Choices[0]
		rep.content, rep.refusal, rep.finish = ch.Message.Content, ch.Message.Refusal, ch.FinishReason
		for _, tc := range ch.Message.ToolCalls {
			rep.calls = append(rep.calls, agent.Call{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(tc.Function.Arguments)})
		}
		if ch.FinishReason == "content_filter" {
			// Azure says why: the categories and severities of its
			// filter.
			rep.filter = filterVerdict(ch.ContentFilterResults)
		}
	}
	return rep, nil
}

// jsonContentType reports whether a response's Content-Type says JSON, as
// the SDK decides before decoding an answer: a 200 that is not JSON is a
// malformed response, not an answer.
func jsonContentType(contentType string) bool {
	mediaType, _, _ := mime.ParseMediaType(contentType)
	return strings.Contains(mediaType, "application/json") || strings.HasSuffix(mediaType, "+json")
}

// appendToArray adds more to the JSON array that ends buf.
func appendToArray(buf *bytes.Buffer, more []any) error {
	if len(more) == 0 {
		return nil
	}
	empty := bytes.HasSuffix(buf.Bytes(), []byte("[]"))
	buf.Truncate(buf.Len() - 1) // the array's closing bracket
	for i, m := range more {
		if i > 0 || !empty {
			buf.WriteByte(',')
		}
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("llm: encoding the messages: %w", err)
		}
		buf.Write(b)
	}
	buf.WriteByte(']')
	return nil
}
