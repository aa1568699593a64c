package gemini_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
)

// An llm task on provider gemini against the mock's Gemini API, which
// takes any key: the Client is the genai SDK's, pointed at the mock.
func Example() {
	ts := httptest.NewServer(mock.New(mock.Config{}))
	defer ts.Close()
	ctx := context.Background()
	client, err := gemini.New(ctx, gemini.Options{APIKey: "AIza-any", Endpoint: ts.URL})
	if err != nil {
		fmt.Println(err)
		return
	}
	t, err := llm.New(llm.Config{Provider: llm.ProviderGemini, Gemini: client, Model: mock.ModelEcho,
		System: "Be brief.", Prompt: "Say {{.word}}"})
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := t.Run(ctx, task.Item{Fields: map[string]any{"word": "hola"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(res.Output), res.FinishReason, res.Usage.InputTokens > 0)
	// Output:
	// "Say hola" STOP true
}
