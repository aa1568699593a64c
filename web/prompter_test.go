package web

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
)

// stubborn never answers: it waits for its context and reports that it
// was canceled.
type stubborn struct{ canceled chan struct{} }

func (s stubborn) Trip(ctx context.Context, _ engine.TripReport) engine.TripDecision {
	<-ctx.Done()
	close(s.canceled)
	return engine.TripAbortRun
}

func (s stubborn) CheckIn(ctx context.Context, _ engine.CheckIn) bool {
	<-ctx.Done()
	close(s.canceled)
	return false
}

func TestRaceTakesTheFirstAnswerAndCancelsTheOthers(t *testing.T) {
	for _, c := range []struct {
		name string
		ask  func(engine.Operator) bool
	}{
		{"trip", func(p engine.Operator) bool {
			return p.Trip(context.Background(), engine.TripReport{Reason: "test"}) == engine.TripContinue
		}},
		{"checkin", func(p engine.Operator) bool { return p.CheckIn(context.Background(), engine.CheckIn{}) }},
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

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

// waitFor polls until cond holds: the prompters run on their goroutines.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute) // a safety net
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// Regression: once the page had answered, the terminal's canceled prompt
// left a read of stdin running, which swallowed the operator's answer to
// the next trip, and that trip waited forever.
func TestTerminalAnswersTheTripAfterOneThePageAnswered(t *testing.T) {
	for _, late := range []string{"", "a\n"} {
		t.Run(fmt.Sprintf("typed after the page answered: %q", late), func(t *testing.T) {
			in, typing := io.Pipe()
			defer typing.Close()
			out := &syncBuffer{}
			terminal := console.NewPrompter(in, out)
			page := &Prompter{}
			race := Race(terminal, page)
			report := engine.TripReport{Reason: "3 consecutive failures"}

			first := make(chan engine.TripDecision, 1)
			go func() { first <- race.Trip(context.Background(), report) }()
			waitFor(t, "the page's question", func() bool { return page.Pending() != nil })
			waitFor(t, "the terminal's question", func() bool { return out.count("[C]ontinue") == 1 })
			page.Answer(page.Pending().ID, true)
			if d := <-first; d != engine.TripContinue {
				t.Fatalf("first trip: %v, want TripContinue from the page", d)
			}
			if late != "" {
				// An answer typed too late for the first trip is not
				// taken for the second one.
				io.WriteString(typing, late)
			}

			second := make(chan engine.TripDecision, 1)
			go func() { second <- race.Trip(context.Background(), report) }()
			waitFor(t, "the terminal's second question", func() bool { return out.count("[C]ontinue") == 2 })
			io.WriteString(typing, "c\n")
			select {
			case d := <-second:
				if d != engine.TripContinue {
					t.Errorf("second trip: %v, want TripContinue as typed", d)
				}
			case <-time.After(time.Minute): // a safety net
				t.Fatal("the second trip never returned: the terminal lost the typed answer")
			}
			if page.Pending() != nil {
				t.Error("the page still asks after the terminal answered")
			}
		})
	}
}

// TestTheTerminalIsToldOfAPageAnswerBeforeTheRunGoesOn: OnAnswer ran
// after the run had its answer, so the terminal's "answered on the web
// page" could come after what the run printed next (and ExampleRace's
// output came out of order on a loaded machine).
func TestTheTerminalIsToldOfAPageAnswerBeforeTheRunGoesOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := NewMonitor(nil).Prompter
		told, release := make(chan struct{}), make(chan struct{})
		p.OnAnswer = func(Question, string) {
			close(told)
			<-release
		}
		decided := make(chan engine.TripDecision, 1)
		go func() { decided <- p.Trip(context.Background(), engine.TripReport{Reason: "test"}) }()
		synctest.Wait()
		q := p.Pending()
		if q == nil {
			t.Fatal("no question pending while Trip waits")
		}
		answered := make(chan error, 1)
		go func() { answered <- p.Answer(q.ID, true) }()
		<-told
		// Every goroutine is blocked now: the run has its answer only if
		// it was sent before OnAnswer returned.
		synctest.Wait()
		select {
		case d := <-decided:
			close(release)
			<-answered
			t.Fatalf("the run had its answer (%v) while OnAnswer was still telling the terminal", d)
		default:
		}
		close(release)
		if err := <-answered; err != nil {
			t.Fatal(err)
		}
		if d := <-decided; d != engine.TripContinue {
			t.Errorf("Trip returned %v, want TripContinue", d)
		}
	})
}

// noAnswer is a terminal whose input ended: it answers at once that
// nobody answered.
type noAnswer struct{}

func (noAnswer) Trip(context.Context, engine.TripReport) engine.TripDecision {
	return engine.TripNoAnswer
}

func (noAnswer) CheckIn(context.Context, engine.CheckIn) bool { return false }

// A terminal whose input ended stopped the run at once, although the page
// could still answer: its "no answer" won the race.
func TestATerminalWithoutInputLeavesTheAnswerToThePage(t *testing.T) {
	page := &Prompter{}
	page.changed = func() {
		if q := page.Pending(); q != nil {
			go func() { _ = page.Answer(q.ID, true) }()
		}
	}
	if d := Race(noAnswer{}, page).Trip(context.Background(), engine.TripReport{}); d != engine.TripContinue {
		t.Errorf("Race answered %v; want the page's Continue", d)
	}
	if d := Race(noAnswer{}).Trip(context.Background(), engine.TripReport{}); d != engine.TripNoAnswer {
		t.Errorf("Race of a terminal without input answered %v; want TripNoAnswer", d)
	}
}
