package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
)

// Peers are what `llmbench cpu -peers` runs beside tenax: Go programs that
// make the same calls with nothing of tenax around them, so that a figure
// of tenax's CPU per call can be read against what the call itself costs
// on the same machine in the same minute.
//
//   - "http" posts each chat completion with net/http and encoding/json
//     alone: the least any Go program pays for the call (the request built
//     and written, the answer read and decoded, the runtime's wake-ups).
//   - "sdk" makes each call with the official openai-go SDK, retries off,
//     as a hand-rolled loop on it would: the least a Go program pays that
//     uses the SDK, as tenax must.
//
// Both run Concurrency goroutines that take the next item until Items are
// done, over a transport that keeps Concurrency connections idle per host
// as tenax's does (task/llm's newTransport), so that neither dials again
// after every wave of answers. A call that fails stops the run with its
// error: a peer's figure counts only answered calls, as tenax's does.
var peers = map[string]func(ctx context.Context, c cpu, baseURL string) (int, error){
	"http": peerHTTP,
	"sdk":  peerSDK,
}

// peerTransport keeps conns idle connections per host, as tenax's
// transport does; the other settings are Go's defaults.
func peerTransport(conns int) *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		DialContext:         dialer.DialContext,
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
	}
}

// cpuPrompt is the prompt of every call of a cpu run, before the item's
// word: the tenax job's template adds {{.word}}, a peer the same word.
const cpuPrompt = "Translate into French: "

// peerPrompt is item i's prompt, as the job of a tenax run renders it from
// the items workDir writes ("w0", "w1", …).
func peerPrompt(i int) string { return fmt.Sprintf("%sw%d", cpuPrompt, i) }

// fanOut runs call(i) for i in [0, items) on workers goroutines and returns
// the calls made, or the first error (the others then stop).
func fanOut(ctx context.Context, items, workers int, call func(ctx context.Context, i int) error) (int, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next, done atomic.Int64
	var wg sync.WaitGroup
	for range max(workers, 1) {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= items {
					return
				}
				if err := call(ctx, i); err != nil {
					cancel(fmt.Errorf("call %d: %w", i, err))
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return int(done.Load()), context.Cause(ctx)
}

type peerMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type peerRequest struct {
	Model    string        `json:"model"`
	Messages []peerMessage `json:"messages"`
}

type peerAnswer struct {
	Choices []struct {
		Message peerMessage `json:"message"`
	} `json:"choices"`
}

// peerHTTP is the "http" peer: net/http and encoding/json, nothing else.
func peerHTTP(ctx context.Context, c cpu, baseURL string) (int, error) {
	client := &http.Client{Transport: peerTransport(c.Concurrency)}
	defer client.CloseIdleConnections()
	url := baseURL + "/chat/completions"
	return fanOut(ctx, c.Items, c.Concurrency, func(ctx context.Context, i int) error {
		body, err := json.Marshal(peerRequest{Model: "mock-echo", Messages: []peerMessage{{Role: "user", Content: peerPrompt(i)}}})
		if err != nil {
			return err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer any")
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: %.200s", resp.Status, b)
		}
		var a peerAnswer
		if err := json.Unmarshal(b, &a); err != nil {
			return err
		}
		if len(a.Choices) == 0 || a.Choices[0].Message.Content == "" {
			return fmt.Errorf("an answer without content: %.200s", b)
		}
		return nil
	})
}

// peerSDK is the "sdk" peer: the openai-go SDK's Chat.Completions.New,
// retries off, over the same transport.
func peerSDK(ctx context.Context, c cpu, baseURL string) (int, error) {
	hc := &http.Client{Transport: peerTransport(c.Concurrency)}
	defer hc.CloseIdleConnections()
	client := openai.NewClient(
		option.WithBaseURL(baseURL),
		option.WithAPIKey("any"),
		option.WithMaxRetries(0),
		option.WithHTTPClient(hc),
	)
	return fanOut(ctx, c.Items, c.Concurrency, func(ctx context.Context, i int) error {
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "mock-echo",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(peerPrompt(i))},
		})
		if err != nil {
			return err
		}
		if len(resp.Choices) == 0 || resp.Choices[0].Message.Content == "" {
			return fmt.Errorf("an answer without content: %s", resp.RawJSON())
		}
		return nil
	})
}
