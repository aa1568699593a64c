package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// agentTurns is what a call of an agent step sends beyond the item's
// conversation: the tools, and the steps so far.
type agentTurns struct {
	defs  []agent.Def
	steps []agent.Step
}

// Next asks the model one step of an agent (agent.Model): the item's
// conversation, then each step's tool calls and their results, with the
// tools sent as the provider's native tool calling (OpenAI's tools and
// tool_calls, Anthropic's tools, tool_use and tool_result, Bedrock
// Converse's toolConfig, toolUse and toolResult, Gemini's
// functionDeclarations, functionCall and functionResponse). An answer
// with tool calls comes back as them; any other is the final answer,
// made the output as Run makes it, with the same errors. Agent steps are
// never served from nor put in the response cache.
func (t *Task) Next(ctx context.Context, item task.Item, defs []agent.Def, steps []agent.Step) (agent.Reply, error) {
	return t.next(ctx, item, defs, steps, nil)
}

// next is Next, the call stored under tags when they are not nil.
func (t *Task) next(ctx context.Context, item task.Item, defs []agent.Def, steps []agent.Step, tags map[string]string) (agent.Reply, error) {
	if t.wire == ProviderAnthropic && t.structured.Mode == ModeTool {
		return agent.Reply{}, errors.New("llm anthropic: the schema's structured output takes the tool slot: use a model with output_config formats for an agent")
	}
	msgs, err := t.Messages(item)
	if err != nil {
		return agent.Reply{}, err
	}
	c := &call{msgs: msgs, maxTokens: t.maxTokensFor(item), agent: &agentTurns{defs: defs, steps: steps}, tags: tags}
	c.prompt = t.counter.count(append(msgs, stepMessages(steps)...))
	rep, res, err := t.exchange(ctx, c)
	if err != nil {
		return agent.Reply{Result: res}, err
	}
	return t.agentReply(rep, res, c.maxTokens)
}

// agentReply is an agent step's answer: its tool calls, or the final
// answer made the output.
func (t *Task) agentReply(rep reply, res task.Result, maxTokens int) (agent.Reply, error) {
	if len(rep.calls) > 0 && stopKind(rep) == "" {
		return agent.Reply{Text: rep.content, Calls: rep.calls, Result: res}, nil
	}
	if err := t.checkToolAnswer(rep); err != nil {
		return agent.Reply{Result: res}, err
	}
	out, err := t.output(rep, maxTokens)
	res.Output = out
	return agent.Reply{Result: res}, err
}

// errNoOutputToolCall is the feedback to an agent's final answer in
// text where the output tool's call was asked for.
var errNoOutputToolCall = fmt.Errorf("the final answer is text that is not JSON, and the tool %q was not called: give the final answer by calling %s, its input the answer in the required shape", OutputTool, OutputTool)

// checkToolAnswer says what is wrong with an agent's final answer on
// Bedrock under ModeTool, where the output tool is one of the model's
// choices, not forced: an answer in text is taken when it is JSON (then
// validated as any answer), and is otherwise invalid with feedback that
// names the tool — the heal re-ask, not an item failure. A stop that is
// not a finished answer (max_tokens, a guardrail) is output's to say.
func (t *Task) checkToolAnswer(rep reply) error {
	if t.wire != ProviderBedrock || t.structured.Mode != ModeTool || rep.toolAnswer || stopKind(rep) != "" {
		return nil
	}
	if text := strings.TrimSpace(stripFence(rep.content)); text == "" || !json.Valid([]byte(text)) {
		return invalid(rep.content, errNoOutputToolCall)
	}
	return nil
}

// stepMessages are steps as plain messages, for counting their tokens.
func stepMessages(steps []agent.Step) []Message {
	var msgs []Message
	for _, s := range steps {
		var b bytes.Buffer
		b.WriteString(s.Text)
		for _, c := range s.Calls {
			b.WriteString(c.Name)
			b.Write(c.Arguments)
		}
		msgs = append(msgs, Message{Role: "assistant", Content: b.String()})
		for _, o := range s.Outcomes {
			msgs = append(msgs, Message{Role: "user", Content: o.Content})
		}
	}
	return msgs
}

// openAITools is defs as the chat completions API's tools.
func openAITools(defs []agent.Def) ([]byte, error) {
	type function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	type tool struct {
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	tools := make([]tool, len(defs))
	for i, d := range defs {
		tools[i] = tool{Type: "function", Function: function{Name: d.Name, Description: d.Description, Parameters: d.Parameters}}
	}
	return marshal(tools)
}

// openAIStepMessages are steps as chat completion messages: the
// assistant's tool_calls, then a "tool" message per call.
func openAIStepMessages(steps []agent.Step) []any {
	type function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	}
	type toolCall struct {
		ID       string   `json:"id"`
		Type     string   `json:"type"`
		Function function `json:"function"`
	}
	type assistant struct {
		Role      string     `json:"role"`
		Content   *string    `json:"content"`
		ToolCalls []toolCall `json:"tool_calls"`
	}
	type result struct {
		Role       string `json:"role"`
		ToolCallID string `json:"tool_call_id"`
		Content    string `json:"content"`
	}
	var out []any
	for _, s := range steps {
		a := assistant{Role: "assistant"}
		if s.Text != "" {
			a.Content = &s.Text
		}
		for _, c := range s.Calls {
			a.ToolCalls = append(a.ToolCalls, toolCall{ID: c.ID, Type: "function", Function: function{Name: c.Name, Arguments: string(c.Arguments)}})
		}
		out = append(out, a)
		for _, o := range s.Outcomes {
			content := o.Content
			if o.IsError {
				content = "error: " + content
			}
			out = append(out, result{Role: "tool", ToolCallID: o.CallID, Content: content})
		}
	}
	return out
}

// anthropicTools is defs as the messages API's tools.
func anthropicTools(defs []agent.Def) ([]byte, error) {
	type tool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	tools := make([]tool, len(defs))
	for i, d := range defs {
		tools[i] = tool{Name: d.Name, Description: d.Description, InputSchema: d.Parameters}
	}
	return marshal(tools)
}

// anthropicStepMessages are steps as messages: the assistant's text and
// tool_use blocks, then a user message of tool_result blocks. A tool_use
// block's input must be an object: arguments that are not one (the API
// parses them, so only a stand-in sends such) go as {}.
func anthropicStepMessages(steps []agent.Step) []any {
	type block struct {
		Type      string          `json:"type"`
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     json.RawMessage `json:"input,omitempty"`
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
		IsError   bool            `json:"is_error,omitempty"`
	}
	type message struct {
		Role    string  `json:"role"`
		Content []block `json:"content"`
	}
	var out []any
	for _, s := range steps {
		a := message{Role: "assistant"}
		if s.Text != "" {
			a.Content = append(a.Content, block{Type: "text", Text: s.Text})
		}
		for _, c := range s.Calls {
			input := c.Arguments
			var obj map[string]json.RawMessage
			if json.Unmarshal(input, &obj) != nil || obj == nil {
				input = json.RawMessage(`{}`)
			}
			a.Content = append(a.Content, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
		}
		u := message{Role: "user"}
		for _, o := range s.Outcomes {
			u.Content = append(u.Content, block{Type: "tool_result", ToolUseID: o.CallID, Content: o.Content, IsError: o.IsError})
		}
		out = append(out, a, u)
	}
	return out
}

// marshal encodes v as the request bodies are: compact, HTML characters
// escaped.
func marshal(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("llm: encoding the tools: %w", err)
	}
	return b, nil
}

// withMember returns body, a JSON object as the request builders write
// it, with name: value added last.
func withMember(body []byte, name string, value []byte) []byte {
	body = body[:len(body)-1] // the object's closing brace
	out := make([]byte, 0, len(body)+len(name)+len(value)+6)
	out = append(out, body...)
	if len(body) > 1 {
		out = append(out, ',')
	}
	out = append(out, '"')
	out = append(out, name...)
	out = append(out, `":`...)
	out = append(out, value...)
	return append(out, '}')
}

// openAIMore are the agent step's messages in OpenAI's shape, none for a
// call that is not an agent's.
func (c *call) openAIMore() []any {
	if c.agent == nil {
		return nil
	}
	return openAIStepMessages(c.agent.steps)
}

// anthropicMore are the agent step's messages in Anthropic's shape.
func (c *call) anthropicMore() []any {
	if c.agent == nil {
		return nil
	}
	return anthropicStepMessages(c.agent.steps)
}
