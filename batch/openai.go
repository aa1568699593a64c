package batch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/tenaxhq/tenax/task"
)

// maxResultLine bounds one line of a result file: one request's answer,
// bounded as a call's is (task.DefaultMaxAnswerBytes), and its envelope.
const maxResultLine = task.DefaultMaxAnswerBytes + resultEnvelope

// resultEnvelope is the room a result line leaves around its answer: its
// custom_id, status code, request id and JSON quoting.
const resultEnvelope = 1 << 20

// ResultsBound is the most a batch's results file may hold: a line of at
// most an answer's bound and its envelope for each of its requests. A file
// larger than its requests can fill is not read on: its reading fails with
// a *task.AnswerTooLargeError ("batch results file over …"), and the
// batch's requests stay without an answer.
func ResultsBound(st Status) int64 {
	return int64(max(st.Counts.Total, 1)) * maxResultLine
}

// resultsBound reads a successful response's body through at most limit
// bytes (task.LimitAnswer): a results file is bounded as an answer is,
// whatever the provider sends. Its middleware wraps the body; err then
// says whether the bound was met, which a decoder that saw only a line cut
// short by it cannot tell.
type resultsBound struct {
	limit int64
	hit   error
}

func (b *resultsBound) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res != nil && res.Body != nil && res.StatusCode < 300 {
		res.Body = struct {
			io.Reader
			io.Closer
		}{&boundedBody{r: task.LimitAnswer(res.Body, b.limit, "batch results file"), b: b}, res.Body}
	}
	return res, err
}

// err returns the bound's error when it was met, else err.
func (b *resultsBound) err(err error) error {
	if b.hit != nil {
		return &OpError{Op: "results", Err: b.hit}
	}
	return err
}

type boundedBody struct {
	r io.Reader
	b *resultsBound
}

func (r *boundedBody) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	var tooLarge *task.AnswerTooLargeError
	if errors.As(err, &tooLarge) {
		r.b.hit = err
	}
	return n, err
}

// OpenAI is OpenAI's Batch API: the requests are uploaded as a JSONL file
// (purpose batch), a batch of /v1/chat/completions is created from it, and
// its output and error files are read when it ends.
type OpenAI struct {
	client   openai.Client
	provider string
	limits   Limits
	endpoint string // the url of each line and the batch's endpoint
}

// NewOpenAI returns the batch API at baseURL (".../v1") for provider
// (openai, azure or mock: the name errors carry). The SDK never retries.
// Zero fields of limits are OpenAI's own.
func NewOpenAI(provider, baseURL, apiKey string, hc *http.Client, limits Limits) *OpenAI {
	if hc == nil {
		hc = &http.Client{}
	}
	return NewOpenAIWith(provider, []option.RequestOption{
		option.WithBaseURL(baseURL), option.WithAPIKey(apiKey),
		option.WithHTTPClient(hc), option.WithMaxRetries(0),
	}, limits)
}

// NewOpenAIWith returns the batch API reached by an SDK client with opts
// (llm.Batch.OpenAIOptions gives the task's own: Azure's routing and
// credentials, headers). Azure's batch lines name /chat/completions.
func NewOpenAIWith(provider string, opts []option.RequestOption, limits Limits) *OpenAI {
	c := &OpenAI{
		client:   openai.NewClient(append(opts, option.WithMaxRetries(0))...),
		provider: provider,
		limits:   limits.or(OpenAILimits),
		endpoint: "/v1/chat/completions",
	}
	if provider == "azure" {
		c.endpoint = "/chat/completions"
	}
	return c
}

func (l Limits) or(d Limits) Limits {
	if l.MaxRequests <= 0 {
		l.MaxRequests = d.MaxRequests
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = d.MaxBytes
	}
	return l
}

// Limits returns the limits of one batch.
func (c *OpenAI) Limits() Limits { return c.limits }

// openAILine is one line of an input file.
type openAILine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// LineBytes returns the size of req as a line of the input file.
func openAILineBytes(req Request) int {
	return len(`{"custom_id":"","method":"POST","url":"/v1/chat/completions","body":}`+"\n") + len(req.CustomID) + len(req.Body)
}

// Submit uploads reqs as a file and creates a batch of it, labelled with
// key in its metadata (tenax_submission), where Find looks for it.
func (c *OpenAI) Submit(ctx context.Context, key string, reqs []Request) (string, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, r := range reqs {
		if err := enc.Encode(openAILine{CustomID: r.CustomID, Method: http.MethodPost, URL: c.endpoint, Body: r.Body}); err != nil {
			return "", fmt.Errorf("batch: encoding %s: %w", r.CustomID, err)
		}
	}
	var cap sdkCapture
	f, err := c.client.Files.New(ctx, openai.FileNewParams{
		File:    openai.File(&buf, key+".jsonl", "application/jsonl"),
		Purpose: openai.FilePurposeBatch,
	}, option.WithMiddleware(cap.middleware))
	if err != nil {
		return "", cap.err("upload", err)
	}
	b, err := c.client.Batches.New(ctx, openai.BatchNewParams{
		InputFileID:      f.ID,
		Endpoint:         openai.BatchNewParamsEndpoint(c.endpoint),
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
		Metadata:         shared.Metadata{submissionKey: key},
	}, option.WithMiddleware(cap.middleware))
	if err != nil {
		return "", cap.err("create", err)
	}
	return b.ID, nil
}

// submissionKey is the metadata key that labels a batch with the
// submission it is (Submit's key).
const submissionKey = "tenax_submission"

// Find lists the batches newest first, a page of 100 at a time, until one
// carries key in its metadata or they were created before since.
func (c *OpenAI) Find(ctx context.Context, key string, since time.Time) (string, bool, error) {
	var cap sdkCapture
	pages := c.client.Batches.ListAutoPaging(ctx, openai.BatchListParams{Limit: openai.Int(100)}, option.WithMiddleware(cap.middleware))
	for pages.Next() {
		b := pages.Current()
		if b.Metadata[submissionKey] == key {
			return b.ID, true, nil
		}
		if b.CreatedAt > 0 && time.Unix(b.CreatedAt, 0).Before(since) {
			break
		}
	}
	if err := pages.Err(); err != nil {
		return "", false, cap.err("list", err)
	}
	return "", false, nil
}

// Status retrieves the batch.
func (c *OpenAI) Status(ctx context.Context, id string) (Status, error) {
	var cap sdkCapture
	b, err := c.client.Batches.Get(ctx, id, option.WithMiddleware(cap.middleware))
	if err != nil {
		return Status{}, cap.err("status", err)
	}
	return openAIStatus(b), nil
}

func openAIStatus(b *openai.Batch) Status {
	st := Status{
		ID:    b.ID,
		State: string(b.Status),
		Counts: Counts{
			Total:     int(b.RequestCounts.Total),
			Succeeded: int(b.RequestCounts.Completed),
			Errored:   int(b.RequestCounts.Failed),
		},
		outputFile: b.OutputFileID,
		errorFile:  b.ErrorFileID,
	}
	if b.ExpiresAt > 0 {
		st.ExpiresAt = time.Unix(b.ExpiresAt, 0)
	}
	switch b.Status {
	case openai.BatchStatusCompleted, openai.BatchStatusExpired, openai.BatchStatusCancelled:
		st.Ended = true
	case openai.BatchStatusFailed:
		st.Ended, st.Failed = true, true
		for _, e := range b.Errors.Data {
			st.Problem = fmt.Sprintf("%s: %s (line %d)", e.Code, e.Message, e.Line)
			break
		}
		if st.Problem == "" {
			st.Problem = "the provider refused the batch"
		}
	}
	if !st.Ended {
		st.Counts.Processing = st.Counts.Total - st.Counts.Succeeded - st.Counts.Errored
	}
	return st
}

// Cancel cancels the batch.
func (c *OpenAI) Cancel(ctx context.Context, id string) error {
	var cap sdkCapture
	if _, err := c.client.Batches.Cancel(ctx, id, option.WithMiddleware(cap.middleware)); err != nil {
		return cap.err("cancel", err)
	}
	return nil
}

// Results reads the output file, then the error file. A request in
// neither was never processed: expired when the batch expired, canceled
// otherwise.
func (c *OpenAI) Results(ctx context.Context, st Status, fn func(Answer) error) error {
	for _, file := range []string{st.outputFile, st.errorFile} {
		if file == "" {
			continue
		}
		if err := c.readFile(ctx, file, ResultsBound(st), fn); err != nil {
			return err
		}
	}
	return nil
}

// openAIResultLine is one line of an output or error file.
type openAIResultLine struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		RequestID  string          `json:"request_id"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *OpenAI) readFile(ctx context.Context, id string, limit int64, fn func(Answer) error) error {
	var cap sdkCapture
	bound := &resultsBound{limit: limit}
	res, err := c.client.Files.Content(ctx, id, option.WithMiddleware(cap.middleware, bound.middleware))
	if err != nil {
		return bound.err(cap.err("results", err))
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxResultLine)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var l openAIResultLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return bound.err(&OpError{Op: "results", Err: fmt.Errorf("file %s: a line is not JSON: %w", id, err)})
		}
		if err := fn(c.answer(l)); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("%w: a line over %d bytes", task.TooLarge("batch results line", maxResultLine), maxResultLine)
		}
		return bound.err(&OpError{Op: "results", Err: fmt.Errorf("reading file %s: %w", id, err)})
	}
	return nil
}

func (c *OpenAI) answer(l openAIResultLine) Answer {
	a := Answer{CustomID: l.CustomID}
	switch {
	case l.Response != nil && l.Response.StatusCode == http.StatusOK:
		a.Body = l.Response.Body
	case l.Response != nil:
		var body struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
				Code    any    `json:"code"`
			} `json:"error"`
		}
		_ = json.Unmarshal(l.Response.Body, &body)
		code, _ := body.Error.Code.(string)
		msg := body.Error.Message
		if msg == "" {
			msg = http.StatusText(l.Response.StatusCode)
		}
		a.Err = requestError(c.provider, l.Response.StatusCode, body.Error.Type, code, msg, l.Response.RequestID)
	case l.Error != nil && l.Error.Code == "batch_expired":
		a.Unprocessed = "expired"
	case l.Error != nil && l.Error.Code == "batch_cancelled":
		a.Unprocessed = "canceled"
	case l.Error != nil:
		a.Err = requestError(c.provider, http.StatusBadRequest, "invalid_request_error", l.Error.Code, l.Error.Message, "")
	default:
		a.Unprocessed = "canceled"
	}
	return a
}

// sdkCapture keeps the status, headers and error body of the last
// response an SDK call saw, for OpError.
type sdkCapture struct {
	status int
	header http.Header
	body   []byte
}

func (c *sdkCapture) middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	res, err := next(req)
	if res == nil {
		return res, err
	}
	c.status, c.header = res.StatusCode, res.Header
	if res.StatusCode >= 400 && res.Body != nil {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		_ = res.Body.Close()
		c.body = b
		res.Body = io.NopCloser(bytes.NewReader(b))
	}
	return res, err
}

func (c *sdkCapture) err(op string, err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return &OpError{Op: op, Err: err}
	}
	return opError(op, err, c.status, string(c.body), c.header)
}
