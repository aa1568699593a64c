package web

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"
)

// Endpoint is a Server listening on an address.
type Endpoint struct {
	// URL opens the page: with ?token=… when a token is required.
	URL string
	// Token is the token required of requests, "" on loopback.
	Token string
	// ViewURL opens the page read-only, with the view token
	// (Config.ViewToken); "" without one.
	ViewURL string

	srv    *http.Server
	cancel context.CancelFunc
	done   chan error
}

// Listen serves the view of cfg on addr ("127.0.0.1:0" picks a free port).
// An address that is not loopback requires a token: cfg.Token, or a new
// random one when it is empty; so does a view token (cfg.ViewToken) on
// any address, since tokens then tell an operator from a viewer. Close
// stops serving.
func Listen(addr string, cfg Config) (*Endpoint, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("web: listening on %s: %w", addr, err)
	}
	tcp, _ := ln.Addr().(*net.TCPAddr)
	if tcp == nil || !tcp.IP.IsLoopback() || cfg.ViewToken != "" {
		if cfg.Token == "" {
			cfg.Token = NewToken()
		}
	}
	host := ln.Addr().String()
	if tcp != nil && tcp.IP.IsUnspecified() {
		// Listening on every interface: name the machine, not 0.0.0.0.
		if h, err := os.Hostname(); err == nil {
			host = net.JoinHostPort(h, fmt.Sprint(tcp.Port))
		}
	}
	e := &Endpoint{URL: "http://" + host + "/", Token: cfg.Token, done: make(chan error, 1)}
	if cfg.ViewToken != "" {
		e.ViewURL = e.URL + "?token=" + cfg.ViewToken
	}
	if cfg.Token != "" {
		e.URL += "?token=" + cfg.Token
	}
	base, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	e.srv = &http.Server{Handler: New(cfg), ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	go func() { e.done <- e.srv.Serve(ln) }()
	return e, nil
}

// Shutdown stops listening and waits until the open pages have been sent
// the end of the live run (Monitor.End) or ctx is done, then ends every
// event stream.
func (e *Endpoint) Shutdown(ctx context.Context) error {
	err := e.srv.Shutdown(ctx)
	e.cancel()
	if err != nil {
		err = e.srv.Close()
	}
	if serr := <-e.done; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}

// Close stops listening and ends every event stream at once.
func (e *Endpoint) Close() error {
	e.cancel()
	return e.Shutdown(context.Background())
}

// MetricsURL is the endpoint's /metrics address (without the token: give
// it to Prometheus as a bearer token).
func (e *Endpoint) MetricsURL() string {
	u, _, _ := strings.Cut(e.URL, "?")
	return u + "metrics"
}
