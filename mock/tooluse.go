package mock

import (
	"encoding/json"
	"fmt"
	"slices"
)

// toolBlock is a tool turn's content in the shape the handler reads
// (Anthropic's blocks): the Bedrock and Gemini decoders write theirs as
// it, so that counting the agent's steps and finding a tool's result is
// one code for every dialect.
type toolBlock struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	ToolUseID string `json:"tool_use_id,omitempty"`
	Content   string `json:"content,omitempty"`
}

// contentOf is a message's content: its text as a JSON string when it
// holds no tool block (as the decoders wrote every message before tools),
// else its blocks, "" text left out.
func contentOf(blocks []toolBlock) json.RawMessage {
	var text string
	tools := false
	for _, b := range blocks {
		text += b.Text + b.Content
		tools = tools || b.Type != "text"
	}
	if !tools {
		if text == "" {
			return nil
		}
		return mustJSON(text)
	}
	return mustJSON(slices.DeleteFunc(slices.Clone(blocks), func(b toolBlock) bool { return b.Type == "text" && b.Text == "" }))
}

// unansweredCalls is the first problem of a conversation's tool turns, as
// Bedrock and Gemini both refuse it: a turn of tool calls must be
// followed by a user turn answering each of them, and a tool result must
// answer a call of the turn before. byID says results name their calls by
// id (Bedrock's toolUseId); otherwise (Gemini, whose calls may have no id)
// the counts must match. It returns the 0-based index of the message at
// fault and what is wrong, -1 when nothing is.
func unansweredCalls(msgs []wireMessage, byID bool) (int, string) {
	var calls []toolBlock
	for i, m := range msgs {
		var bs []toolBlock
		if json.Unmarshal(m.Content, &bs) != nil {
			bs = nil
		}
		var results []toolBlock
		for _, b := range bs {
			if b.Type == "tool_result" {
				results = append(results, b)
			}
		}
		if len(calls) > 0 {
			if m.Role != "user" || len(results) != len(calls) {
				return i, fmt.Sprintf("%d tool calls of the turn before want %d results, got %d", len(calls), len(calls), len(results))
			}
			for _, c := range calls {
				if byID && !slices.ContainsFunc(results, func(r toolBlock) bool { return r.ToolUseID == c.ID }) {
					return i, "the call " + c.ID + " has no result"
				}
			}
		} else if len(results) > 0 {
			return i, "tool results answer no call of the turn before"
		}
		calls = calls[:0]
		if m.Role == "assistant" {
			for _, b := range bs {
				if b.Type == "tool_use" {
					calls = append(calls, b)
				}
			}
		}
	}
	return -1, ""
}
