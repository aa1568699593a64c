package job

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// TestADeadRouteProbeLogsOneWarning: every probe of a dead route (open,
// half-open, open again) added two WARN lines; the half-open step is a
// debug line now, so each failed probe warns once.
func TestADeadRouteProbeLogsOneWarning(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn}))
	logEvent(log, engine.Event{Kind: engine.RouteChanged, Route: "a", State: breaker.Open})
	const probes = 5
	for range probes {
		logEvent(log, engine.Event{Kind: engine.RouteChanged, Route: "a", State: breaker.HalfOpen})
		logEvent(log, engine.Event{Kind: engine.RouteChanged, Route: "a", State: breaker.Open})
	}
	if got := strings.Count(b.String(), "level=WARN"); got != 1+probes {
		t.Errorf("%d WARN lines for a trip and %d failed probes, want %d:\n%s", got, probes, 1+probes, b.String())
	}
	if strings.Contains(b.String(), "half_open") {
		t.Errorf("a probe's half-open step is logged at WARN:\n%s", b.String())
	}
}

// recorded is a controlled that records what it was asked.
type recorded struct {
	asked  []string
	paused bool
}

func (r *recorded) Pause(by string) bool {
	r.asked = append(r.asked, "pause by "+by)
	was := r.paused
	r.paused = true
	return !was
}

func (r *recorded) Continue(by string) bool {
	r.asked = append(r.asked, "continue by "+by)
	was := r.paused
	r.paused = false
	return was
}

func (r *recorded) Stop(reason engine.StopReason, detail string) {
	r.asked = append(r.asked, reason.String()+": "+detail)
}

// controlJob is a job of a JSONL store in a temporary directory, for the
// control watch to read, and its control file.
func controlJob(t *testing.T) (*jsonl.Store, string, string) {
	t.Helper()
	st := &jsonl.Store{Home: t.TempDir()}
	j, err := st.Create(t.Context(), store.Manifest{Created: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { j.Close() })
	return st, j.Manifest().ID, filepath.Join(jobDir(j), ControlFile)
}

// TestTheRunHeedsItsControlFile: the requests appended after the run
// started are applied in order, once each; older ones (an earlier run's)
// and a line still being written are not.
func TestTheRunHeedsItsControlFile(t *testing.T) {
	st, id, path := controlJob(t)
	ctx := t.Context()
	start := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	if _, err := store.RequestControl(ctx, st, id, ControlRequest{Time: start.Add(-time.Minute), Action: ControlPause, By: "an earlier run's"}); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	target := &recorded{}
	w := &controlWatch{log: st, id: id, since: start, target: target, pausable: true, logger: slog.New(slog.NewTextHandler(&logs, nil))}
	w.look(ctx)
	if len(target.asked) != 0 {
		t.Fatalf("a request from before the run was applied: %q", target.asked)
	}
	for i, r := range []ControlRequest{{Action: ControlPause, By: "alice"}, {Action: ControlContinue, By: "bob"}, {Action: ControlStop, By: "carol"}} {
		r.Time = start.Add(time.Duration(i+1) * time.Second)
		if _, err := store.RequestControl(ctx, st, id, r); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"time":"2026-12-02T03:00:09Z","action":"pause","by":"half"`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	w.look(ctx)
	w.look(ctx) // nothing new: nothing applied twice
	want := []string{"pause by alice", "continue by bob", "operator: stopped by carol at 2026-12-02T03:00:03Z"}
	if strings.Join(target.asked, "|") != strings.Join(want, "|") {
		t.Errorf("applied %q, want %q", target.asked, want)
	}
	if _, err := store.RequestControl(ctx, st, id, ControlRequest{Action: "resume"}); err == nil {
		t.Error("an unknown action was queued")
	}
	if _, err := store.RequestControl(ctx, st, "job_20000101_000000", ControlRequest{Action: ControlStop}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a request for no such job: %v, want store.ErrNotFound", err)
	}
}

// TestABatchRunRefusesAPause: a batch mode run's waves run at the
// provider: a pause is refused in its log, a stop is applied.
func TestABatchRunRefusesAPause(t *testing.T) {
	st, id, _ := controlJob(t)
	var logs bytes.Buffer
	target := &recorded{}
	w := &controlWatch{log: st, id: id, target: target, logger: slog.New(slog.NewTextHandler(&logs, nil))}
	for _, a := range []ControlAction{ControlPause, ControlStop} {
		if _, err := store.RequestControl(t.Context(), st, id, ControlRequest{Action: a, By: "alice"}); err != nil {
			t.Fatal(err)
		}
	}
	w.look(t.Context())
	if len(target.asked) != 1 || !strings.HasPrefix(target.asked[0], "operator: stopped by alice") {
		t.Errorf("a batch run applied %q, want only the stop", target.asked)
	}
	if !strings.Contains(logs.String(), "cannot be paused") {
		t.Errorf("the refused pause is not logged:\n%s", logs.String())
	}
}
