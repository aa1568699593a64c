package worker

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

// TestRiverReconnectsAreNotErrors: River logs each retry of a lost
// connection at ERROR (its notifier, elector and producers), a screenful
// per database blip that the worker rides out; River's logger lowers those
// to info, below the warnings it shows, and leaves River's other errors
// as they are.
func TestRiverReconnectsAreNotErrors(t *testing.T) {
	var b bytes.Buffer
	log := quietLogger(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})))
	lost := errors.New("failed to connect to `host=127.0.0.1`: connection refused")
	log.Error("Notifier: Error running listener (will attempt reconnect after backoff)", "err", lost)
	log.Error("Elector: Error attempting to elect", "err", lost)
	log.Error("producer: Error fetching jobs", "err", lost, "queue", "tenax_job_1")
	if b.Len() != 0 {
		t.Errorf("River's routine reconnects reach the log:\n%s", b.String())
	}
	log.Error("producer: Failed to unmarshal insert notification payload", "err", "bad json")
	if got := strings.Count(b.String(), "level=ERROR"); got != 1 {
		t.Errorf("%d ERROR lines for River's one real error, want 1:\n%s", got, b.String())
	}

	b.Reset()
	verbose := slog.New(levelHandler{Handler: slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug}), min: slog.LevelDebug})
	verbose.Error("Notifier: Error connecting listener", "err", lost)
	if !strings.Contains(b.String(), "level=INFO") {
		t.Errorf("a reconnect, lowered, is not an info line for who asks for them:\n%s", b.String())
	}
}
