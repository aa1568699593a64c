package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/openai/openai-go/v3"
	ooption "github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// Stored chat completions (Config.Store): an agent's step is sent with
// store: true and its tags as metadata; the provider keeps the answer,
// billed once, and lists it by the tags (GET /v1/chat/completions?
// metadata[k]=v), which costs no tokens. A process killed with the call
// in flight leaves an answer that the resumed process reads back
// (agent.StoringModel) instead of asking for it again.

// checkStore refuses Config.Store where the provider keeps no stored
// completions.
func checkStore(cfg Config) error {
	if !cfg.Store {
		return nil
	}
	switch cfg.Provider {
	case ProviderOpenAI, ProviderAzure:
		return nil
	case ProviderMock:
		return fmt.Errorf("llm: store: the in-process mock dies with the process, and the answers it stored with it: run `tenax mock` and point provider openai's base_url at it")
	}
	return fmt.Errorf("llm: store: provider %s keeps no stored completions to look answers up in (OpenAI's and Azure OpenAI's chat completions do): remove store", cfg.Provider)
}

// withStore adds store: true and tags as metadata to a chat completion's
// body.
func withStore(body []byte, tags map[string]string) ([]byte, error) {
	meta, err := json.Marshal(tags)
	if err != nil {
		return nil, fmt.Errorf("llm: encoding the metadata: %w", err)
	}
	return withMember(withMember(body, "store", []byte("true")), "metadata", meta), nil
}

// Storing reports whether the task's agent steps are stored
// (agent.StoringModel), and its timeout: the longest a call may run.
func (t *Task) Storing() (time.Duration, bool) { return t.cfg.Timeout, t.cfg.Store }

// NextStored is Next with the call stored under tags (Config.Store).
func (t *Task) NextStored(ctx context.Context, item task.Item, defs []agent.Def, steps []agent.Step, tags agent.Tags) (agent.Reply, error) {
	return t.next(ctx, item, defs, steps, tags.Metadata())
}

// Stored returns the answer the provider stored under tags
// (agent.StoringModel): listed by the tags, and read as
// Next reads an answer, with its usage and cost (paid once, when it was
// answered). None listed, or a listing that fails, is an error wrapping
// agent.ErrNotStored.
func (t *Task) Stored(ctx context.Context, item task.Item, tags agent.Tags) (agent.Reply, error) {
	meta := tags.Metadata()
	lctx, cancel := context.WithTimeout(ctx, t.cfg.Timeout)
	defer cancel()
	list := t.listOpenAI
	if t.cfg.Provider == ProviderAzure {
		list = t.listAzure
	}
	found, err := list(lctx, meta)
	if err != nil {
		return agent.Reply{}, fmt.Errorf("llm %s: listing stored completions: %w: %w", t.cfg.Provider, t.redact(err), agent.ErrNotStored)
	}
	for _, raw := range found {
		var tagged struct {
			Metadata map[string]string `json:"metadata"`
		}
		if json.Unmarshal(raw, &tagged) != nil || !sameTags(tagged.Metadata, meta) {
			continue // a server that ignored the filter
		}
		rep, err := decodeChatCompletion(raw)
		if err != nil {
			return agent.Reply{}, fmt.Errorf("llm %s: a stored completion: %w: %w", t.cfg.Provider, err, agent.ErrNotStored)
		}
		res := task.Result{Usage: rep.usage, FinishReason: rep.finish}
		if t.priced {
			res.CostUSD = t.price.Cost(rep.usage)
		}
		return t.agentReply(rep, res, t.maxTokensFor(item))
	}
	return agent.Reply{}, fmt.Errorf("llm %s: no completion stored under %v: %w", t.cfg.Provider, meta, agent.ErrNotStored)
}

// sameTags reports whether got holds every one of want's tags.
func sameTags(got, want map[string]string) bool {
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// listOpenAI lists the completions stored under meta through the SDK
// (client.Chat.Completions.List). It does not filter by model: a stored
// completion names the model that answered (a snapshot,
// "gpt-4o-mini-2024-07-18", or on Azure the deployment's model), not
// the name asked for, and the tags name the call alone.
func (t *Task) listOpenAI(ctx context.Context, meta map[string]string) ([]json.RawMessage, error) {
	client := openai.NewClient(t.openAIClientOptions()...)
	page, err := client.Chat.Completions.List(ctx, openai.ChatCompletionListParams{
		Metadata: shared.Metadata(meta), Limit: openai.Int(100),
	}, ooption.WithMaxRetries(0))
	if err != nil {
		return nil, err
	}
	out := make([]json.RawMessage, len(page.Data))
	for i, c := range page.Data {
		out[i] = json.RawMessage(c.RawJSON())
	}
	return out, nil
}

// listAzure lists them on Azure OpenAI, at the resource's
// /openai/chat/completions (not a deployment's path, which the SDK's
// Azure routing would pick for a request to chat/completions, and which
// needs a body). It needs an api_version that has stored completions
// (2025-02-01-preview or later).
func (t *Task) listAzure(ctx context.Context, meta map[string]string) ([]json.RawMessage, error) {
	q := url.Values{"api-version": {t.cfg.APIVersion}, "limit": {"100"}}
	for k, v := range meta {
		q.Set("metadata["+k+"]", v)
	}
	for k, vs := range t.query {
		q[k] = append(q[k], vs...)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(t.endpoint, "/")+"/openai/chat/completions?"+q.Encode(), nil)
	if err != nil {
		return nil, err
	}
	for name, v := range t.cfg.Headers {
		req.Header.Set(name, v)
	}
	if t.cfg.APIKey != "" {
		req.Header.Set("api-key", t.cfg.APIKey)
	} else {
		req.Header.Set("Authorization", "Bearer "+t.cfg.AzureADToken)
	}
	res, err := t.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, t.cfg.MaxAnswerBytes))
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /openai/chat/completions: status %d: %s", res.StatusCode, body)
	}
	var page struct {
		Data []json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &page); err != nil {
		return nil, err
	}
	return page.Data, nil
}

var _ agent.StoringModel = (*Task)(nil)
