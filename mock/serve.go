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

// ListenAndServe serves a mock provider configured by cfg on addr (such as
// "127.0.0.1:8089"; port 0 picks a free one) until ctx is done, then shuts
// down, giving requests in flight 5 seconds. It prints the base URLs to
// give tenax to out, and returns nil after a shutdown caused by ctx.
//
// Requests blocked by a Timeout fault end when the client gives up or ctx
// is done.
func ListenAndServe(ctx context.Context, addr string, cfg Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
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
		Handler:           New(cfg),
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("mock: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("mock: shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("mock: %w", err)
	}
	return nil
}
