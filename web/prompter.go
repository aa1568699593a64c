package web

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tenaxhq/tenax/console"
	"github.com/tenaxhq/tenax/engine"
)

// Prompter is the page as an engine.Operator: a tripped breaker or a due
// check-in becomes a pending Question that the page shows with its
// buttons, and Trip or CheckIn returns the answer posted from the page.
// Combine it with a terminal's prompter with Race.
type Prompter struct {
	// OnAnswer, when set, is told each answer given on the page ("continue"
	// or "abort"), for the terminal to say where the run's answer came
	// from.
	OnAnswer func(q Question, answer string)

	changed func()

	mu      sync.Mutex
	redact  func(string) string
	seq     uint64
	pending *Question
	answer  chan bool
}

// Question is what the operator is asked.
type Question struct {
	// ID tells one question from the next, so that an answer posted from
	// a page shown before is not taken for the next question's.
	ID uint64
	// Kind is "trip" (the breaker opened) or "checkin".
	Kind string
	// Summary is the same text the terminal prompt shows.
	Summary string
	// Details is Inspect's full view of the last failure (trip only).
	Details string
	// Latest are the latest records (check-in only).
	Latest []RecentItem
}

// ErrNoQuestion is returned by Answer when no question is pending, or the
// pending one is not the one answered.
var ErrNoQuestion = errors.New("no such question is pending (answered already?)")

func (p *Prompter) setRedact(r func(string) string) {
	p.mu.Lock()
	p.redact = r
	p.mu.Unlock()
}

func (p *Prompter) scrub(s string) string {
	if p.redact != nil {
		return p.redact(s)
	}
	return s
}

// Trip shows the breaker's summary on the page and waits for Continue or
// Abort. A canceled ctx (the run ended, or another prompter answered) is
// Abort.
func (p *Prompter) Trip(ctx context.Context, r engine.TripReport) engine.TripDecision {
	tq := console.NewTripQuestion(r, nil)
	details := console.Inspect(nil)
	if len(tq.Failures) > 0 {
		details = tq.Failures[0]
	}
	p.mu.Lock()
	q := Question{Kind: "trip", Summary: p.scrub(tq.Summary), Details: p.scrub(details)}
	p.mu.Unlock()
	if p.ask(ctx, q) {
		return engine.TripContinue
	}
	return engine.TripAbortRun
}

// CheckIn shows the latest records on the page and waits for Continue or
// Abort; a canceled ctx is Abort.
func (p *Prompter) CheckIn(ctx context.Context, c engine.CheckIn) bool {
	s := c.Stats
	p.mu.Lock()
	q := Question{Kind: "checkin",
		Summary: fmt.Sprintf("Check-in: %d/%d done, %d failed. Continue?", s.Done, s.Total, s.Failed)}
	for _, rec := range c.Latest {
		ri := RecentItem{Idx: rec.Idx, ID: rec.ID, Outcome: "succeeded", Attempts: rec.Attempts, Heals: rec.HealAttempts}
		if rec.Failed() {
			ri.Outcome, ri.Class, ri.Error = "failed", rec.Class.String(), p.scrub(firstLine(rec.Error))
		} else {
			ri.Output = p.scrub(truncate(string(rec.Output), 300))
		}
		q.Latest = append(q.Latest, ri)
	}
	p.mu.Unlock()
	return p.ask(ctx, q)
}

// ask makes q the pending question and waits for its answer.
func (p *Prompter) ask(ctx context.Context, q Question) bool {
	ch := make(chan bool, 1)
	p.mu.Lock()
	p.seq++
	q.ID = p.seq
	p.pending, p.answer = &q, ch
	p.mu.Unlock()
	p.signal()
	defer func() {
		p.mu.Lock()
		if p.pending != nil && p.pending.ID == q.ID {
			p.pending, p.answer = nil, nil
		}
		p.mu.Unlock()
		p.signal()
	}()
	select {
	case goOn := <-ch:
		return goOn
	case <-ctx.Done():
		return false
	}
}

// Pending returns the question waiting for an answer, nil when none.
func (p *Prompter) Pending() *Question {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending == nil {
		return nil
	}
	q := *p.pending
	return &q
}

// Answer answers question id: goOn is Continue, otherwise Abort. It
// returns ErrNoQuestion when id is not the pending question.
func (p *Prompter) Answer(id uint64, goOn bool) error {
	p.mu.Lock()
	if p.pending == nil || p.pending.ID != id {
		p.mu.Unlock()
		return ErrNoQuestion
	}
	q, ch := *p.pending, p.answer
	p.pending, p.answer = nil, nil
	p.mu.Unlock()
	// Told before the run has its answer, so that what OnAnswer prints
	// comes before whatever the run does next.
	if p.OnAnswer != nil {
		answer := "abort"
		if goOn {
			answer = "continue"
		}
		p.OnAnswer(q, answer)
	}
	ch <- goOn // buffered: never blocks
	p.signal()
	return nil
}

func (p *Prompter) signal() {
	if p.changed != nil {
		p.changed()
	}
}

// Race returns an Operator that asks every one of ps at once: the first
// answer wins, and the others' contexts are canceled and waited for, so
// that a terminal stops asking once the page has answered and the other
// way round.
func Race(ps ...engine.Operator) engine.Operator { return race(ps) }

type race []engine.Operator

// Trip returns the first answer; a terminal whose input ended (no answer)
// does not win over the page, which may still answer.
func (r race) Trip(ctx context.Context, rep engine.TripReport) engine.TripDecision {
	return first(ctx, r, func(ctx context.Context, p engine.Operator) engine.TripDecision { return p.Trip(ctx, rep) },
		func(d engine.TripDecision) bool { return d != engine.TripNoAnswer })
}

// CheckIn returns the first answer.
func (r race) CheckIn(ctx context.Context, c engine.CheckIn) bool {
	return first(ctx, r, func(ctx context.Context, p engine.Operator) bool { return p.CheckIn(ctx, c) }, nil)
}

// first runs ask on every prompter and returns the first answer that is
// an answer (answered, when set, says so), after the others have
// returned; when none is, the last.
func first[T any](ctx context.Context, ps []engine.Operator, ask func(context.Context, engine.Operator) T, answered func(T) bool) T {
	if len(ps) == 0 {
		var abort T // TripAbortRun, or false: nobody to ask is Abort
		return abort
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	answers := make(chan T, len(ps))
	for _, p := range ps {
		go func() { answers <- ask(ctx, p) }()
	}
	var winner T
	for n := range len(ps) {
		a := <-answers
		if n == 0 || (answered != nil && !answered(winner)) {
			winner = a
		}
		if answered == nil || answered(winner) {
			cancel()
		}
	}
	return winner
}
