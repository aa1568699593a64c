package llm

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/internal/gzipbomb"
	"github.com/tenaxhq/tenax/task"
)

// answerFrames are the JSON around a successful answer's text in each wire
// format, for servers that send an answer of their own making.
var answerFrames = map[string][2]string{
	ProviderOpenAI: {`{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"`,
		`"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`},
	ProviderAnthropic: {`{"id":"m1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"`,
		`"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":5}}`},
}

// readCounter counts the bytes read from the connections it dials: what
// the client took off the wire.
type readCounter struct {
	net.Conn
	read *atomic.Int64
}

func (c readCounter) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// countingTask is a Task for provider at url whose transport (the one New
// builds) counts the bytes it reads from the server in read.
func countingTask(t *testing.T, provider, url string, maxAnswer int64, read *atomic.Int64) *Task {
	t.Helper()
	tk := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, url), APIKey: secretKey, Model: "m",
		Prompt: "hi", MaxAnswerBytes: maxAnswer})
	tr := tk.cfg.HTTPClient.Transport.(*http.Transport)
	dial := tr.DialContext
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return readCounter{c, read}, nil
	}
	t.Cleanup(tr.CloseIdleConnections)
	return tk
}

// serveBomb serves, as every answer, a gzip stream that inflates to an
// answer of size fill bytes in provider's wire format.
func serveBomb(t *testing.T, provider string, size int64) *httptest.Server {
	t.Helper()
	frame := answerFrames[provider]
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		// A client that hangs up ends the handler with a write error.
		_ = gzipbomb.Write(w, []byte(frame[0]), 'a', size, []byte(frame[1]))
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestAGzipBombIsAnItemFailureReadNoFurtherThanTheBound: a 1 GiB answer
// sent as 1 MB of gzip fails the attempt as the item's (no retry would
// bring a smaller one), naming the bound and its spec key, and the client
// stops reading at the bound: it takes a few KiB off the wire, not the
// megabyte the server has to send. (A 2 MB bomb grew a run to 24 GB.)
func TestAGzipBombIsAnItemFailureReadNoFurtherThanTheBound(t *testing.T) {
	for _, tc := range []struct {
		provider  string
		maxAnswer int64
		want      string
	}{
		{ProviderOpenAI, 0, "llm openai: answer over 16 MiB (task.max_answer_bytes)"},
		{ProviderAnthropic, 1 << 20, "llm anthropic: answer over 1 MiB (task.max_answer_bytes)"},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			ts := serveBomb(t, tc.provider, 1<<30)
			var read atomic.Int64
			_, err := countingTask(t, tc.provider, ts.URL, tc.maxAnswer, &read).Run(t.Context(), item(nil))
			if _, ok := errors.AsType[*task.AnswerTooLargeError](err); !ok || err.Error() != tc.want {
				t.Fatalf("err = %v; want an *AnswerTooLargeError %q", err, tc.want)
			}
			if d := classify.Classify(err); d.Class != classify.Item {
				t.Errorf("classified %v; want item", d)
			}
			// The bound inflates from bound/1000 bytes; the transport reads
			// ahead a few KiB more.
			if n, most := read.Load(), max(tc.maxAnswer, task.DefaultMaxAnswerBytes)/1000+64<<10; n > most {
				t.Errorf("read %d bytes off the wire; want at most %d: the read must stop at the bound", n, most)
			}
		})
	}
}

// TestAnAnswerUpToTheBoundIsAccepted: the bound refuses only what is over
// it; 1 MiB of answer sent as gzip under a 2 MiB bound is the output.
func TestAnAnswerUpToTheBoundIsAccepted(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			ts := serveBomb(t, provider, 1<<20)
			var read atomic.Int64
			res, err := countingTask(t, provider, ts.URL, 2<<20, &read).Run(t.Context(), item(nil))
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if want := `"` + strings.Repeat("a", 1<<20) + `"`; string(res.Output) != want {
				t.Errorf("output is %d bytes; want the %d of the whole answer", len(res.Output), len(want))
			}
		})
	}
}

// TestASlowDribbledAnswerEndsAtTheTimeout: headers at once, then a byte a
// second; the attempt's timeout counts the whole read of the body, so it
// ends at 4s, retryable, rather than when the server stops.
func TestASlowDribbledAnswerEndsAtTheTimeout(t *testing.T) {
	for _, provider := range []string{ProviderOpenAI, ProviderAnthropic} {
		t.Run(provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newPipeListener()
				frame := answerFrames[provider]
				var sent atomic.Int64
				finished := make(chan struct{})
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(frame[0]))
					defer close(finished)
					for {
						w.(http.Flusher).Flush()
						select {
						case <-r.Context().Done():
							return
						case <-time.After(time.Second):
						}
						if _, err := w.Write([]byte("a")); err != nil {
							return
						}
						sent.Add(1)
					}
				})}
				go srv.Serve(ln) //nolint:errcheck // ends with Close below
				defer srv.Close()
				tk := mustNew(t, Config{Provider: provider, BaseURL: baseURL(provider, "http://127.0.0.1"), APIKey: "k", Model: "m",
					Prompt: "hi", Timeout: 4 * time.Second})
				tr := tk.cfg.HTTPClient.Transport.(*http.Transport)
				tr.DialContext = ln.dial
				defer tr.CloseIdleConnections()
				start := time.Now()
				_, err := tk.Run(t.Context(), item(nil))
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("err = %v; want the attempt's deadline", err)
				}
				if waited := time.Since(start); waited != 4*time.Second {
					t.Errorf("gave up after %v (%d bytes of body dribbled); want the 4s timeout", waited, sent.Load())
				}
				if d := classify.Classify(err); d.Class != classify.Retryable {
					t.Errorf("classified %v; want retryable", d)
				}
				<-finished // the server saw the client hang up
			})
		})
	}
}
