package mock

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"syscall"
)

// Transport returns a RoundTripper that serves requests in-process, with
// no socket: the request goes straight to the handler. The host of the
// request's URL does not matter. A Timeout fault blocks until the
// request's context is done; a Reset fault fails the round trip with an
// error that wraps syscall.ECONNRESET in a *net.OpError, as a real reset
// does; a Malformed fault gives a body whose read fails with
// io.ErrUnexpectedEOF after part of the answer, as a cut connection does.
// A stream arrives whole, once the handler has written it.
//
// It uses only time.Now and timers, so it works inside a testing/synctest
// bubble.
func (s *Server) Transport() http.RoundTripper { return transport{s} }

// Client returns an http.Client whose transport is s.Transport().
func (s *Server) Client() *http.Client { return &http.Client{Transport: s.Transport()} }

type transport struct{ s *Server }

func (t transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil {
		req.Body = http.NoBody
	} else {
		defer req.Body.Close()
	}
	rec := &recorder{header: make(http.Header)}
	out := t.s.handle(rec, req, false)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if out == resetConn {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	var body io.Reader = bytes.NewReader(rec.body.Bytes())
	length := int64(rec.body.Len())
	if out == cutConn {
		body = io.MultiReader(body, errReader{io.ErrUnexpectedEOF})
		length = -1
		if n, err := strconv.ParseInt(rec.header.Get("Content-Length"), 10, 64); err == nil {
			length = n
		}
	} else if rec.header.Get("Content-Length") == "" {
		length = -1
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(body),
		ContentLength: length,
		Request:       req,
	}, nil
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// recorder is the in-process ResponseWriter.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// Flush does nothing: the body is handed over whole.
func (r *recorder) Flush() {}

// resetConnection drops a real connection with a TCP reset: SO_LINGER 0
// makes close send RST instead of FIN. A connection that cannot be
// hijacked (HTTP/2) is aborted instead.
func resetConnection(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
