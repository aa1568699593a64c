package gemini_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/gemini"
)

// TestAnAgentStepOnGeminiIsRefusedRatherThanSentWithoutItsTools: the
// Gemini wire sends no tools yet; a step sent without them would be
// answered as if the model had none, and the agent loop would end at
// once with an answer that never used a tool.
func TestAnAgentStepOnGeminiIsRefusedRatherThanSentWithoutItsTools(t *testing.T) {
	ts := httptest.NewServer(mock.New(mock.Config{}))
	defer ts.Close()
	client, err := gemini.New(context.Background(), gemini.Options{APIKey: "AIza-any", Endpoint: ts.URL})
	if err != nil {
		t.Fatal(err)
	}
	m, err := llm.New(llm.Config{Provider: llm.ProviderGemini, Gemini: client, Model: mock.ModelAgent, Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	defs := []agent.Def{{Name: "search", Description: "d", Parameters: json.RawMessage(`{"type":"object"}`)}}
	_, err = m.Next(t.Context(), task.Item{}, defs, nil)
	if err == nil || !strings.Contains(err.Error(), "tools are not sent to gemini") {
		t.Errorf("Next on gemini = %v; want a refusal saying tools are not sent to gemini", err)
	}
}
