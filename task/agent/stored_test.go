package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
)

// provider is a StoringModel over byStep whose provider keeps each
// stored answer under its tags, as OpenAI's stored chat completions do.
// die, when it says so for a call's tags, plays the process dying with
// the call in flight: the provider answers and keeps the answer, and the
// caller never reads it (the call blocks until its context ends).
// paused, when it says so, answers a kept answer that is a retryable
// error (a paused turn): stored, and asked again.
type provider struct {
	byStep
	storing bool
	die     func(agent.Tags) bool
	paused  func(agent.Tags) bool

	pmu     sync.Mutex
	stored  map[agent.Tags]agent.Reply
	sent    []agent.Tags
	lookups []agent.Tags
}

func (p *provider) Storing() (time.Duration, bool) { return time.Minute, p.storing }

func (p *provider) NextStored(ctx context.Context, item task.Item, defs []agent.Def, steps []agent.Step, tags agent.Tags) (agent.Reply, error) {
	rep, err := p.Next(ctx, item, defs, steps)
	p.pmu.Lock()
	p.sent = append(p.sent, tags)
	if p.stored == nil {
		p.stored = map[agent.Tags]agent.Reply{}
	}
	if err == nil {
		p.stored[tags] = rep
	}
	p.pmu.Unlock()
	if p.die != nil && p.die(tags) {
		<-ctx.Done()
		return agent.Reply{}, ctx.Err()
	}
	if p.paused != nil && p.paused(tags) {
		return agent.Reply{}, classify.WithClass(errors.New("paused turn"), classify.Retryable, "test")
	}
	return rep, err
}

func (p *provider) Stored(_ context.Context, _ task.Item, tags agent.Tags) (agent.Reply, error) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	p.lookups = append(p.lookups, tags)
	if rep, ok := p.stored[tags]; ok {
		return rep, nil
	}
	return agent.Reply{}, fmt.Errorf("tags %+v: %w", tags, agent.ErrNotStored)
}

func (p *provider) calls() (sent, lookups []agent.Tags) {
	p.pmu.Lock()
	defer p.pmu.Unlock()
	return append([]agent.Tags(nil), p.sent...), append([]agent.Tags(nil), p.lookups...)
}

// dieAt runs item 0 on m over log until m's call for step dies in
// flight (m.die), as a process killed then would leave the log.
func dieAt(t *testing.T, m *provider, log *memLog) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	m.die = func(tags agent.Tags) bool {
		if tags.Step == 2 {
			cancel()
			return true
		}
		return false
	}
	a := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil).InJob("job1")
	if _, err := a.Run(ctx, task.Item{}); err == nil {
		t.Fatal("the process died in step 2's call, yet Run did not fail")
	}
	if k := log.kinds(0); k["ask"] != 2 || k["answer"] != 1 {
		t.Fatalf("the dead process's log holds %v, want 2 asks and 1 answer: step 2 asked, never answered", k)
	}
}

// A process resumed after one that died with step 2's call in flight
// finds that call's answer stored at the provider under its tags and
// uses it: the model is sent step 2 once, not twice, and the answer is
// recorded as the step's.
func TestAStoredAnswerOfACallInFlightAtAKillIsUsedNotPaidAgain(t *testing.T) {
	answers := [][]agent.Call{{okCall("1")}, {okCall("2")}, nil}
	log := &memLog{}
	m := &provider{byStep: byStep{answers: answers}, storing: true}
	dieAt(t, m, log)
	m.die = nil
	next := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil).InJob("job1")
	if _, err := next.Run(t.Context(), task.Item{}); err != nil {
		t.Fatal(err)
	}
	sent, lookups := m.calls()
	want := []agent.Tags{{Job: "job1", Step: 1, N: 1, Try: 1}, {Job: "job1", Step: 2, N: 1, Try: 1}, {Job: "job1", Step: 3, N: 1, Try: 1}}
	if fmt.Sprint(sent) != fmt.Sprint(want) {
		t.Errorf("the provider was sent %v, want %v: step 2's stored answer is used, not asked again", sent, want)
	}
	if len(lookups) != 1 || lookups[0] != want[1] {
		t.Errorf("the resumed process looked up %v, want only step 2's try 1 (the call in flight)", lookups)
	}
	if k := log.kinds(0); k["answer"] != 3 || k["ask"] != 3 {
		t.Errorf("the log holds %v, want 3 answers and 3 asks (step 2's answer recorded from the provider's store)", k)
	}
}

// When the provider holds no answer for the dead process's call, the
// resumed process polls until the call's timeout (and a grace) since it
// was sent has passed, then asks the step again as a new try, whose tags
// differ.
func TestACallInFlightAtAKillWithNoStoredAnswerIsAskedAgainAfterTheWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answers := [][]agent.Call{{okCall("1")}, {okCall("2")}, nil}
		log := &memLog{}
		m := &provider{byStep: byStep{answers: answers}, storing: true}
		dieAt(t, m, log)
		m.die = nil
		m.pmu.Lock()
		clear(m.stored) // the provider failed the call: nothing stored
		m.pmu.Unlock()
		start := time.Now()
		next := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil).InJob("job1")
		if _, err := next.Run(t.Context(), task.Item{}); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < time.Minute {
			t.Errorf("the step was asked again after %v, want the call's timeout (1m) and grace: the call may still be running", waited)
		}
		sent, lookups := m.calls()
		if len(sent) != 4 || sent[2] != (agent.Tags{Job: "job1", Step: 2, N: 1, Try: 2}) {
			t.Errorf("the provider was sent %v, want step 2 asked again as try 2 after the lookups", sent)
		}
		if len(lookups) < 2 {
			t.Errorf("the resumed process looked up %d times, want polling while the call may still be running", len(lookups))
		}
		for _, l := range lookups {
			if l.Step != 2 || l.Try != 1 {
				t.Errorf("looked up %+v, want only step 2's try 1", l)
			}
		}
	})
}

// A try that failed (a paused turn, stored by the provider) is asked
// again as the next try: the retry in the same process looks nothing up,
// and a process resumed after a kill in the retry's call looks up only
// the retry's try, never the failed one's stored answer.
func TestAFailedTrysStoredAnswerIsNeverTakenForTheRetrys(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		answers := [][]agent.Call{{okCall("1")}, nil}
		log := &memLog{}
		ctx, cancel := context.WithCancel(t.Context())
		m := &provider{byStep: byStep{answers: answers}, storing: true,
			paused: func(tags agent.Tags) bool { return tags.Step == 2 && tags.Try == 1 },
			die: func(tags agent.Tags) bool {
				if tags.Step == 2 && tags.Try == 2 {
					cancel()
					return true
				}
				return false
			}}
		a := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil)
		if _, err := a.Run(ctx, task.Item{}); err == nil {
			t.Fatal("step 2's first try was a paused turn, yet Run did not fail")
		}
		if _, err := a.Run(ctx, task.Item{}); err == nil {
			t.Fatal("the process died in step 2's second try, yet Run did not fail")
		}
		if _, lookups := m.calls(); len(lookups) != 0 {
			t.Errorf("the process looked up %v, want nothing: it saw its own tries end", lookups)
		}
		m.die = nil
		m.pmu.Lock()
		delete(m.stored, agent.Tags{Step: 2, N: 1, Try: 2}) // the killed try failed at the provider
		m.pmu.Unlock()
		next := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil)
		if _, err := next.Run(t.Context(), task.Item{}); err != nil {
			t.Fatal(err)
		}
		sent, lookups := m.calls()
		for _, l := range lookups {
			if l != (agent.Tags{Step: 2, N: 1, Try: 2}) {
				t.Errorf("looked up %+v, want only step 2's try 2: try 1's stored answer was a failure judged already", l)
			}
		}
		if last := sent[len(sent)-1]; last != (agent.Tags{Step: 2, N: 1, Try: 3}) {
			t.Errorf("the last call sent was %+v, want step 2's try 3", last)
		}
	})
}

// With store off (or a model that cannot store), no ask mark is written:
// the journal is what it was without the feature.
func TestWithStoreOffNoAskMarkIsWritten(t *testing.T) {
	for _, m := range []agent.Model{&provider{byStep: byStep{answers: [][]agent.Call{{okCall("1")}, nil}}}, &byStep{answers: [][]agent.Call{{okCall("1")}, nil}}} {
		log := &memLog{}
		a := newAgent(t, m, agent.Config{}, echoTool(t, nil)).Durable(log, nil)
		if _, err := a.Run(t.Context(), task.Item{}); err != nil {
			t.Fatal(err)
		}
		if k := log.kinds(0); k["ask"] != 0 || k["answer"] != 2 {
			t.Errorf("%T: the log holds %v, want 2 answers and no ask", m, k)
		}
		if p, ok := m.(*provider); ok {
			if sent, _ := p.calls(); len(sent) != 0 {
				t.Errorf("store off sent %d stored calls, want none", len(sent))
			}
		}
	}
}
