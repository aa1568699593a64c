package mock

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
)

// ModelAgent plays an agent when a request carries tools (and no
// tool_choice forces one or none): it calls them over a few steps, one or
// two calls an answer, and then answers as mock-echo does (or fills the
// schema of a structured output; on Bedrock's wire, where a tool named
// output carries that schema, it ends by calling that tool, and never
// calls it as a step). Like a real model it slips: some steps
// call a tool with arguments that do not match its schema, some call a
// tool the request does not have, some answer before the plan's last
// step, and some final answers are text where the output tool was asked
// for. Every move is drawn from the Config's Seed, the conversation's
// first question and the number of steps already taken, so the same
// conversation meets the same moves whatever the order of requests
// (docs/mock.md, "The agent model"). Without tools it answers as
// mock-echo.
const ModelAgent = "mock-agent"

// The odds of the agent model's slips, in percent of its steps.
const (
	agentEarlyFinal   = 8
	agentUnknownTool  = 8
	agentBadArguments = 12
	// agentUnknownName is the tool the agent calls that no request has.
	agentUnknownName = "mock_unknown_tool"
	// agentTextFinal is the odds that a final answer is text where the
	// output tool was offered for it: the slip heal's feedback answers.
	agentTextFinal = 10
	// bedrockOutputTool is the name, on Bedrock's wire, of the tool whose
	// input is the final answer: tenax sends a structured output so
	// beside an agent's tools (Converse has no other way).
	bedrockOutputTool = "output"
)

// outputTool is the tool of x whose call is the agent model's final
// answer, nil if none: on Bedrock's wire, a tool named output.
func (x *exchange) outputTool() *wireTool {
	if !x.converseTools {
		return nil
	}
	return toolByName(x.req.Tools, bedrockOutputTool)
}

// agentTools are the tools the agent model calls as steps: the request's
// but the output tool.
func (x *exchange) agentTools() []wireTool {
	out := x.outputTool()
	if out == nil {
		return x.req.Tools
	}
	var tools []wireTool
	for _, t := range x.req.Tools {
		if t.name() != out.name() {
			tools = append(tools, t)
		}
	}
	return tools
}

// agentOutputCall is the agent model's final answer as a call of the
// output tool out, its input filled from out's schema; nil when the
// model slips and answers in text (agentTextFinal of the finals). A heal
// re-ask, whose conversation holds the text answer it was told to give
// as a call, never slips again: told how to answer, the mock complies,
// so one slip costs one re-ask and never fails an item (a second slip
// drawn at 10% failed 1 item in 40 as "re-asks change nothing").
func (x *exchange) agentOutputCall(seed int64, out *wireTool) []toolCall {
	if !x.answeredInText() && agentDraw(seed, x.prompt, -2-len(*x.req.Messages))%100 < agentTextFinal {
		return nil
	}
	args := mustJSON(fromSchema(out.schema(), x.prompt, x.model))
	return []toolCall{{id: fmt.Sprintf("%s%012d", x.d.toolCallPrefix, x.seq), name: out.name(), args: string(args)}}
}

// agentMove is the agent model's next move for x: its tool calls, none
// for a final answer; plays is false when the agent model does not play
// (another model, no tools, a forced tool_choice).
func (x *exchange) agentMove(seed int64) (calls []toolCall, plays bool) {
	if x.model != ModelAgent || len(x.req.Tools) == 0 {
		return nil, false
	}
	if mode, _ := x.toolChoice(); mode == "tool" || mode == "none" {
		return nil, false
	}
	step := x.agentSteps()
	plan := 1 + int(agentDraw(seed, x.prompt, -1)%3) // 1 to 3 steps of tool calls
	tools := x.agentTools()
	if step >= plan || len(tools) == 0 {
		return nil, true
	}
	r := agentDraw(seed, x.prompt, step)
	roll := int(r % 100)
	tool := &tools[step%len(tools)]
	args := string(mustJSON(fromSchema(tool.schema(), x.prompt, ModelEcho)))
	id := func(i int) string { return fmt.Sprintf("%s%010d%02d", x.d.toolCallPrefix, x.seq, i) }
	switch {
	case roll < agentEarlyFinal && step > 0:
		return nil, true
	case roll < agentEarlyFinal+agentUnknownTool:
		return []toolCall{{id: id(0), name: agentUnknownName, args: args}}, true
	case roll < agentEarlyFinal+agentUnknownTool+agentBadArguments:
		return []toolCall{{id: id(0), name: tool.name(), args: badArguments(args, x.seq)}}, true
	}
	calls = []toolCall{{id: id(0), name: tool.name(), args: args}}
	if len(tools) > 1 && r/100%3 == 0 {
		// Two calls in one answer, as models do for independent lookups.
		next := &tools[(step+1)%len(tools)]
		calls = append(calls, toolCall{id: id(1), name: next.name(), args: string(mustJSON(fromSchema(next.schema(), x.prompt, ModelEcho)))})
	}
	return calls, true
}

// badArguments are args that no schema with a required field or a typed
// property accepts: a field dropped and an unexpected one added, or, for
// arguments with no field, an array. Both dialects can carry them: an
// object with a missing field is valid JSON for Anthropic's tool_use
// input, and an array arrives as an input that is not an object.
func badArguments(args string, seq int64) string {
	var obj map[string]any
	if json.Unmarshal([]byte(args), &obj) != nil || len(obj) == 0 {
		return `["not", "an", "object"]`
	}
	return dropRequired(args, seq)
}

// agentSteps counts the assistant turns of x's conversation that called
// tools: the steps the agent has taken.
func (x *exchange) agentSteps() int {
	if x.req.Messages == nil {
		return 0
	}
	n := 0
	for _, m := range *x.req.Messages {
		if m.Role != "assistant" {
			continue
		}
		if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]" {
			n++
			continue
		}
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_use" {
				n++
				break
			}
		}
	}
	return n
}

// answeredInText reports whether the conversation holds an assistant
// turn without a tool call: a final answer in text, which a heal re-ask
// shows the model with its feedback (every step of the loop is a call).
func (x *exchange) answeredInText() bool {
	if x.req.Messages == nil {
		return false
	}
	for _, m := range *x.req.Messages {
		if m.Role != "assistant" || (len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" && string(m.ToolCalls) != "[]") {
			continue
		}
		called := false
		for _, b := range blocks(m.Content) {
			if b.Type == "tool_use" {
				called = true
				break
			}
		}
		if !called {
			return true
		}
	}
	return false
}

// agentDraw is a deterministic draw for a conversation's step.
func agentDraw(seed int64, prompt string, step int) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(seed))
	binary.LittleEndian.PutUint64(b[8:], uint64(int64(step)))
	_, _ = h.Write(b[:])
	_, _ = h.Write([]byte(prompt))
	return h.Sum64()
}
