package mock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// shutdownGrace is how long, beyond the longest latency, ListenAndServe
// waits for the answers in flight when ctx is done.
const shutdownGrace = 5 * time.Second

// ListenAndServe serves a mock provider configured by cfg on addr (such as
// "127.0.0.1:8089"; port 0 picks a free one) until ctx is done, then shuts
// down gracefully: it stops accepting connections and lets the answers in
// flight finish (for up to the longest latency plus 5 seconds). It prints
// the base URLs to give tenax to out, and returns nil after a shutdown
// caused by ctx.
//
// Requests blocked by a Timeout fault end when the client gives up or ctx
// is done: they would never finish on their own.
func ListenAndServe(ctx context.Context, addr string, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	s := New(cfg)
	defer s.Close()
	ln, err := (&net.ListenConfig{}).Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("mock: %w", err)
	}
	base := "http://" + ln.Addr().String()
	if _, err := fmt.Fprintf(out, "mock provider listening: OpenAI base URL %s/v1, Anthropic base URL %s\n", base, base); err != nil {
		ln.Close()
		return fmt.Errorf("mock: %w", err)
	}
	srv := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		// Requests outlive ctx: a shutdown lets them finish.
		BaseContext: func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mock: %w", err)
	case <-ctx.Done():
	}
	// Release the requests held by Timeout faults, then wait for the rest.
	s.releaseHeld()
	grace := max(cfg.Latency, cfg.LatencyMax) + shutdownGrace
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), grace)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
		return fmt.Errorf("mock: shutdown: answers still in flight after %s: %w", grace, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mock: %w", err)
	}
	return nil
}
