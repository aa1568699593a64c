package http

import (
	"context"
	"errors"
	"net"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/internal/gzipbomb"
	"github.com/tenaxhq/tenax/task"
)

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

// countingClient is a client whose transport counts in read the bytes it
// reads from servers; net/http inflates gzip for it as for any client.
func countingClient(t *testing.T, read *atomic.Int64) *nethttp.Client {
	t.Helper()
	var d net.Dialer
	tr := &nethttp.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return readCounter{c, read}, nil
	}}
	t.Cleanup(tr.CloseIdleConnections)
	return &nethttp.Client{Transport: tr}
}

// serveBomb serves a gzip stream that inflates to a JSON string of size
// bytes.
func serveBomb(t *testing.T, size int64) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		// A client that hangs up ends the handler with a write error.
		_ = gzipbomb.Write(w, []byte(`"`), 'a', size, []byte(`"`))
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestAGzipBombIsAnItemFailureReadNoFurtherThanTheBound: 1 GiB of body
// sent as 1 MB of gzip fails the attempt as the item's, naming the bound
// and its spec key, and the client takes a few KiB off the wire, not the
// megabyte the server has to send.
func TestAGzipBombIsAnItemFailureReadNoFurtherThanTheBound(t *testing.T) {
	for _, tc := range []struct {
		name      string
		maxAnswer int64
		want      string
	}{
		{"a bound of 256 KiB", 256 << 10, "http: 200 response: answer over 256 KiB (task.max_answer_bytes)"},
		{"a bound of 1 MiB", 1 << 20, "http: 200 response: answer over 1 MiB (task.max_answer_bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := serveBomb(t, 1<<30)
			var read atomic.Int64
			tk := mustNew(t, Config{URL: ts.URL, Output: OutputJSON, MaxAnswerBytes: tc.maxAnswer, Client: countingClient(t, &read)})
			_, err := tk.Run(t.Context(), task.Item{})
			if _, ok := errors.AsType[*task.AnswerTooLargeError](err); !ok || err.Error() != tc.want {
				t.Fatalf("err = %v; want an *AnswerTooLargeError %q", err, tc.want)
			}
			if d := classify.Classify(err); d.Class != classify.Item {
				t.Errorf("classified %v; want item", d)
			}
			if n, most := read.Load(), max(tc.maxAnswer, task.DefaultMaxAnswerBytes)/1000+64<<10; n > most {
				t.Errorf("read %d bytes off the wire; want at most %d: the read must stop at the bound", n, most)
			}
		})
	}
}

// TestAnAnswerUpToTheBoundIsAccepted: 1 MiB of body under a bound of 1 MiB
// and 2 bytes (the JSON string's quotes) is the output, whole.
func TestAnAnswerUpToTheBoundIsAccepted(t *testing.T) {
	ts := serveBomb(t, 1<<20)
	var read atomic.Int64
	tk := mustNew(t, Config{URL: ts.URL, Output: OutputJSON, MaxAnswerBytes: 1<<20 + 2, Client: countingClient(t, &read)})
	res, err := tk.Run(t.Context(), task.Item{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := `"` + strings.Repeat("a", 1<<20) + `"`; string(res.Output) != want {
		t.Errorf("output is %d bytes; want the %d of the whole body", len(res.Output), len(want))
	}
}

// pipeListener serves the net.Pipe connections its dial makes, so a test
// of a slow body runs in a synctest bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
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

// TestASlowDribbledBodyEndsAtTheTimeout: the status and headers at once,
// then a byte a second; the timeout counts the whole read of the body, so
// the attempt ends at 4s, retryable.
func TestASlowDribbledBodyEndsAtTheTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
		var sent atomic.Int64
		finished := make(chan struct{})
		srv := &nethttp.Server{Handler: nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
			defer close(finished)
			for {
				w.(nethttp.Flusher).Flush()
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
		tr := &nethttp.Transport{DialContext: ln.dial}
		defer tr.CloseIdleConnections()
		tk := mustNew(t, Config{URL: "http://127.0.0.1/", Timeout: 4 * time.Second, Client: &nethttp.Client{Transport: tr}})
		start := time.Now()
		_, err := tk.Run(t.Context(), task.Item{})
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
}
