package llm

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/task"
)

// pipeListener serves connections made of net.Pipe, so a test of the
// transport runs inside a synctest bubble: net/http gives up on reusing a
// connection whose request write it has not seen finish within 50 ms, which
// on a loaded machine happens now and then and has nothing to do with the
// transport's settings.
type pipeListener struct {
	conns    chan net.Conn
	accepted atomic.Int64
	done     chan struct{}
	once     sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		l.accepted.Add(1)
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// TestConnectionsStayWithinConcurrency makes 2,000 calls, 16 at a time,
// through the transport New builds, and counts the connections the server
// accepts: Go's default transport kept 2 idle per host and dialled
// hundreds.
func TestConnectionsStayWithinConcurrency(t *testing.T) {
	const calls, concurrency = 2000, 16
	for _, tc := range []struct{ provider, path string }{
		{ProviderOpenAI, "/v1"},
		{ProviderAnthropic, ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ln := newPipeListener()
				srv := &http.Server{Handler: mock.New(mock.Config{})}
				go srv.Serve(ln) //nolint:errcheck // ends with Close below
				defer srv.Close()
				tk, err := New(Config{Provider: tc.provider, BaseURL: "http://127.0.0.1" + tc.path, APIKey: "k", Model: mock.ModelEcho,
					Prompt: "say {{.n}}", Connections: concurrency})
				if err != nil {
					t.Fatal(err)
				}
				tr := tk.cfg.HTTPClient.Transport.(*http.Transport)
				tr.DialContext = ln.dial
				defer tr.CloseIdleConnections()
				var wg sync.WaitGroup
				var next atomic.Int64
				errs := make(chan error, concurrency)
				for range concurrency {
					wg.Go(func() {
						for i := next.Add(1); i <= calls; i = next.Add(1) {
							res, err := tk.Run(context.Background(), task.Item{Idx: int(i), Fields: map[string]any{"n": i}})
							if err != nil {
								errs <- err
								return
							}
							if want := fmt.Sprintf("%q", fmt.Sprint("say ", i)); string(res.Output) != want {
								errs <- fmt.Errorf("call %d: output %s, want %s", i, res.Output, want)
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Fatal(err)
				}
				if n := ln.accepted.Load(); n > concurrency {
					t.Errorf("%d calls, %d at a time, opened %d connections; want at most %d", calls, concurrency, n, concurrency)
				}
			})
		})
	}
}

// writeCounter counts the writes made on the connections it dials.
type writeCounter struct {
	net.Conn
	writes *atomic.Int64
}

func (c writeCounter) Write(b []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(b)
}

// TestARequestIsOneWrite pins that a call's headers and body leave in one
// write: the SDKs hand net/http a body it cannot see is in memory, and it
// flushed the headers on their own first, a second syscall per call.
func TestARequestIsOneWrite(t *testing.T) {
	const calls = 10
	for _, tc := range []struct{ provider, path string }{
		{ProviderOpenAI, "/v1"},
		{ProviderAnthropic, ""},
	} {
		t.Run(tc.provider, func(t *testing.T) {
			ts := httptest.NewServer(mock.New(mock.Config{}))
			defer ts.Close()
			var writes atomic.Int64
			tr := newTransport(1, 0)
			dial := tr.DialContext
			tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return writeCounter{c, &writes}, nil
			}
			tk, err := New(Config{Provider: tc.provider, BaseURL: ts.URL + tc.path, APIKey: "k", Model: mock.ModelEcho,
				Prompt: "say {{.n}}", HTTPClient: &http.Client{Transport: tr}})
			if err != nil {
				t.Fatal(err)
			}
			for i := range calls {
				if _, err := tk.Run(context.Background(), task.Item{Idx: i, Fields: map[string]any{"n": i}}); err != nil {
					t.Fatal(err)
				}
			}
			if n := writes.Load(); n != calls {
				t.Errorf("%d calls made %d writes, want one each", calls, n)
			}
		})
	}
}
