package llm_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// TestKeyEchoedByTheServerLeavesNoLayerOfTheChain: a server that quotes the
// key in its error body must not put it in any layer Inspect shows.
func TestKeyEchoedByTheServerLeavesNoLayerOfTheChain(t *testing.T) {
	const key = "sk-ant-SECRET123456"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key ` + key + `"}}`))
	}))
	defer srv.Close()
	tk, err := llm.New(llm.Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: key, Model: "claude-3-5-haiku-latest", Prompt: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Run(context.Background(), task.Item{})
	if err == nil {
		t.Fatal("want the 401")
	}
	for i, layer := range classify.Describe(err).Chain {
		if strings.Contains(layer, key) {
			t.Errorf("layer %d of the error chain holds the key: %s", i, layer)
		}
	}
}

// TestLargeAnthropicMaxTokensReachTheServer: the SDK must not refuse a
// large max_tokens locally ("streaming is required").
func TestLargeAnthropicMaxTokensReachTheServer(t *testing.T) {
	var hits atomic.Int64
	m := mock.New(mock.Config{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		m.ServeHTTP(w, r)
	}))
	defer srv.Close()
	tk, err := llm.New(llm.Config{Provider: "anthropic", BaseURL: srv.URL, APIKey: "k-123456", Model: "claude-opus-4-0", Prompt: "hi", MaxTokens: 32000})
	if err != nil {
		t.Fatal(err)
	}
	_, err = tk.Run(context.Background(), task.Item{})
	if hits.Load() != 1 {
		t.Fatalf("the server saw %d requests (error %v): the call was refused before it was made", hits.Load(), err)
	}
}

type mapCache map[string][]byte

func (m mapCache) Get(k string) ([]byte, bool, error) { v, ok := m[k]; return v, ok, nil }
func (m mapCache) Put(k string, v []byte) error       { m[k] = v; return nil }

func TestCachedSaysWhatRunWouldServe(t *testing.T) {
	c := mapCache{}
	tk, err := llm.New(llm.Config{Provider: "mock", Model: "mock-echo", Prompt: "say {{.w}}", Cache: c})
	if err != nil {
		t.Fatal(err)
	}
	it := task.Item{Fields: map[string]any{"w": "hi"}}
	if tk.Cached(it) {
		t.Fatal("Cached before any call")
	}
	if _, err := tk.Run(context.Background(), it); err != nil {
		t.Fatal(err)
	}
	if !tk.Cached(it) {
		t.Error("not Cached after a successful call")
	}
	if tk.Cached(task.Item{Fields: map[string]any{"w": "other"}}) {
		t.Error("another item reported Cached")
	}
}
