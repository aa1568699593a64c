package web

import (
	"context"
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
)

// stubborn never answers: it waits for its context and reports that it
// was canceled.
type stubborn struct{ canceled chan struct{} }

func (s stubborn) Trip(ctx context.Context, _ engine.TripReport) engine.TripDecision {
	<-ctx.Done()
	close(s.canceled)
	return engine.TripAbortRun
}

func (s stubborn) Checkin(ctx context.Context, _ []store.Record, _ engine.Stats) bool {
	<-ctx.Done()
	close(s.canceled)
	return false
}

func TestRaceTakesTheFirstAnswerAndCancelsTheOthers(t *testing.T) {
	for _, c := range []struct {
		name string
		ask  func(engine.Prompter) bool
	}{
		{"trip", func(p engine.Prompter) bool {
			return p.Trip(context.Background(), engine.TripReport{Reason: "test"}) == engine.TripContinue
		}},
		{"checkin", func(p engine.Prompter) bool { return p.Checkin(context.Background(), nil, engine.Stats{}) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			terminal := stubborn{canceled: make(chan struct{})}
			page := &Prompter{}
			page.changed = func() {
				if q := page.Pending(); q != nil {
					page.Answer(q.ID, true)
				}
			}
			if !c.ask(Race(terminal, page)) {
				t.Error("the race returned Abort; the page answered Continue")
			}
			select {
			case <-terminal.canceled:
			default:
				t.Error("Race returned before the terminal's prompt was canceled")
			}
		})
	}
}

func TestRaceOfNobodyIsAbort(t *testing.T) {
	if d := Race().Trip(context.Background(), engine.TripReport{}); d != engine.TripAbortRun {
		t.Errorf("Race() answered %v, want TripAbortRun", d)
	}
}

func TestPrompterAnswersAbortWhenItsContextEnds(t *testing.T) {
	p := &Prompter{}
	ctx, cancel := context.WithCancel(context.Background())
	p.changed = func() {
		if p.Pending() != nil {
			cancel()
		}
	}
	if d := p.Trip(ctx, engine.TripReport{}); d != engine.TripAbortRun {
		t.Errorf("Trip = %v after its context ended, want TripAbortRun", d)
	}
	if p.Pending() != nil {
		t.Error("the question stayed pending after Trip returned")
	}
	if err := p.Answer(1, true); err != ErrNoQuestion {
		t.Errorf("answering a question that is gone: %v, want ErrNoQuestion", err)
	}
}
