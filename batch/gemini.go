package batch

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/tenaxhq/tenax/task/llm"
)

// Gemini is the Gemini API's batch mode (models/{model}:batchGenerateContent,
// batches/{id}): a batch's requests are sent inline in the create call,
// each as {"request": <the generateContent body>, "metadata": {"key":
// <custom id>}}, and once it ended its responses are read inline from the
// batch (output.inlinedResponses), joined back by their metadata key. The
// batch's display name is the submission key, so a batch created before a
// crash is found again (Find). Vertex AI's batch prediction reads and
// writes Cloud Storage or BigQuery, and is not this.
type Gemini struct {
	sdk      *genai.Client
	model    string
	provider string
	limits   Limits
}

// GeminiLimits are the Gemini API's for inline requests: 20 MB of
// requests in one create call. It documents no count; the bytes bind
// first, and a job larger than them goes in several batches.
var GeminiLimits = Limits{MaxRequests: 100_000, MaxBytes: 20 << 20}

// GeminiExpiry is how long the Gemini API lets a batch stay pending or
// running before it expires: 48 hours (its target is 24).
const GeminiExpiry = 48 * time.Hour

// geminiAPIVersion is the Gemini API's version with batch mode.
const geminiAPIVersion = "v1beta"

// NewGemini returns the Gemini API's batch mode for model, at baseURL (""
// is Google's) with apiKey, every request through hc. The SDK never
// retries. Zero fields of limits are the Gemini API's own.
func NewGemini(ctx context.Context, provider, model, baseURL, apiKey string, hc *http.Client, limits Limits) (*Gemini, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	if apiKey == "" {
		return nil, errors.New("batch: gemini needs an API key")
	}
	sdk, err := genai.NewClient(ctx, &genai.ClientConfig{
		Backend: genai.BackendGeminiAPI, APIKey: apiKey,
		HTTPClient: &http.Client{Transport: geminiTransport{hc}},
		HTTPOptions: genai.HTTPOptions{
			BaseURL: baseURL, APIVersion: geminiAPIVersion,
			RetryOptions: &genai.HTTPRetryOptions{Attempts: new(int32(1))},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("batch: gemini: %w", err)
	}
	return &Gemini{sdk: sdk, model: model, provider: provider, limits: limits.or(GeminiLimits)}, nil
}

// Limits returns the limits of one batch.
func (c *Gemini) Limits() Limits { return c.limits }

// geminiRequestBytes is the size of req inside the create call's body.
func geminiRequestBytes(req Request) int {
	return len(`{"metadata":{"key":""},"request":},`) + len(req.CustomID) + len(req.Body)
}

// Submit creates a batch of reqs under the display name key. The SDK
// builds the call; its inlined requests are then replaced by the bodies
// as the online call would send them, byte for byte.
func (c *Gemini) Submit(ctx context.Context, key string, reqs []Request) (string, error) {
	inline := make([]any, len(reqs))
	for i, r := range reqs {
		inline[i] = map[string]any{"request": r.Body, "metadata": map[string]string{"key": r.CustomID}}
	}
	src := &genai.BatchJobSource{InlinedRequests: []*genai.InlinedRequest{{Model: c.model}}}
	cfg := &genai.CreateBatchJobConfig{DisplayName: key, HTTPOptions: &genai.HTTPOptions{
		ExtrasRequestProvider: func(body map[string]any) map[string]any {
			b, _ := body["batch"].(map[string]any)
			if b == nil {
				return body
			}
			b["inputConfig"] = map[string]any{"requests": map[string]any{"requests": inline}}
			return body
		},
	}}
	var cap geminiCapture
	job, err := c.sdk.Batches.Create(cap.in(ctx), c.model, src, cfg)
	if err != nil {
		return "", cap.err("create", err)
	}
	return job.Name, nil
}

// Find lists the batches a page of 100 at a time until one carries key as
// its display name, or a whole page was created before since.
func (c *Gemini) Find(ctx context.Context, key string, since time.Time) (string, bool, error) {
	var cap geminiCapture
	page, err := c.sdk.Batches.List(cap.in(ctx), &genai.ListBatchJobsConfig{PageSize: 100})
	for ; err == nil; page, err = page.Next(cap.in(ctx)) {
		older := len(page.Items) > 0
		for _, b := range page.Items {
			if b.DisplayName == key {
				return b.Name, true, nil
			}
			older = older && !b.CreateTime.IsZero() && b.CreateTime.Before(since)
		}
		if older || page.NextPageToken == "" {
			return "", false, nil
		}
	}
	if errors.Is(err, genai.ErrPageDone) {
		return "", false, nil
	}
	return "", false, cap.err("list", err)
}

// Status retrieves the batch. Its counts are the batch's batchStats, which
// the SDK does not read: they come from the response as sent.
func (c *Gemini) Status(ctx context.Context, id string) (Status, error) {
	var cap geminiCapture
	cap.keep = true
	job, err := c.sdk.Batches.Get(cap.in(ctx), id, nil)
	if err != nil {
		return Status{}, cap.err("status", err)
	}
	st := Status{ID: job.Name, State: string(job.State)}
	if !job.CreateTime.IsZero() {
		st.ExpiresAt = job.CreateTime.Add(GeminiExpiry)
	}
	switch job.State {
	case genai.JobStateSucceeded, genai.JobStateCancelled, genai.JobStateExpired:
		st.Ended = true
	case genai.JobStateFailed:
		st.Ended, st.Failed = true, true
		st.Problem = "the batch failed"
		if job.Error != nil && job.Error.Message != "" {
			st.Problem = job.Error.Message
		}
	}
	if st.Ended {
		// An ended batch's Operation carries its responses: Results reads
		// them from here, so they are downloaded once.
		st.operation = cap.body
	}
	var doc struct {
		Metadata struct {
			BatchStats struct {
				Requests   flexInt `json:"requestCount"`
				Successful flexInt `json:"successfulRequestCount"`
				Failed     flexInt `json:"failedRequestCount"`
				Pending    flexInt `json:"pendingRequestCount"`
			} `json:"batchStats"`
		} `json:"metadata"`
	}
	if json.Unmarshal(cap.body, &doc) == nil {
		bs := doc.Metadata.BatchStats
		st.Counts = Counts{Total: int(bs.Requests), Succeeded: int(bs.Successful), Errored: int(bs.Failed), Processing: int(bs.Pending)}
		if st.Ended {
			left := max(st.Counts.Total-st.Counts.Succeeded-st.Counts.Errored, 0)
			st.Counts.Processing = 0
			if job.State == genai.JobStateExpired {
				st.Counts.Expired = left
			} else {
				st.Counts.Canceled = left
			}
		}
	}
	return st, nil
}

// Cancel cancels the batch.
func (c *Gemini) Cancel(ctx context.Context, id string) error {
	var cap geminiCapture
	if err := c.sdk.Batches.Cancel(cap.in(ctx), id, nil); err != nil {
		return cap.err("cancel", err)
	}
	return nil
}

// geminiInlined is one of a batch's inlined responses, as sent.
type geminiInlined struct {
	Response json.RawMessage   `json:"response"`
	Metadata map[string]string `json:"metadata"`
	Error    *struct {
		Code    int               `json:"code"`
		Message string            `json:"message"`
		Details []json.RawMessage `json:"details"`
	} `json:"error"`
}

// Results reads the ended batch's inlined responses, bounded as a results
// file is (ResultsBound): from the Operation the poll that saw it end read
// (Status), else from a get of the batch. A request with no response (the
// batch expired or was canceled first) is absent, which the waves count
// as unprocessed.
func (c *Gemini) Results(ctx context.Context, st Status, fn func(Answer) error) error {
	body := st.operation
	if body == nil {
		cap := geminiCapture{keep: true, bound: ResultsBound(st)}
		if _, err := c.sdk.Batches.Get(cap.in(ctx), st.ID, nil); err != nil {
			return cap.err("results", err)
		}
		body = cap.body
	} else if bound := ResultsBound(st); int64(len(body)) > bound {
		return &OpError{Op: "results", Err: fmt.Errorf("batch %s: batch results over %d bytes", st.ID, bound)}
	}
	var doc struct {
		Metadata struct {
			Output struct {
				Inlined struct {
					Responses []geminiInlined `json:"inlinedResponses"`
				} `json:"inlinedResponses"`
				ResponsesFile string `json:"responsesFile"`
			} `json:"output"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return &OpError{Op: "results", Err: fmt.Errorf("batch %s: %w", st.ID, err)}
	}
	if f := doc.Metadata.Output.ResponsesFile; f != "" {
		return &OpError{Op: "results", Err: fmt.Errorf("batch %s wrote its responses to %s: tenax sends inline requests and reads inline responses", st.ID, f)}
	}
	for _, r := range doc.Metadata.Output.Inlined.Responses {
		a := Answer{CustomID: r.Metadata["key"]}
		switch {
		case a.CustomID == "":
			continue // not one of tenax's requests
		case r.Error != nil:
			var details []map[string]any
			for _, d := range r.Error.Details {
				var m map[string]any
				if json.Unmarshal(d, &m) == nil {
					details = append(details, m)
				}
			}
			a.Err = llm.GeminiStatusError(c.provider, r.Error.Code, r.Error.Message, details)
		case len(r.Response) > 0:
			a.Body = r.Response
		default:
			a.Unprocessed = "canceled"
			if st.State == string(genai.JobStateExpired) {
				a.Unprocessed = "expired"
			}
		}
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

// flexInt is an int64 as proto3's JSON writes it (a string) or as a
// number.
type flexInt int64

func (n *flexInt) UnmarshalJSON(b []byte) error {
	v, err := strconv.ParseInt(strings.Trim(string(b), `"`), 10, 64)
	if err != nil {
		return err
	}
	*n = flexInt(v)
	return nil
}

// geminiCaptureKey is the request context's key of a call's capture.
type geminiCaptureKey struct{}

// geminiCapture keeps what the last response of one SDK call said: its
// status, headers and body (the error body, or with keep the whole body,
// read through bound when it is set).
type geminiCapture struct {
	keep   bool
	bound  int64
	status int
	header http.Header
	body   []byte
}

func (c *geminiCapture) in(ctx context.Context) context.Context {
	return context.WithValue(ctx, geminiCaptureKey{}, c)
}

// geminiTransport sends the SDK's requests through the task's HTTP client
// and fills the call's capture.
type geminiTransport struct{ hc *http.Client }

func (t geminiTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	res, err := t.hc.Do(r)
	c, _ := r.Context().Value(geminiCaptureKey{}).(*geminiCapture)
	if res == nil || c == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
	if res.StatusCode >= 400 || c.keep {
		var rd io.Reader = io.LimitReader(res.Body, 64<<10)
		if res.StatusCode < 400 {
			rd = res.Body
			if c.bound > 0 {
				rd = io.LimitReader(res.Body, c.bound+1)
			}
		}
		b, rerr := io.ReadAll(rd)
		_ = res.Body.Close()
		if rerr != nil {
			return nil, rerr
		}
		if c.bound > 0 && int64(len(b)) > c.bound {
			return nil, fmt.Errorf("batch results over %d bytes", c.bound)
		}
		c.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
	}
	return res, err
}

// err is the failed operation op with the status, Google's status name
// (NOT_FOUND, RESOURCE_EXHAUSTED, …) as the code, and a RetryInfo's delay
// or Retry-After as the hint.
func (c *geminiCapture) err(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &OpError{Op: op, Err: err}
	}
	e, ok := opError(op, err, c.status, "", c.header).(*OpError)
	if !ok {
		return err
	}
	var doc struct {
		Error struct {
			Code    int              `json:"code"`
			Message string           `json:"message"`
			Status  string           `json:"status"`
			Details []map[string]any `json:"details"`
		} `json:"error"`
	}
	if json.Unmarshal(c.body, &doc) == nil && doc.Error.Status != "" {
		ge := llm.GeminiStatusError("", cmp.Or(c.status, doc.Error.Code), doc.Error.Message, doc.Error.Details)
		e.Code = doc.Error.Status
		if ge.Code != ge.Type { // the details said more: a per-day quota, a bad key
			e.Code = ge.Code
		}
		if e.Hint == 0 {
			e.Hint = ge.Hint
		}
	}
	return e
}
