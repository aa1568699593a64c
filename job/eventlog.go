package job

import (
	"context"
	"log/slog"
	"math/bits"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
)

// eventLog writes the engine's events to a run's log. It is called from
// the engine's goroutines, so what it counts is guarded.
//
// A dead route (or the run's breaker left to probe) is tried again every
// reset_timeout: half-open, then open again when the probe fails. One
// warning per failed probe was the news at a reset_timeout of 30 s; at
// 100 ms it was 36,000 lines for an hour's outage, burying every other
// line. The first trip warns, then the 1st, 2nd, 4th, 8th… failed probe
// in a row, each saying how many; the others, and every half-open step, are
// debug lines. The breaker closing again warns with the count.
type eventLog struct {
	out *slog.Logger

	mu sync.Mutex
	// failed counts each breaker's failed probes in a row since it
	// tripped, by route ("" for the run's breaker).
	failed map[string]int
}

// newEventLog returns the event log writing to out.
func newEventLog(out *slog.Logger) *eventLog {
	return &eventLog{out: out, failed: make(map[string]int)}
}

// log writes ev: retries and re-asks at debug, failed items at info,
// breakers, pauses and stops at warn.
func (l *eventLog) log(ev engine.Event) {
	ctx := context.Background()
	switch ev.Kind {
	case engine.ItemRetry:
		l.out.Debug("retrying item", "idx", ev.Item.Idx, "attempt", ev.Attempt, "delay", ev.Delay, "class", ev.Decision.String(), "error", ev.Err)
	case engine.ItemHeal:
		l.out.Debug("re-asking item with feedback", "idx", ev.Item.Idx, "heal_attempt", ev.Attempt, "error", ev.Err)
	case engine.ItemFinished:
		if ev.Record.Failed() {
			l.out.Log(ctx, slog.LevelInfo, "item failed", "idx", ev.Record.Idx, "class", ev.Record.Class.String(), "error", firstLine(ev.Record.Error))
		}
	case engine.BreakerChanged:
		l.breaker(ctx, "", ev.State, "circuit breaker "+ev.State.String())
	case engine.Cooldown:
		l.out.Info("dispatch paused", "until", ev.Until.Format(time.RFC3339Nano), "reason", ev.Reason)
	case engine.RouteChanged:
		l.breaker(ctx, ev.Route, ev.State, "route breaker "+ev.State.String(), "route", ev.Route)
	case engine.ConcurrencyChanged:
		l.out.Debug("concurrency limit changed", "limit", ev.Limit)
	case engine.Stopping:
		l.out.Warn("stopping dispatch", "reason", ev.Reason)
	case engine.Held, engine.Unheld:
		// The operator's pause, audited: who and, by the log's time, when.
		l.out.Warn(ev.Reason, "event", ev.Kind.String())
	}
}

// breaker writes a change of route's breaker (the run's for ""), at warn
// when it is news: a trip, a run of failed probes reaching a power of
// two, the breaker closing again.
func (l *eventLog) breaker(ctx context.Context, route string, state breaker.State, msg string, args ...any) {
	level := slog.LevelWarn
	l.mu.Lock()
	failed, tripped := l.failed[route]
	switch state {
	case breaker.HalfOpen:
		level = slog.LevelDebug
	case breaker.Open:
		if tripped {
			failed++
			if bits.OnesCount(uint(failed)) != 1 {
				level = slog.LevelDebug
			}
		}
		l.failed[route] = failed
	default:
		delete(l.failed, route)
	}
	l.mu.Unlock()
	args = append(args, "state", state.String())
	if failed > 0 {
		args = append(args, "failed_probes", failed)
	}
	l.out.Log(ctx, level, msg, args...)
}
