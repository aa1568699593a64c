package breaker

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of Settings' zero fields.
const (
	DefaultThreshold    = 5
	DefaultResetTimeout = 60 * time.Second
	DefaultProbes       = 1
	DefaultWindow       = 20
)

var (
	// ErrOpen is returned by Allow while the breaker is open.
	ErrOpen = errors.New("breaker: circuit open")
	// ErrProbeLimit is returned by Allow while the breaker is half-open
	// and all its probes are out. errors.Is(ErrProbeLimit, ErrOpen) holds:
	// to a caller, both mean "not now".
	ErrProbeLimit = fmt.Errorf("%w: half-open probes all taken", ErrOpen)
)

// Settings configure a Breaker. Zero fields take the defaults of
// docs/spec.md ("breaker").
type Settings struct {
	// Threshold is how many consecutive counted failures open the
	// breaker. Zero means 5; a negative value turns the consecutive
	// count off (only FailureRate then opens the breaker).
	Threshold int
	// FailureRate, when above zero, also opens the breaker when the
	// share of failures among the last Window outcomes reaches it (0.5
	// means half). The rate is judged at each failure, and only once
	// Window outcomes have been seen since the breaker last closed.
	FailureRate float64
	// Window is how many recent outcomes FailureRate looks at. Zero
	// means 20.
	Window int
	// ResetTimeout is how long the breaker stays open before letting
	// probes through. Zero means 60s.
	ResetTimeout time.Duration
	// Probes is how many trial calls a half-open breaker lets through
	// at once; all of them must succeed to close it. Zero means 1.
	Probes int
	// OnStateChange, when set, is called after each change of state
	// with the counts of the state that ended. It is called outside the
	// breaker's lock, so it may call the breaker, and the calls are made
	// one at a time, in the order of the changes, possibly from another
	// goroutine than the one that caused the change.
	OnStateChange func(from, to State, c Counts)
}

// Counts are the outcomes a breaker has seen in its current state: each
// change of state, and Reset, start them from zero.
type Counts struct {
	// ConsecutiveFailures is the current run of failures; any success
	// ends it.
	ConsecutiveFailures int
	// Requests is how many permits were given.
	Requests int
	// Failures and Successes are the outcomes reported.
	Failures  int
	Successes int
	// WindowFailures is how many of the last WindowSize outcomes were
	// failures (only with FailureRate set).
	WindowFailures int
	// WindowSize is how many outcomes the window holds, at most
	// Settings.Window.
	WindowSize int
}

// Breaker is a circuit breaker: it lets calls through while they work,
// stops them when they keep failing, and tries again after a while. It is
// safe for concurrent use; see the package documentation.
type Breaker struct {
	s Settings // with defaults applied

	// cur is the current generation. Its state and times never change;
	// its counters are atomics. A state change installs a new
	// generation, so outcomes of permits from an old one land in a
	// generation nobody reads any more: they are ignored for free.
	cur atomic.Pointer[generation]

	mu         sync.Mutex // serializes changes of state and half-open probes
	pending    []change   // state changes not yet given to OnStateChange
	delivering bool       // a goroutine is calling OnStateChange
}

// generation is one stretch of a breaker in one state.
type generation struct {
	state    State
	openedAt time.Time // when the breaker last opened (zero if never since Reset)
	readyAt  time.Time // Open only: when it turns half-open

	requests    atomic.Int64
	successes   atomic.Int64
	failures    atomic.Int64
	consecutive atomic.Int64

	// The failure-rate window (Closed with FailureRate only): a ring of
	// outcomes, 1 for a failure. next counts every outcome ever pushed.
	window         []atomic.Uint32
	next           atomic.Uint64
	windowFailures atomic.Int64

	probes int // HalfOpen only, under mu: permits out or succeeded
}

type change struct {
	from, to State
	counts   Counts
}

// New returns a closed Breaker with settings s.
func New(s Settings) *Breaker {
	if s.Threshold == 0 {
		s.Threshold = DefaultThreshold
	}
	if s.ResetTimeout <= 0 {
		s.ResetTimeout = DefaultResetTimeout
	}
	if s.Probes <= 0 {
		s.Probes = DefaultProbes
	}
	if s.Window <= 0 {
		s.Window = DefaultWindow
	}
	b := &Breaker{s: s}
	b.cur.Store(b.newGeneration(Closed, time.Time{}, time.Time{}))
	return b
}

func (b *Breaker) newGeneration(s State, openedAt, now time.Time) *generation {
	g := &generation{state: s, openedAt: openedAt}
	switch s {
	case Open:
		g.readyAt = now.Add(b.s.ResetTimeout)
	case Closed:
		if b.s.FailureRate > 0 {
			g.window = make([]atomic.Uint32, b.s.Window)
		}
	}
	return g
}

// Permit is the right to make one call, given by Allow. Report the call's
// outcome exactly once with Success, Failure or Release. A permit given
// before the breaker changed state is stale: its outcome is ignored. The
// zero Permit ignores everything.
type Permit struct {
	b *Breaker
	g *generation
}

// Probe reports whether the permit is one of a half-open breaker's trial
// calls: its failure re-opens the breaker, so a caller that would not
// otherwise count a failure (a retry to come) should report it anyway.
func (p Permit) Probe() bool { return p.g != nil && p.g.state == HalfOpen }

// Allow asks to make a call. A closed breaker always gives a permit. An
// open one returns ErrOpen until ResetTimeout has passed since it opened;
// then it turns half-open and gives out Probes permits, returning
// ErrProbeLimit (which is also ErrOpen) to everyone else until those
// probes have been reported.
func (b *Breaker) Allow() (Permit, error) {
	g := b.cur.Load()
	if g.state == Closed {
		g.requests.Add(1)
		return Permit{b: b, g: g}, nil
	}
	if g.state == Open && time.Now().Before(g.readyAt) {
		return Permit{}, ErrOpen
	}
	b.mu.Lock()
	g = b.halfOpenIfReady(time.Now())
	var err error
	switch g.state {
	case Closed: // changed while we took the lock
		g.requests.Add(1)
	case Open:
		err = ErrOpen
	case HalfOpen:
		if g.probes >= b.s.Probes {
			err = ErrProbeLimit
		} else {
			g.probes++
			g.requests.Add(1)
		}
	}
	b.mu.Unlock()
	b.notify()
	if err != nil {
		return Permit{}, err
	}
	return Permit{b: b, g: g}, nil
}

// halfOpenIfReady turns an open breaker whose timeout has passed
// half-open, and returns the current generation. b.mu must be held.
func (b *Breaker) halfOpenIfReady(now time.Time) *generation {
	g := b.cur.Load()
	if g.state == Open && !now.Before(g.readyAt) {
		g = b.change(HalfOpen, now)
	}
	return g
}

// change installs a new generation in state to and queues the listener
// call. b.mu must be held.
func (b *Breaker) change(to State, now time.Time) *generation {
	old := b.cur.Load()
	openedAt := old.openedAt
	switch to {
	case Open:
		openedAt = now
	case Closed:
		openedAt = time.Time{}
	}
	g := b.newGeneration(to, openedAt, now)
	b.cur.Store(g)
	if b.s.OnStateChange != nil && old.state != to {
		b.pending = append(b.pending, change{from: old.state, to: to, counts: old.counts()})
	}
	return g
}

// notify gives the queued changes to OnStateChange, in order and one at a
// time, outside the lock. If another goroutine is already doing so, that
// goroutine delivers ours too.
func (b *Breaker) notify() {
	if b.s.OnStateChange == nil {
		return
	}
	b.mu.Lock()
	if b.delivering {
		b.mu.Unlock()
		return
	}
	b.delivering = true
	b.mu.Unlock()
	finished := false
	defer func() { // when the listener panics, let the next change deliver
		if !finished {
			b.mu.Lock()
			b.delivering = false
			b.mu.Unlock()
		}
	}()
	for {
		b.mu.Lock()
		if len(b.pending) == 0 {
			b.pending = nil
			b.delivering = false
			b.mu.Unlock()
			finished = true
			return
		}
		c := b.pending[0]
		b.pending = b.pending[1:]
		b.mu.Unlock()
		b.s.OnStateChange(c.from, c.to, c.counts)
	}
}

// Success reports that the call worked. In a closed breaker it ends the
// run of failures; the last of a half-open breaker's probes to succeed
// closes it.
func (p Permit) Success() {
	g := p.g
	if g == nil {
		return
	}
	if g.state == Closed {
		g.successes.Add(1)
		if g.consecutive.Load() != 0 {
			g.consecutive.Store(0)
		}
		if g.window != nil {
			g.push(0)
		}
		return
	}
	b := p.b
	b.mu.Lock()
	if b.cur.Load() == g {
		g.successes.Add(1)
		g.consecutive.Store(0)
		if g.successes.Load() >= int64(b.s.Probes) {
			b.change(Closed, time.Now())
		}
	}
	b.mu.Unlock()
	b.notify()
}

// Failure reports a failure that counts toward opening the breaker. In a
// closed breaker it opens it once Threshold failures run in a row, or the
// window's failure rate reaches FailureRate; a half-open breaker opens
// again at once, and its timeout starts over.
func (p Permit) Failure() {
	g := p.g
	if g == nil {
		return
	}
	b := p.b
	g.failures.Add(1)
	n := g.consecutive.Add(1)
	if g.state == Closed {
		if g.window != nil {
			g.push(1)
		}
		if !b.tripsClosed(g, n) {
			return
		}
	}
	b.mu.Lock()
	if b.cur.Load() == g {
		b.change(Open, time.Now())
	}
	b.mu.Unlock()
	b.notify()
}

// tripsClosed says whether a closed generation that just saw its n-th
// consecutive failure should open.
func (b *Breaker) tripsClosed(g *generation, n int64) bool {
	if b.s.Threshold > 0 && n >= int64(b.s.Threshold) {
		return true
	}
	if g.window == nil {
		return false
	}
	size := uint64(len(g.window))
	if g.next.Load() < size {
		return false
	}
	return float64(g.windowFailures.Load()) >= b.s.FailureRate*float64(size)
}

// Release reports that the call ended without an outcome that should
// count (it was canceled, or failed in a way that says nothing about the
// service). A half-open breaker gets the probe slot back.
func (p Permit) Release() {
	g := p.g
	if g == nil || g.state != HalfOpen {
		return
	}
	b := p.b
	b.mu.Lock()
	if b.cur.Load() == g && g.probes > 0 {
		g.probes--
	}
	b.mu.Unlock()
}

// push records an outcome (1 for a failure) in the window, overwriting
// the oldest. Concurrent pushes each take their own slot, and the failure
// total moves by exactly what each slot changed by.
func (g *generation) push(failed uint32) {
	i := (g.next.Add(1) - 1) % uint64(len(g.window))
	old := g.window[i].Swap(failed)
	if d := int64(failed) - int64(old); d != 0 {
		g.windowFailures.Add(d)
	}
}

func (g *generation) counts() Counts {
	c := Counts{
		ConsecutiveFailures: int(g.consecutive.Load()),
		Requests:            int(g.requests.Load()),
		Failures:            int(g.failures.Load()),
		Successes:           int(g.successes.Load()),
	}
	if g.window != nil {
		c.WindowFailures = int(g.windowFailures.Load())
		c.WindowSize = int(min(g.next.Load(), uint64(len(g.window))))
	}
	return c
}

// State returns the breaker's state. An open breaker whose ResetTimeout
// has passed turns half-open here, as it would in Allow, so the state
// read is never stale.
func (b *Breaker) State() State {
	g := b.cur.Load()
	if g.state != Open || time.Now().Before(g.readyAt) {
		return g.state
	}
	b.mu.Lock()
	g = b.halfOpenIfReady(time.Now())
	b.mu.Unlock()
	b.notify()
	return g.state
}

// Counts returns the outcomes seen in the current state.
func (b *Breaker) Counts() Counts { return b.cur.Load().counts() }

// OpenedAt returns when the breaker last opened, or the zero time if it
// is closed. A half-open breaker reports the opening it is probing out
// of.
func (b *Breaker) OpenedAt() time.Time { return b.cur.Load().openedAt }

// ReadyAt returns when an open breaker will turn half-open, or the zero
// time if it is not open.
func (b *Breaker) ReadyAt() time.Time { return b.cur.Load().readyAt }

// Reset closes the breaker and clears its counts, whatever its state: an
// operator's "Continue". Permits given before are ignored from then on.
func (b *Breaker) Reset() {
	b.mu.Lock()
	b.change(Closed, time.Now())
	b.mu.Unlock()
	b.notify()
}

// Trip opens the breaker now, as if it had just seen too many failures,
// for example because another worker sharing the same service saw them.
// An open breaker is left as it is, its timeout unchanged.
func (b *Breaker) Trip() {
	b.mu.Lock()
	if b.cur.Load().state != Open {
		b.change(Open, time.Now())
	}
	b.mu.Unlock()
	b.notify()
}

// TripUntil opens the breaker until the given instant, whatever its counts:
// a provider's cooldown ("no quota before 12:00:05") is a breaker that is
// open for a time the server chose, then lets its probes through. An open
// breaker whose timeout ends later is left as it is; one that ends earlier
// is extended.
func (b *Breaker) TripUntil(until time.Time) {
	b.mu.Lock()
	now := time.Now()
	g := b.cur.Load()
	if g.state != Open || until.After(g.readyAt) {
		openedAt := now
		if g.state == Open {
			openedAt = g.openedAt
		}
		ng := b.newGeneration(Open, openedAt, now)
		ng.readyAt = until // before it is published
		b.cur.Store(ng)
		if b.s.OnStateChange != nil {
			// An extension is a change too: whoever waits for the old
			// readyAt must look again.
			b.pending = append(b.pending, change{from: g.state, to: Open, counts: g.counts()})
		}
	}
	b.mu.Unlock()
	b.notify()
}
