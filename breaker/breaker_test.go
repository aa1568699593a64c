package breaker

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fail makes n calls that fail; succeed makes n that succeed. Both fail
// the test if a call is turned away.
func fail(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for i := range n {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("failing call %d of %d: Allow = %v, want a permit", i+1, n, err)
		}
		p.Failure()
	}
}

func succeed(t *testing.T, b *Breaker, n int) {
	t.Helper()
	for i := range n {
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("succeeding call %d of %d: Allow = %v, want a permit", i+1, n, err)
		}
		p.Success()
	}
}

func TestStateNames(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open"} {
		text, err := s.MarshalText()
		if err != nil || string(text) != want || s.String() != want {
			t.Errorf("state %d: MarshalText = %q, %v; String = %q; want %q", s, text, err, s.String(), want)
		}
		var back State = 9
		if err := back.UnmarshalText(text); err != nil || back != s {
			t.Errorf("UnmarshalText(%q) = %v, %v; want %v", text, back, err, s)
		}
	}
	var s State
	if err := s.UnmarshalText([]byte("halfopen")); err == nil {
		t.Error(`UnmarshalText("halfopen") succeeded, want an error`)
	}
}

func TestOpensAfterThresholdConsecutiveFailures(t *testing.T) {
	tests := []struct {
		threshold, opensAt int
	}{{0, DefaultThreshold}, {1, 1}, {3, 3}}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.threshold), func(t *testing.T) {
			b := New(Settings{Threshold: tt.threshold})
			fail(t, b, tt.opensAt-1)
			if s := b.State(); s != Closed {
				t.Fatalf("after %d failures state = %v, want closed", tt.opensAt-1, s)
			}
			fail(t, b, 1)
			if s := b.State(); s != Open {
				t.Fatalf("after %d failures state = %v, want open", tt.opensAt, s)
			}
			if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
				t.Errorf("Allow on an open breaker = %v, want ErrOpen", err)
			}
		})
	}
}

func TestSuccessResetsConsecutiveFailures(t *testing.T) {
	b := New(Settings{Threshold: 5})
	fail(t, b, 4)
	succeed(t, b, 1)
	fail(t, b, 4)
	if s := b.State(); s != Closed {
		t.Fatalf("4 failures, a success, 4 failures: state = %v, want closed", s)
	}
	c := b.Counts()
	want := Counts{ConsecutiveFailures: 4, Requests: 9, Failures: 8, Successes: 1}
	if c != want {
		t.Errorf("Counts = %+v, want %+v", c, want)
	}
}

func TestFailureRateWindowOpens(t *testing.T) {
	tests := []struct {
		name     string
		rate     float64
		window   int
		outcomes string // F failure, S success, in order
		opensAt  int    // 1-based outcome that opens the breaker, 0 = never
	}{
		{"half of a full window", 0.5, 10, "FSFSFSFSFS" + "F", 11},
		{"not judged before the window is full", 0.3, 10, "FFFSSSSSS", 0},
		{"judged on the failure that fills it", 0.3, 10, "FFSSSSSSSF", 10},
		{"below the rate", 0.5, 4, "FSSSFSSSFSSS", 0},
		{"old failures slide out", 0.5, 4, "FFSSSSFSF", 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := New(Settings{Threshold: -1, FailureRate: tt.rate, Window: tt.window})
			for i, o := range tt.outcomes {
				p, err := b.Allow()
				if err != nil {
					if i+1 <= tt.opensAt || tt.opensAt == 0 {
						t.Fatalf("outcome %d: Allow = %v, want a permit (opens at %d)", i+1, err, tt.opensAt)
					}
					return
				}
				if o == 'F' {
					p.Failure()
				} else {
					p.Success()
				}
				opened := b.State() == Open
				if want := i+1 >= tt.opensAt && tt.opensAt > 0; opened != want {
					t.Fatalf("after outcome %d of %q: open = %v, want %v (counts before: %+v)", i+1, tt.outcomes, opened, want, b.Counts())
				}
				if opened {
					return
				}
			}
			if tt.opensAt != 0 {
				t.Errorf("breaker never opened, want at outcome %d", tt.opensAt)
			}
			c := b.Counts()
			if c.WindowSize != min(len(tt.outcomes), tt.window) {
				t.Errorf("WindowSize = %d, want %d", c.WindowSize, min(len(tt.outcomes), tt.window))
			}
		})
	}
}

func TestWindowCounts(t *testing.T) {
	b := New(Settings{Threshold: -1, FailureRate: 0.9, Window: 4})
	for _, o := range "FFSFSS" { // the window keeps the last four: S F S S
		p, _ := b.Allow()
		if o == 'F' {
			p.Failure()
		} else {
			p.Success()
		}
	}
	c := b.Counts()
	if c.WindowSize != 4 || c.WindowFailures != 1 {
		t.Errorf("window = %d failures of %d, want 1 of 4 (the last four outcomes S F S S)", c.WindowFailures, c.WindowSize)
	}
}

func TestOpenRejectsUntilResetTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Threshold: 1, ResetTimeout: 10 * time.Second})
		fail(t, b, 1)
		opened := time.Now()
		if !b.OpenedAt().Equal(opened) || !b.ReadyAt().Equal(opened.Add(10*time.Second)) {
			t.Errorf("OpenedAt, ReadyAt = %v, %v; want %v and 10s later", b.OpenedAt(), b.ReadyAt(), opened)
		}
		time.Sleep(10*time.Second - time.Nanosecond)
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Fatalf("Allow just before ResetTimeout = %v, want ErrOpen", err)
		}
		time.Sleep(time.Nanosecond)
		if s := b.State(); s != HalfOpen {
			t.Errorf("State at ResetTimeout = %v, want half_open", s)
		}
		if !b.ReadyAt().IsZero() || !b.OpenedAt().Equal(opened) {
			t.Errorf("half-open ReadyAt, OpenedAt = %v, %v; want zero and the opening %v", b.ReadyAt(), b.OpenedAt(), opened)
		}
	})
}

func TestHalfOpenLetsExactlyProbesThrough(t *testing.T) {
	const probes, callers = 3, 10
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Threshold: 1, ResetTimeout: time.Minute, Probes: probes})
		fail(t, b, 1)
		time.Sleep(time.Minute)

		var (
			mu       sync.Mutex
			permits  []Permit
			rejected []error
			wg       sync.WaitGroup
		)
		for range callers {
			wg.Go(func() {
				p, err := b.Allow()
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					rejected = append(rejected, err)
					return
				}
				permits = append(permits, p)
			})
		}
		wg.Wait()
		if len(permits) != probes || len(rejected) != callers-probes {
			t.Fatalf("%d callers got %d permits and %d rejections, want %d and %d", callers, len(permits), len(rejected), probes, callers-probes)
		}
		for _, err := range rejected {
			if !errors.Is(err, ErrProbeLimit) || !errors.Is(err, ErrOpen) {
				t.Errorf("rejection = %v, want ErrProbeLimit, which is also ErrOpen", err)
			}
		}
		for i, p := range permits {
			p.Success()
			want := HalfOpen
			if i == probes-1 {
				want = Closed
			}
			if s := b.State(); s != want {
				t.Errorf("after %d probe successes state = %v, want %v", i+1, s, want)
			}
			if i < probes-1 {
				if _, err := b.Allow(); !errors.Is(err, ErrProbeLimit) {
					t.Errorf("a succeeded probe freed its slot: Allow = %v, want ErrProbeLimit", err)
				}
			}
		}
	})
}

func TestProbeFailureReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Threshold: 1, ResetTimeout: time.Minute, Probes: 2})
		fail(t, b, 1)
		time.Sleep(time.Minute)
		p1, err1 := b.Allow()
		p2, err2 := b.Allow()
		if err1 != nil || err2 != nil {
			t.Fatalf("Allow when half-open = %v, %v; want two probes", err1, err2)
		}
		p1.Success()
		time.Sleep(5 * time.Second)
		p2.Failure()
		if s := b.State(); s != Open {
			t.Fatalf("after a probe failure state = %v, want open", s)
		}
		now := time.Now()
		if !b.OpenedAt().Equal(now) || !b.ReadyAt().Equal(now.Add(time.Minute)) {
			t.Errorf("OpenedAt, ReadyAt = %v, %v; want the timeout restarted at %v", b.OpenedAt(), b.ReadyAt(), now)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrOpen) {
			t.Errorf("Allow after re-opening = %v, want ErrOpen", err)
		}
	})
}

func TestReleaseFreesProbeSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Threshold: 1, ResetTimeout: time.Second})
		fail(t, b, 1)
		time.Sleep(time.Second)
		p, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow when half-open = %v", err)
		}
		if _, err := b.Allow(); !errors.Is(err, ErrProbeLimit) {
			t.Fatalf("second Allow = %v, want ErrProbeLimit", err)
		}
		p.Release()
		if s := b.State(); s != HalfOpen {
			t.Errorf("a released probe changed the state to %v", s)
		}
		p2, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow after Release = %v, want the freed probe slot", err)
		}
		p2.Success()
		if s := b.State(); s != Closed {
			t.Errorf("after the probe succeeded state = %v, want closed", s)
		}
	})
}

func TestStalePermitsAreIgnored(t *testing.T) {
	t.Run("closed permits from before a trip and reset", func(t *testing.T) {
		b := New(Settings{Threshold: 3})
		var stale []Permit
		for range 5 {
			p, _ := b.Allow()
			stale = append(stale, p)
		}
		fail(t, b, 3)
		b.Reset()
		for _, p := range stale {
			p.Failure()
		}
		if s, c := b.State(), b.Counts(); s != Closed || c != (Counts{}) {
			t.Errorf("stale failures after Reset: state %v, counts %+v; want closed and zero counts", s, c)
		}
		fail(t, b, 2)
		stale[0].Success() // must not end the new run of failures
		fail(t, b, 1)
		if s := b.State(); s != Open {
			t.Errorf("a stale success broke the run of failures: state %v, want open", s)
		}
	})
	t.Run("a probe from an earlier half-open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b := New(Settings{Threshold: 1, ResetTimeout: time.Second})
			fail(t, b, 1)
			time.Sleep(time.Second)
			old, err := b.Allow()
			if err != nil {
				t.Fatalf("probe Allow = %v", err)
			}
			b.Trip() // e.g. another worker saw the service fail
			time.Sleep(time.Second)
			if s := b.State(); s != HalfOpen {
				t.Fatalf("state = %v, want half_open again", s)
			}
			old.Success()
			old.Release()
			if s := b.State(); s != HalfOpen {
				t.Errorf("a stale probe's success changed the state to %v, want half_open", s)
			}
			if _, err := b.Allow(); err != nil {
				t.Errorf("Allow = %v, want the new half-open's probe slot still free", err)
			}
		})
	})
}

func TestTripAndReset(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{ResetTimeout: time.Minute})
		b.Trip()
		opened := b.OpenedAt()
		time.Sleep(10 * time.Second)
		b.Trip() // already open: the timeout is not pushed back
		if !b.OpenedAt().Equal(opened) || b.State() != Open {
			t.Errorf("second Trip moved OpenedAt to %v (was %v) or state to %v", b.OpenedAt(), opened, b.State())
		}
		b.Reset()
		if b.State() != Closed || !b.OpenedAt().IsZero() || b.Counts() != (Counts{}) {
			t.Errorf("after Reset: state %v, OpenedAt %v, counts %+v; want closed, zero, zero", b.State(), b.OpenedAt(), b.Counts())
		}
	})
}

type transition struct {
	from, to, seen State
	consecutive    int
}

func TestOnStateChangeSeesEveryTransitionInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var got []transition
		var b *Breaker
		b = New(Settings{
			Threshold:    2,
			ResetTimeout: time.Second,
			OnStateChange: func(from, to State, c Counts) {
				// gobreaker deadlocks here: it calls listeners under its lock.
				got = append(got, transition{from, to, b.State(), c.ConsecutiveFailures})
			},
		})
		fail(t, b, 2) // closed -> open
		time.Sleep(time.Second)
		p, _ := b.Allow() // open -> half_open
		p.Failure()       // half_open -> open
		time.Sleep(time.Second)
		if s := b.State(); s != HalfOpen { // open -> half_open, seen by State
			t.Fatalf("state = %v, want half_open", s)
		}
		succeed(t, b, 1) // half_open -> closed
		b.Trip()         // closed -> open
		b.Reset()        // open -> closed
		b.Reset()        // closed -> closed: no change, no call
		want := []transition{
			{Closed, Open, Open, 2},
			{Open, HalfOpen, HalfOpen, 0},
			{HalfOpen, Open, Open, 1},
			{Open, HalfOpen, HalfOpen, 0},
			{HalfOpen, Closed, Closed, 0},
			{Closed, Open, Open, 0},
			{Open, Closed, Closed, 0},
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("transitions {from to state-seen consecutive}:\n got %v\nwant %v", got, want)
		}
	})
}

func TestListenerMayChangeTheBreaker(t *testing.T) {
	var got []string
	var b *Breaker
	b = New(Settings{
		Threshold: 1,
		OnStateChange: func(from, to State, _ Counts) {
			got = append(got, from.String()+">"+to.String())
			if to == Open {
				b.Reset() // re-entrant: delivered after this call returns
			}
		},
	})
	fail(t, b, 1)
	if want := "[closed>open open>closed]"; fmt.Sprint(got) != want {
		t.Errorf("transitions = %v, want %v", got, want)
	}
	if s := b.State(); s != Closed {
		t.Errorf("state = %v, want closed after the listener's Reset", s)
	}
}

func TestPanickingListenerDoesNotSilenceLaterChanges(t *testing.T) {
	calls := 0
	b := New(Settings{Threshold: 1, OnStateChange: func(from, to State, _ Counts) {
		calls++
		if calls == 1 {
			panic("listener bug")
		}
	}})
	func() {
		defer func() {
			if r := recover(); r != "listener bug" {
				t.Errorf("recovered %v, want the listener's panic", r)
			}
		}()
		fail(t, b, 1)
	}()
	b.Reset()
	if calls != 2 {
		t.Errorf("listener called %d times, want 2: the panic must not stop later deliveries", calls)
	}
}

func TestConcurrentOutcomesAreAllCounted(t *testing.T) {
	const workers, calls = 8, 1000
	b := New(Settings{Threshold: -1, FailureRate: 0, Window: 16})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range calls {
				p, err := b.Allow()
				if err != nil {
					t.Errorf("Allow = %v on a breaker that cannot open", err)
					return
				}
				if (w+i)%3 == 0 {
					p.Failure()
				} else {
					p.Success()
				}
			}
		})
	}
	wg.Wait()
	c := b.Counts()
	if c.Requests != workers*calls || c.Successes+c.Failures != c.Requests {
		t.Errorf("Counts = %+v, want %d requests, all reported", c, workers*calls)
	}
}

func TestConcurrentWindowStaysConsistent(t *testing.T) {
	const workers, calls, window = 8, 1000, 32
	b := New(Settings{Threshold: -1, FailureRate: 2, Window: window}) // a rate that never trips
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range calls {
				p, _ := b.Allow()
				if i%2 == 0 {
					p.Failure()
				} else {
					p.Success()
				}
			}
		})
	}
	wg.Wait()
	g := b.cur.Load()
	inRing := 0
	for i := range g.window {
		inRing += int(g.window[i].Load())
	}
	if c := b.Counts(); c.WindowFailures != inRing || c.WindowSize != window {
		t.Errorf("window reports %d failures of %d, ring holds %d of %d", c.WindowFailures, c.WindowSize, inRing, window)
	}
}

func TestClosedAllowSuccessDoesNotAllocate(t *testing.T) {
	for _, s := range []Settings{{}, {FailureRate: 0.5, Window: 10}} {
		b := New(s)
		n := testing.AllocsPerRun(1000, func() {
			p, _ := b.Allow()
			p.Success()
		})
		if n != 0 {
			t.Errorf("Allow+Success with %+v allocated %v times, want 0", s, n)
		}
	}
}

func BenchmarkAllowSuccessClosed(b *testing.B) {
	br := New(Settings{})
	b.ReportAllocs()
	for b.Loop() {
		p, err := br.Allow()
		if err != nil {
			b.Fatal(err)
		}
		p.Success()
	}
}

func BenchmarkAllowSuccessClosedParallel(b *testing.B) {
	br := New(Settings{})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := br.Allow()
			if err != nil {
				b.Error(err)
				return
			}
			p.Success()
		}
	})
}

func TestPermitProbeOnlyWhenHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := New(Settings{Threshold: 1, ResetTimeout: time.Second, Probes: 1})
		p, err := b.Allow()
		if err != nil || p.Probe() {
			t.Fatalf("closed breaker: permit probe=%v err=%v, want an ordinary permit", p.Probe(), err)
		}
		p.Failure()
		time.Sleep(time.Second)
		p, err = b.Allow()
		if err != nil || !p.Probe() {
			t.Fatalf("half-open breaker: permit probe=%v err=%v, want a probe", p.Probe(), err)
		}
		p.Success()
		if p, _ := b.Allow(); p.Probe() {
			t.Fatal("closed again: the permit must not be a probe")
		}
	})
}
