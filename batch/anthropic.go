package batch

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"
	"github.com/anthropics/anthropic-sdk-go/packages/param"
)

// Anthropic is Anthropic's Message Batches API: the requests are sent in
// the create call, and the results read as JSONL once the batch ended.
type Anthropic struct {
	client   anthropic.Client
	provider string
	limits   Limits
}

// NewAnthropic returns the Message Batches API at baseURL. The SDK never
// retries and reads nothing from the environment. Zero fields of limits
// are Anthropic's own.
func NewAnthropic(provider, baseURL, apiKey string, hc *http.Client, limits Limits) *Anthropic {
	if hc == nil {
		hc = &http.Client{}
	}
	return &Anthropic{
		client: anthropic.NewClient(
			option.WithoutEnvironmentDefaults(),
			option.WithBaseURL(baseURL), option.WithAPIKey(apiKey),
			option.WithHTTPClient(hc), option.WithMaxRetries(0),
			option.WithoutOpenTelemetry(),
		),
		provider: provider,
		limits:   limits.or(AnthropicLimits),
	}
}

// Limits returns the limits of one batch.
func (c *Anthropic) Limits() Limits { return c.limits }

// anthropicRequestBytes is the size of req inside the create call's body.
func anthropicRequestBytes(req Request) int {
	return len(`{"custom_id":"","params":},`) + len(req.CustomID) + len(req.Body)
}

// Submit creates a message batch of reqs; Anthropic's batches carry no
// metadata, so key is not sent.
func (c *Anthropic) Submit(ctx context.Context, _ string, reqs []Request) (string, error) {
	params := anthropic.MessageBatchNewParams{Requests: make([]anthropic.MessageBatchNewParamsRequest, len(reqs))}
	for i, r := range reqs {
		params.Requests[i] = anthropic.MessageBatchNewParamsRequest{
			CustomID: r.CustomID,
			// The body as the online call would send it, byte for byte.
			Params: param.Override[anthropic.MessageBatchNewParamsRequestParams](r.Body),
		}
	}
	var cap sdkCapture
	b, err := c.client.Messages.Batches.New(ctx, params, option.WithMiddleware(cap.middleware))
	if err != nil {
		return "", cap.err("create", err)
	}
	return b.ID, nil
}

// Status retrieves the batch.
func (c *Anthropic) Status(ctx context.Context, id string) (Status, error) {
	var cap sdkCapture
	b, err := c.client.Messages.Batches.Get(ctx, id, anthropic.MessageBatchGetParams{}, option.WithMiddleware(cap.middleware))
	if err != nil {
		return Status{}, cap.err("status", err)
	}
	rc := b.RequestCounts
	return Status{
		ID:        b.ID,
		State:     string(b.ProcessingStatus),
		Ended:     b.ProcessingStatus == anthropic.MessageBatchProcessingStatusEnded,
		ExpiresAt: b.ExpiresAt,
		Counts: Counts{
			Total:      int(rc.Processing + rc.Succeeded + rc.Errored + rc.Expired + rc.Canceled),
			Processing: int(rc.Processing), Succeeded: int(rc.Succeeded), Errored: int(rc.Errored),
			Expired: int(rc.Expired), Canceled: int(rc.Canceled),
		},
	}, nil
}

// Cancel cancels the batch.
func (c *Anthropic) Cancel(ctx context.Context, id string) error {
	var cap sdkCapture
	if _, err := c.client.Messages.Batches.Cancel(ctx, id, anthropic.MessageBatchCancelParams{}, option.WithMiddleware(cap.middleware)); err != nil {
		return cap.err("cancel", err)
	}
	return nil
}

// Results streams the batch's results.
func (c *Anthropic) Results(ctx context.Context, st Status, fn func(Answer) error) error {
	var cap sdkCapture
	bound := &resultsBound{limit: ResultsBound(st)}
	stream := c.client.Messages.Batches.ResultsStreaming(ctx, st.ID, anthropic.MessageBatchResultsParams{}, option.WithMiddleware(cap.middleware, bound.middleware))
	defer stream.Close()
	for stream.Next() {
		r := stream.Current()
		a := Answer{CustomID: r.CustomID}
		switch r.Result.Type {
		case "succeeded":
			a.Body = json.RawMessage(r.Result.Message.RawJSON())
		case "errored":
			e := r.Result.Error
			a.Err = requestError(c.provider, 0, e.Error.Type, "", e.Error.Message, e.RequestID)
		case "expired":
			a.Unprocessed = "expired"
		default:
			a.Unprocessed = "canceled"
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return bound.err(cap.err("results", err))
	}
	return nil
}
