package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/anthropics/anthropic-sdk-go"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// messagesRequest builds the body of an Anthropic messages request from
// a call's messages, max_tokens and paused turns, the parts that change
// from call to call: what is fixed for the task (the model, sampling,
// thinking, the output format or tool, extra_body) is encoded once, by
// the SDK's own encoder, when New builds the task. The SDK is then handed
// the finished body (param.SetJSON), so no call pays the SDK's
// reflection-based encoding of its parameters, nor the re-parsing of the
// body that extra_body's sjson edits cost. It is chatRequest's
// counterpart for Anthropic's wire.
type messagesRequest struct {
	// messages, system and maxTokens are false when extra_body sets the
	// field itself, which then wins as it did set after the SDK's
	// encoding.
	messages, system, maxTokens bool
	// cacheSystem marks the system prompt as a cache breakpoint.
	cacheSystem bool
	// rest is the fixed fields, each preceded by a comma, in key order.
	rest []byte
}

// newMessagesRequest encodes the task's fixed messages request fields. A
// value of extra_body that cannot be encoded as JSON is an error.
func (t *Task) newMessagesRequest() (*messagesRequest, error) {
	base := t.anthropicBase()
	raw, err := base.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("llm: encoding the request: %w", err)
	}
	// The per-call fields: the SDK writes the required ones even unset.
	fields, err := t.fixedFields(raw, "messages", "max_tokens", "system")
	if err != nil {
		return nil, err
	}
	_, fixedMessages := fields["messages"]
	_, fixedSystem := fields["system"]
	_, fixedMaxTokens := fields["max_tokens"]
	r := &messagesRequest{messages: !fixedMessages, system: !fixedSystem, maxTokens: !fixedMaxTokens, cacheSystem: t.cfg.CachePrompt}
	if r.rest, err = joinFields(fields); err != nil {
		return nil, err
	}
	return r, nil
}

// body is the request's JSON for msgs, maxTokens and the paused turns
// sent back (each an answer's content, verbatim, as an assistant
// message): compact, with HTML characters escaped as encoding/json does,
// so the SDK's compaction of it changes nothing. A system message is
// Anthropic's system prompt; the last one wins.
//
// more are messages of other shapes (an agent's tool_use and tool_result
// turns), sent after msgs and before the paused turns.
func (r *messagesRequest) body(msgs []Message, maxTokens int, turns []json.RawMessage, more ...any) ([]byte, error) {
	size := len(r.rest) + 64
	for _, m := range msgs {
		size += len(m.Content) + len(m.Content)/8 + 64
	}
	for _, turn := range turns {
		size += len(turn) + 32
	}
	w := jsonWriter{buf: bytes.NewBuffer(make([]byte, 0, size))}
	w.enc = json.NewEncoder(w.buf)
	w.buf.WriteByte('{')
	if r.messages {
		if err := w.messages(msgs, turns, more); err != nil {
			return nil, err
		}
	}
	system := -1
	for i, m := range msgs {
		if m.Role == "system" {
			system = i
		}
	}
	if r.system && system >= 0 {
		w.comma()
		w.buf.WriteString(`"system":[{"type":"text","text":`)
		if err := w.string(msgs[system].Content); err != nil {
			return nil, err
		}
		if r.cacheSystem {
			w.buf.WriteString(`,"cache_control":{"type":"ephemeral"}`)
		}
		w.buf.WriteString(`}]`)
	}
	if r.maxTokens {
		w.comma()
		w.buf.WriteString(`"max_tokens":`)
		w.buf.Write(strconv.AppendInt(w.buf.AvailableBuffer(), int64(maxTokens), 10))
	}
	rest := r.rest
	if w.buf.Len() == 1 && len(rest) > 0 {
		rest = rest[1:]
	}
	w.buf.Write(rest)
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}

// jsonWriter writes a request body: strings through encoding/json, so
// they are escaped as the SDK escapes them.
type jsonWriter struct {
	buf *bytes.Buffer
	enc *json.Encoder
}

// comma separates a member from the one before it, if any.
func (w jsonWriter) comma() {
	if w.buf.Len() > 1 {
		w.buf.WriteByte(',')
	}
}

// string writes s as a JSON string.
func (w jsonWriter) string(s string) error {
	if err := w.enc.Encode(s); err != nil {
		return fmt.Errorf("llm: encoding the messages: %w", err)
	}
	w.buf.Truncate(w.buf.Len() - 1) // Encode's newline
	return nil
}

// messages writes the "messages" member: msgs but the system prompt, each
// a text block, then each paused turn as an assistant message.
func (w jsonWriter) messages(msgs []Message, turns []json.RawMessage, more []any) error {
	w.buf.WriteString(`"messages":[`)
	n := 0
	for _, m := range msgs {
		if m.Role == "system" {
			continue
		}
		if n > 0 {
			w.buf.WriteByte(',')
		}
		n++
		role := "user"
		if m.Role == "assistant" {
			role = "assistant"
		}
		w.buf.WriteString(`{"role":"` + role + `","content":[{"type":"text","text":`)
		if err := w.string(m.Content); err != nil {
			return err
		}
		w.buf.WriteString(`}]}`)
	}
	for _, m := range more {
		if n > 0 {
			w.buf.WriteByte(',')
		}
		n++
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("llm: encoding the messages: %w", err)
		}
		w.buf.Write(b)
	}
	for _, turn := range turns {
		if n > 0 {
			w.buf.WriteByte(',')
		}
		n++
		w.buf.WriteString(`{"role":"assistant","content":`)
		if err := json.Compact(w.buf, turn); err != nil {
			return fmt.Errorf("llm: encoding a paused turn: %w", err)
		}
		w.buf.WriteByte('}')
	}
	w.buf.WriteByte(']')
	return nil
}

// message is what tenax reads of an Anthropic message: its content
// blocks (and, for a paused turn, their JSON to send back), the stop
// reason and details, and the usage. Numbers are read as float64 so that
// a server that writes 12.0 for 12 is read as the SDK reads it.
type message struct {
	// Content is the content blocks' JSON, verbatim.
	Content     json.RawMessage `json:"content"`
	StopReason  string          `json:"stop_reason"`
	StopDetails struct {
		Explanation string `json:"explanation"`
	} `json:"stop_details"`
	Usage struct {
		InputTokens              float64 `json:"input_tokens"`
		OutputTokens             float64 `json:"output_tokens"`
		CacheCreationInputTokens float64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     float64 `json:"cache_read_input_tokens"`
	} `json:"usage"`

	// blocks is Content read.
	blocks []contentBlock
}

// contentBlock is what tenax reads of a content block: a text block's
// text, or a tool_use block's name and input.
type contentBlock struct {
	ID    string          `json:"id"`
	Type  string          `json:"type"`
	Text  string          `json:"text"`
	Name  string          `json:"name"`
	Input json.RawMessage `json:"input"`
}

// decodeMessage reads a message, online or from a batch's results. A
// body that is not JSON is an error; a field of an unexpected type is
// read as absent, as the SDK's lenient decoder does, rather than failing
// the whole answer.
func decodeMessage(body []byte) (*message, error) {
	msg := &message{}
	if err := json.Unmarshal(body, msg); err != nil && !isTypeError(err) {
		return nil, fmt.Errorf("error parsing response json: %w", err)
	}
	if len(msg.Content) > 0 {
		// Valid JSON by now: the only error left is a type's, a block
		// read as far as it goes.
		_ = json.Unmarshal(msg.Content, &msg.blocks)
	}
	return msg, nil
}

func isTypeError(err error) bool {
	var typeErr *json.UnmarshalTypeError
	return errors.As(err, &typeErr)
}

// add makes next, the answer to a paused turn sent back, part of the
// turn m: what every piece said and spent is the turn's, and the last
// piece says how it ended.
func (m *message) add(next *message) {
	m.blocks = append(m.blocks, next.blocks...)
	m.StopReason, m.StopDetails = next.StopReason, next.StopDetails
	m.Usage.InputTokens += next.Usage.InputTokens
	m.Usage.OutputTokens += next.Usage.OutputTokens
	m.Usage.CacheCreationInputTokens += next.Usage.CacheCreationInputTokens
	m.Usage.CacheReadInputTokens += next.Usage.CacheReadInputTokens
}

// anthropicReply reads a message, online or from a batch's results: its
// text, or under ModeTool the output tool's input.
func (t *Task) anthropicReply(msg *message) reply {
	u := msg.Usage
	var n usageCounts
	in, out := n.count("input_tokens", u.InputTokens), n.count("output_tokens", u.OutputTokens)
	created, read := n.count("cache_creation_input_tokens", u.CacheCreationInputTokens), n.count("cache_read_input_tokens", u.CacheReadInputTokens)
	total := in + created + read
	if in < 0 || created < 0 || read < 0 {
		total = -1 // impossible: counted as the estimate
	}
	rep := reply{
		finish: msg.StopReason,
		usage: task.Usage{
			InputTokens:       total,
			OutputTokens:      out,
			CachedInputTokens: max(read, 0),
			CacheWriteTokens:  max(created, 0),
			Impossible:        n.impossible,
		},
	}
	var b strings.Builder
	for _, block := range msg.blocks {
		switch block.Type {
		case "text":
			b.WriteString(block.Text)
		case "tool_use":
			if t.structured.Mode == ModeTool && block.Name == OutputTool {
				b.Reset()
				b.Write(block.Input)
			} else {
				rep.calls = append(rep.calls, agent.Call{ID: block.ID, Name: block.Name, Arguments: block.Input})
			}
		}
		// thinking and redacted_thinking blocks are the model's
		// reasoning, not its answer: counted in the usage, kept out of
		// the output.
	}
	rep.content = b.String()
	if msg.StopReason == string(anthropic.StopReasonRefusal) {
		rep.refusal = msg.StopDetails.Explanation
	}
	return rep
}
