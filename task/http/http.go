package http

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"slices"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
)

// Output formats of Config.Output.
const (
	// OutputText makes the response body the item's output as a JSON
	// string, byte for byte.
	OutputText = "text"
	// OutputJSON requires the body to be one JSON value, which becomes the
	// item's output.
	OutputJSON = "json"
)

// Config describes the request a Task makes for each item.
type Config struct {
	// Method is the request method; "" means GET, or POST when Body is
	// set. It is upper-cased.
	Method string
	// URL is a template for the request URL. Values are inserted as they
	// are: pipe them through urlquery where they belong in a query or path.
	URL string
	// Headers are added to the request; values are templates. A "Host"
	// header sets the request's host.
	Headers map[string]string
	// Body is a template for the request body; "" sends none.
	Body string
	// Timeout limits each attempt, body included; 0 means none.
	Timeout time.Duration
	// MaxAnswerBytes bounds a 2xx response's body, counted after
	// net/http's transparent gzip: a longer one fails the attempt with a
	// *task.AnswerTooLargeError marked classify.Item, read no further
	// than the bound. 0 means task.DefaultMaxAnswerBytes.
	MaxAnswerBytes int64
	// Output is OutputText (the default, "") or OutputJSON.
	Output string
	// Client makes the requests; nil means a client that follows at most
	// 10 redirects and, on a redirect to another host, drops every header
	// of Headers and the Referer (which would carry the first URL's query):
	// a header the spec fills from ${API_KEY} must not reach a host it was
	// not meant for. A Client given here is used as it is.
	Client *nethttp.Client
}

// Task makes one HTTP request per item from templates. It implements
// task.Task and is safe for concurrent use.
type Task struct {
	method  string
	url     *task.Template
	headers []headerTemplate
	body    *task.Template
	timeout time.Duration
	max     int64 // Config.MaxAnswerBytes, defaulted
	json    bool
	client  *nethttp.Client
}

type headerTemplate struct {
	name string
	tmpl *task.Template
}

// New checks cfg and parses its templates, so that a typo fails before
// any request. Errors name the template at fault ("url", "body",
// "headers[Authorization]").
func New(cfg Config) (*Task, error) {
	if cfg.URL == "" {
		return nil, errors.New("http: url is empty")
	}
	t := &Task{method: strings.ToUpper(cfg.Method), timeout: cfg.Timeout, client: cfg.Client}
	if t.method == "" {
		t.method = nethttp.MethodGet
		if cfg.Body != "" {
			t.method = nethttp.MethodPost
		}
	}
	if !isToken(t.method) {
		return nil, fmt.Errorf("http: invalid method %q", cfg.Method)
	}
	switch cfg.Output {
	case "", OutputText:
	case OutputJSON:
		t.json = true
	default:
		return nil, fmt.Errorf("http: output %q: want %q or %q", cfg.Output, OutputText, OutputJSON)
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("http: negative timeout %v", cfg.Timeout)
	}
	if cfg.MaxAnswerBytes < 0 {
		return nil, fmt.Errorf("http: negative max_answer_bytes %d", cfg.MaxAnswerBytes)
	}
	t.max = cmp.Or(cfg.MaxAnswerBytes, task.DefaultMaxAnswerBytes)
	if t.client == nil {
		// Its transport retries only a request that a reused connection
		// lost before sending it.
		t.client = &nethttp.Client{CheckRedirect: t.checkRedirect}
	}
	var err error
	if t.url, err = task.ParseTemplate("url", cfg.URL); err != nil {
		return nil, fmt.Errorf("http: %w", err)
	}
	if cfg.Body != "" {
		if t.body, err = task.ParseTemplate("body", cfg.Body); err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
	}
	names := make([]string, 0, len(cfg.Headers))
	for name := range cfg.Headers {
		if !isToken(name) {
			return nil, fmt.Errorf("http: headers: invalid header name %q", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		tmpl, err := task.ParseTemplate("headers["+name+"]", cfg.Headers[name])
		if err != nil {
			return nil, fmt.Errorf("http: %w", err)
		}
		t.headers = append(t.headers, headerTemplate{name, tmpl})
	}
	return t, nil
}

// Run makes one attempt: it renders the templates over item, sends the
// request and reads the response.
//
// A non-2xx response is a *StatusError. Transport failures (a refused or
// reset connection, a timeout, a canceled ctx) are returned wrapped, so
// errors.Is finds syscall.ECONNRESET, context.DeadlineExceeded or
// context.Canceled and errors.As a net.Error. A body that is not JSON
// under OutputJSON is a *task.OutputError; one over Config.MaxAnswerBytes
// a *task.AnswerTooLargeError marked classify.Item. A template that cannot render,
// or renders a URL that does not parse, is marked classify.Item.
func (t *Task) Run(ctx context.Context, item task.Item) (task.Result, error) {
	d := task.TemplateData(item)
	var sb strings.Builder
	url, err := t.url.Execute(&sb, d)
	if err != nil {
		return task.Result{}, err
	}
	var body io.Reader
	if t.body != nil {
		s, err := t.body.Execute(&sb, d)
		if err != nil {
			return task.Result{}, err
		}
		body = strings.NewReader(s)
	}
	if t.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t.timeout)
		defer cancel()
	}
	req, err := nethttp.NewRequestWithContext(ctx, t.method, url, body)
	if err != nil {
		return task.Result{}, classify.WithClass(fmt.Errorf("http: url: %w", err), classify.Item, "template")
	}
	for _, h := range t.headers {
		v, err := h.tmpl.Execute(&sb, d)
		if err != nil {
			return task.Result{}, err
		}
		if strings.EqualFold(h.name, "Host") {
			req.Host = v
			continue
		}
		req.Header.Set(h.name, v)
	}

	resp, err := t.client.Do(req)
	if err != nil {
		return task.Result{}, fmt.Errorf("http: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, err := io.ReadAll(io.LimitReader(resp.Body, MaxErrorBody))
		// Drain a little more so the connection can be reused; give up
		// on bodies larger than that.
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, MaxErrorBody))
		se := newStatusError(resp, b, time.Now())
		if err != nil {
			// Keep the status: it says more than the cut body.
			return task.Result{}, fmt.Errorf("%w (reading the body: %w)", se, err)
		}
		return task.Result{}, se
	}
	b, err := io.ReadAll(task.LimitAnswer(resp.Body, t.max, "answer"))
	if _, ok := errors.AsType[*task.AnswerTooLargeError](err); ok {
		return task.Result{}, fmt.Errorf("http: %d response: %w", resp.StatusCode, err)
	}
	if err != nil {
		return task.Result{}, fmt.Errorf("http: %d response: read body: %w", resp.StatusCode, err)
	}
	return t.result(b)
}

// maxRedirects is how many redirects a request follows, as net/http's
// default.
const maxRedirects = 10

// checkRedirect follows a redirect, stripping what the spec added to the
// request when the redirect leaves the first request's host: net/http
// copies every header but Authorization, Cookie and WWW-Authenticate, and
// sets a Referer holding the previous URL, query and all.
func (t *Task) checkRedirect(req *nethttp.Request, via []*nethttp.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("stopped after %d redirects", maxRedirects)
	}
	if sameHost(req.URL.Host, via[0].URL.Host) {
		return nil
	}
	req.Header.Del("Referer")
	for _, h := range t.headers {
		req.Header.Del(h.name)
	}
	return nil
}

// sameHost compares hosts as net/http does for its own sensitive headers:
// case-insensitively, with the port.
func sameHost(a, b string) bool { return strings.EqualFold(a, b) }

// result turns the body into the item's output.
func (t *Task) result(body []byte) (task.Result, error) {
	var buf bytes.Buffer
	if t.json {
		if err := json.Compact(&buf, body); err != nil {
			return task.Result{}, &task.OutputError{Output: string(body), Err: fmt.Errorf("response body is not JSON: %w", err)}
		}
		return task.Result{Output: buf.Bytes()}, nil
	}
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep <, > and & as the server sent them
	if err := enc.Encode(string(body)); err != nil {
		return task.Result{}, err // unreachable: a string always encodes
	}
	return task.Result{Output: bytes.TrimSuffix(buf.Bytes(), []byte("\n"))}, nil
}

// isToken reports whether s is an RFC 9110 token, as methods and header
// names must be.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0 {
			continue
		}
		return false
	}
	return true
}
