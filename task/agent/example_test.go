package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// upperModel stands in for an llm task with tools: it asks for the tool
// "upper" once, then answers with what the tool said.
type upperModel struct{}

func (upperModel) Next(_ context.Context, item task.Item, _ []agent.Def, steps []agent.Step) (agent.Reply, error) {
	if len(steps) == 0 {
		args, _ := json.Marshal(map[string]any{"word": item.Fields["word"]})
		return agent.Reply{Calls: []agent.Call{{ID: "call-1", Name: "upper", Arguments: args}}}, nil
	}
	out, _ := json.Marshal(steps[0].Outcomes[0].Content)
	return agent.Reply{Result: task.Result{Output: out}}, nil
}

// An agent task runs one item's loop: the model asks for a tool, the
// tool's result goes back, and the model's final answer is the output.
// A real job builds the model from an llm task and the tools from the
// spec's task.tools (docs/agents.md).
func Example() {
	upper := task.Func(func(_ context.Context, it task.Item) (task.Result, error) {
		args := it.Fields[agent.ArgsField].(map[string]any)
		out, _ := json.Marshal(strings.ToUpper(args["word"].(string)))
		return task.Result{Output: out}, nil
	})
	tool, err := agent.NewTool(agent.Def{
		Name:        "upper",
		Description: "writes a word in capitals",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}`),
	}, upper, true)
	if err != nil {
		fmt.Println(err)
		return
	}
	a, err := agent.New(agent.Config{Model: upperModel{}, Tools: []*agent.Tool{tool}, MaxSteps: 5})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := a.Run(context.Background(), task.Item{Fields: map[string]any{"word": "tenax"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Output))
	// Output: "TENAX"
}
