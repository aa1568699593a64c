package console

import (
	"sync"

	"github.com/tenaxhq/tenax/engine"
)

// FailureLog keeps a run's most recent final failures, so that Inspect can
// page through the failures the breaker drained, not only the last one.
// Feed it from the engine's ItemFinished events; it is safe for concurrent
// use and its zero value keeps DefaultFailureLogSize failures.
type FailureLog struct {
	mu   sync.Mutex
	size int
	ring []engine.Failure
	next int // where the next failure goes once the ring is full
}

// DefaultFailureLogSize is how many failures a zero FailureLog keeps.
const DefaultFailureLogSize = 100

// NewFailureLog returns a log of the last size failures (the default when
// size < 1).
func NewFailureLog(size int) *FailureLog { return &FailureLog{size: size} }

// Add records a final failure, forgetting the oldest when full.
func (l *FailureLog) Add(f engine.Failure) {
	l.mu.Lock()
	defer l.mu.Unlock()
	size := l.size
	if size < 1 {
		size = DefaultFailureLogSize
	}
	if len(l.ring) < size {
		l.ring = append(l.ring, f)
		return
	}
	l.ring[l.next] = f
	l.next = (l.next + 1) % size
}

// Observe adds the failure an ItemFinished event reports; other events
// are ignored. It is meant for engine.Config.OnEvent.
func (l *FailureLog) Observe(ev engine.Event) {
	if ev.Kind != engine.ItemFinished || !ev.Record.Failed() {
		return
	}
	l.Add(engine.Failure{Item: ev.Item, Err: ev.Err, Decision: ev.Decision, Attempts: ev.Record.Attempts})
}

// Newest returns the failures kept, newest first.
func (l *FailureLog) Newest() []engine.Failure {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]engine.Failure, 0, len(l.ring))
	for i := range l.ring {
		j := (l.next - 1 - i + 2*len(l.ring)) % len(l.ring)
		out = append(out, l.ring[j])
	}
	return out
}
