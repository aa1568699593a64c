package llm

import (
	"net"
	"net/http"
	"time"
)

// DefaultConnections is Config.Connections when it is 0: the calls a task
// expects to have in flight at once when nobody says.
const DefaultConnections = 64

// newTransport is the HTTP transport of a Task whose Config names no
// HTTPClient, for up to conns calls in flight at once; limit, when not 0,
// is the most connections it opens to a host at a time.
//
// Go's default transport keeps 2 idle connections per host: a job with 32
// calls in flight closes 30 connections after every wave of answers and
// dials them again, each a TCP (and, against a real provider, a TLS)
// handshake, and leaves the closed ones in TIME_WAIT. This one keeps conns
// idle per host; a job also caps the connections at its concurrency, as
// dials started in a burst of calls would otherwise outnumber it when an
// idle connection frees up first, so the connections it opens stay within
// its concurrency (docs/benchmarks.md, "CPU per LLM call"). HTTP/2 is used
// where the provider offers it over TLS, with a ping that finds a dead
// connection in under a minute rather than at the attempt's timeout. No
// response-header timeout: an answer may take minutes, and
// Config.Timeout bounds each attempt.
func newTransport(conns, limit int) *http.Transport {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          conns,
		MaxIdleConnsPerHost:   conns,
		MaxConnsPerHost:       limit,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
		HTTP2: &http.HTTP2Config{
			SendPingTimeout: 30 * time.Second,
			PingTimeout:     15 * time.Second,
		},
	}
}
