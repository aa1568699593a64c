package llm

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// With Store, an agent step is sent with store: true and its tags as
// metadata, and Stored lists it back by the tags and reads it as Next
// did: the same tool calls, the same usage. Other tags (the next try)
// find nothing, wrapped as agent.ErrNotStored; without Store nothing is
// sent stored.
func TestAStoredAgentStepIsFoundAgainByItsTags(t *testing.T) {
	var log bytes.Buffer
	ts := httptest.NewServer(mock.New(mock.Config{Seed: 3, LogRequests: &log}))
	defer ts.Close()
	cfg := Config{Provider: ProviderOpenAI, BaseURL: ts.URL + "/v1", APIKey: "k", Model: mock.ModelAgent, Prompt: "Look up {{.q}}", Store: true}
	model := mustNew(t, cfg)
	if timeout, ok := model.Storing(); !ok || timeout != DefaultTimeout {
		t.Fatalf("Storing() = %v, %v; want the default timeout, true", timeout, ok)
	}
	defs := []agent.Def{{Name: "search", Parameters: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string"}}}`)}}
	item := task.Item{Idx: 2, Fields: map[string]any{"q": "x"}}
	tags := agent.Tags{Job: "j", Idx: 2, N: 1, Step: 1, Try: 1}
	sent, err := model.NextStored(t.Context(), item, defs, nil, tags)
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		Request struct {
			Store    bool              `json:"store"`
			Metadata map[string]string `json:"metadata"`
		} `json:"request"`
	}
	if err := json.Unmarshal(bytes.SplitN(log.Bytes(), []byte("\n"), 2)[0], &req); err != nil {
		t.Fatal(err)
	}
	if !req.Request.Store || req.Request.Metadata["tenax_try"] != "1" || req.Request.Metadata["tenax_job"] != "j" {
		t.Errorf("the request sent store %v, metadata %v: want store true and the tags", req.Request.Store, req.Request.Metadata)
	}
	got, err := model.Stored(t.Context(), item, tags)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Calls) == 0 || got.Calls[0].ID != sent.Calls[0].ID || got.Result.Usage != sent.Result.Usage {
		t.Errorf("Stored read %+v, want what NextStored got: %+v", got, sent)
	}
	tags.Try = 2
	if _, err := model.Stored(t.Context(), item, tags); !errors.Is(err, agent.ErrNotStored) {
		t.Errorf("Stored for try 2 = %v, want agent.ErrNotStored: only try 1 was sent", err)
	}

	cfg.Store = false
	plain := mustNew(t, cfg)
	if _, ok := plain.Storing(); ok {
		t.Error("Storing() is true with Store off")
	}
}

// New refuses Store where the provider keeps no stored completions.
func TestStoreIsRefusedOnProvidersWithoutStoredCompletions(t *testing.T) {
	for _, p := range []string{ProviderAnthropic, ProviderMock} {
		_, err := New(Config{Provider: p, APIKey: "k", Model: "m", Prompt: "p", Store: true})
		if err == nil {
			t.Errorf("provider %s took Store", p)
		}
	}
}
