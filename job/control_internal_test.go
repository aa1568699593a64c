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

// TestADeadBreakersProbesWarnAtPowersOfTwo: every failed probe of a dead
// route warned once, 36,000 lines for an hour's outage at a reset_timeout
// of 100 ms. The trip warns, then the 1st, 2nd, 4th, 8th… failed probe in
// a row with its count; half-open steps and the other probes are debug
// lines; the breaker closing warns with the count, and the next trip
// counts from zero. The run's breaker is logged the same way.
func TestADeadBreakersProbesWarnAtPowersOfTwo(t *testing.T) {
	for _, tc := range []struct {
		name, msg string
		event     func(breaker.State) engine.Event
	}{
		{"route", "route breaker", func(s breaker.State) engine.Event {
			return engine.Event{Kind: engine.RouteChanged, Route: "a", State: s}
		}},
		{"run", "circuit breaker", func(s breaker.State) engine.Event {
			return engine.Event{Kind: engine.BreakerChanged, State: s}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b bytes.Buffer
			l := newEventLog(slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelWarn})))
			outage := func(probes int) {
				l.log(tc.event(breaker.Open))
				for range probes {
					l.log(tc.event(breaker.HalfOpen))
					l.log(tc.event(breaker.Open))
				}
				l.log(tc.event(breaker.HalfOpen))
				l.log(tc.event(breaker.Closed))
			}
			outage(1000)
			outage(2)
			want := []string{
				"open", "open failed_probes=1", "open failed_probes=2", "open failed_probes=4",
				"open failed_probes=8", "open failed_probes=16", "open failed_probes=32",
				"open failed_probes=64", "open failed_probes=128", "open failed_probes=256",
				"open failed_probes=512", "closed failed_probes=1000",
				"open", "open failed_probes=1", "open failed_probes=2", "closed failed_probes=2",
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
				if !strings.Contains(line, "level=WARN") || !strings.Contains(line, tc.msg) {
					t.Fatalf("a line that is not a WARN of the %s: %s", tc.msg, line)
				}
				state := line[strings.Index(line, "state=")+len("state="):]
				got = append(got, state)
			}
			if strings.Join(got, "; ") != strings.Join(want, "; ") {
				t.Errorf("WARN lines of two outages (1000 failed probes, then 2):\n got %q\nwant %q\n%s", got, want, b.String())
			}
			if strings.Contains(b.String(), "half_open") {
				t.Errorf("a probe's half-open step is logged at WARN:\n%s", b.String())
			}
		})
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
