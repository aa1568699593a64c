package main

import (
	"context"
	"fmt"
)

// cancelOnInterrupt returns ctx canceled at the first SIGINT or SIGTERM,
// after saying so on stderr, for a command that stops gracefully on one
// signal (the run's two-stage handling is handleSignals).
func (g *globals) cancelOnInterrupt(ctx context.Context, say string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if g.interrupts != nil {
		go func() {
			select {
			case <-ctx.Done():
			case <-g.interrupts:
				fmt.Fprintln(g.stderr, say)
				cancel()
			}
		}()
	}
	return ctx, cancel
}
