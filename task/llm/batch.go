package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	ooption "github.com/openai/openai-go/v3/option"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// Batch is a Task as the providers' batch APIs need it (package batch):
// the body of the call Run would make for an item, and the result Run
// would return for an answer. Both come from the same code as Run's, so a
// batched item is asked exactly what an online one is: the same messages,
// parameters, heal conversation, output rules and price.
type Batch struct {
	t *Task
	// send is the task's sender whose transport keeps the request body
	// instead of sending it.
	send func(ctx context.Context, c *call, cp *capture) (reply, error)
}

// Batch returns the task's batch view.
func (t *Task) Batch() *Batch {
	shadow := *t
	shadow.cfg.HTTPClient = &http.Client{Transport: bodyKeeper{}}
	// A batch body is Anthropic's own: Claude on Vertex AI has no batch
	// API tenax speaks (spec refuses such a job).
	shadow.cfg.Vertex = nil
	b := &Batch{t: t}
	switch t.wire {
	case ProviderAnthropic:
		b.send = shadow.anthropicSender()
	case ProviderGemini:
		b.send = shadow.geminiSender()
	default:
		b.send = shadow.openAISender()
	}
	return b
}

// Wire returns the wire format of the provider: ProviderOpenAI (openai and
// mock), ProviderAnthropic or ProviderGemini, which says which batch API
// to use.
func (b *Batch) Wire() string { return b.t.wire }

// Provider returns the Config's provider name.
func (b *Batch) Provider() string { return b.t.cfg.Provider }

// Model returns the model the task calls: the Gemini batch's, which names
// it in its path rather than in each request.
func (b *Batch) Model() string { return b.t.cfg.Model }

// Endpoint returns what a batch client needs to reach the provider: the
// base URL, the API key and the HTTP client of the task, which adds the
// task's headers to every request as Run does (the batch calls of
// Gemini's and Anthropic's clients go through it, not through Run's
// SDK options).
func (b *Batch) Endpoint() (baseURL, apiKey string, client *http.Client) {
	client = b.t.cfg.HTTPClient
	if len(b.t.cfg.Headers) > 0 {
		c := *client
		next := c.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		c.Transport = headerTransport{next: next, headers: b.t.cfg.Headers}
		client = &c
	}
	return b.t.cfg.BaseURL, b.t.cfg.APIKey, client
}

// headerTransport sets headers on each request, in the order Run sets
// them, and sends it through next.
type headerTransport struct {
	next    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for _, name := range sortedKeys(h.headers) {
		r.Header.Set(name, h.headers[name])
	}
	return h.next.RoundTrip(r)
}

// OpenAIOptions are the options of an OpenAI SDK client that reaches the
// task's provider as Run does (endpoint, credentials, Azure's routing,
// headers, the HTTP client, no retries), for the batch API's client.
func (b *Batch) OpenAIOptions() []ooption.RequestOption { return b.t.openAIClientOptions() }

// Redact hides the API key in s.
func (b *Batch) Redact(err error) error { return b.t.redact(err) }

// bodyKey is the context key under which bodyKeeper stores a body.
type bodyKey struct{}

// errKept ends a round trip whose body was kept.
var errKept = errors.New("llm: request body kept for a batch")

// bodyKeeper is a RoundTripper that keeps the request body in the slot the
// request's context carries and sends nothing.
type bodyKeeper struct{}

func (bodyKeeper) RoundTrip(req *http.Request) (*http.Response, error) {
	slot, _ := req.Context().Value(bodyKey{}).(*[]byte)
	if slot == nil || req.Body == nil {
		return nil, errKept
	}
	defer req.Body.Close()
	b, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	*slot = b
	return nil, errKept
}

// Body returns the JSON body of the call Run would make for item: a chat
// completions request for the OpenAI wire format, a messages request for
// Anthropic's, a generateContent request for Gemini's. A template that cannot render gives Run's error, marked
// classify.Item.
func (b *Batch) Body(item task.Item) (json.RawMessage, error) {
	c, err := b.t.prepare(item)
	if err != nil {
		return nil, err
	}
	var body []byte
	ctx := context.WithValue(context.Background(), bodyKey{}, &body)
	if _, err := b.send(ctx, c, &capture{}); body == nil {
		return nil, fmt.Errorf("llm: building the request body: %w", err)
	}
	return body, nil
}

// EstimateTokens returns the tokens Run's request for item is estimated
// to take (its prompt and max_tokens), as the online rate limiters count
// them: what batch mode counts against an enqueued-token cap.
func (b *Batch) EstimateTokens(item task.Item) int { return b.t.EstimateTokens(item) }

// Cached returns the result Run would serve from the response cache for
// item, and false when the cache holds none (or there is no cache).
func (b *Batch) Cached(item task.Item) (task.Result, bool) {
	if b.t.cfg.Cache == nil {
		return task.Result{}, false
	}
	c, err := b.t.prepare(item)
	if err != nil {
		return task.Result{}, false
	}
	out, ok := b.t.lookup(c)
	if !ok {
		return task.Result{}, false
	}
	return task.Result{Output: out, CacheHit: true, CacheKey: c.key}, true
}

// Result reads a provider's successful answer to item's request (a chat
// completion or a message, as JSON) and returns what Run would have: the
// usage, the cost at the full price, and the output, or a
// *task.OutputError marked classify.Invalid for an unusable answer. A good
// output is put in the response cache. A body that cannot be decoded is
// an error marked classify.Retryable.
func (b *Batch) Result(item task.Item, body json.RawMessage) (task.Result, error) {
	// The answer is read by the same code as Run's, so that a batch answer
	// gives what the online answer would (under ModeTool the output tool's
	// input, not the text blocks).
	rep, err := b.decode(body)
	if err != nil {
		return task.Result{}, malformed(b.t.cfg.Provider, err)
	}
	c, err := b.t.prepare(item)
	if err != nil {
		rep.usage = possibleUsage(rep.usage, 0, int64(b.t.maxTokens))
	} else {
		rep.usage = possibleUsage(rep.usage, int64(b.t.scale.apply(c.prompt)), int64(c.maxTokens))
	}
	res := task.Result{Usage: rep.usage, FinishReason: rep.finish}
	if b.t.priced {
		res.CostUSD = b.t.price.Cost(rep.usage)
	}
	if err != nil {
		return res, err
	}
	out, err := b.t.output(rep, c.maxTokens)
	if err != nil {
		if b.t.cfg.Cache != nil {
			res.CacheKey = c.key // the question's, for a heal to be remembered under
		}
		return res, err
	}
	res.Output = out
	if b.t.cfg.Cache != nil && b.t.cfg.Cache.Put(c.key, out) == nil {
		res.CacheKey = c.key
	}
	return res, nil
}

// decode reads a successful answer in the task's wire format.
func (b *Batch) decode(body json.RawMessage) (reply, error) {
	switch b.t.wire {
	case ProviderAnthropic:
		m, err := decodeMessage(body)
		if err != nil {
			return reply{}, err
		}
		return b.t.anthropicReply(m), nil
	case ProviderGemini:
		d, ok := b.t.cfg.Gemini.(GenerateDecoder)
		if !ok {
			return reply{}, errors.New("the generateContent client cannot read a batch answer")
		}
		out, err := d.DecodeGenerate(body)
		if err != nil {
			return reply{}, err
		}
		return geminiReply(out), nil
	}
	return decodeChatCompletion(body)
}

func malformed(provider string, err error) error {
	return classify.WithClass(fmt.Errorf("llm %s: malformed batch answer: %w", provider, err), classify.Retryable, "malformed response")
}
