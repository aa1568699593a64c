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
// does.
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
	out := t.s.handle(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if out == resetConn {
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return &http.Response{
		Status:        strconv.Itoa(rec.status) + " " + http.StatusText(rec.status),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(rec.body.Bytes())),
		ContentLength: int64(rec.body.Len()),
		Request:       req,
	}, nil
}

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

// resetConnection drops a real connection with a TCP reset: SO_LINGER 0
// makes close send RST instead of FIN. A connection that cannot be
// hijacked (HTTP/2) is aborted instead.
func resetConnection(w http.ResponseWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tcp, ok := conn.(*net.TCPConn); ok {
		_ = tcp.SetLinger(0)
	}
	_ = conn.Close()
}
