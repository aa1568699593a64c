package llm_test

import (
	"context"
	"fmt"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// An LLM task against the in-process mock provider: mock-json answers
// with the prompt and its length, as JSON. Without a schema, JSON output
// is asked for with OpenAI's json_object mode, and since no message says
// "JSON", the task adds "Answer with JSON." as a system prompt (which the
// input tokens count).
func Example() {
	provider := mock.New(mock.Config{})
	t, err := llm.New(llm.Config{
		Provider:   llm.ProviderMock,
		Model:      mock.ModelJSON,
		Prompt:     "Translate '{{.word}}' to Spanish.",
		Output:     llm.OutputJSON,
		HTTPClient: provider.Client(),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := t.Run(context.Background(), task.Item{Fields: map[string]any{"word": "cat"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(t.Structured().Mode)
	fmt.Println(string(res.Output))
	fmt.Println("tokens:", res.Usage.InputTokens, "in,", res.Usage.OutputTokens, "out; cost:", res.CostUSD)
	// Output:
	// json_object
	// {"text":"Translate 'cat' to Spanish.","length":27}
	// tokens: 11 in, 12 out; cost: 0
}
