package engine_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// memRoute is one route's shared state in memory, as a database would
// keep it for the engines of a job: what one engine shares, every engine
// follows at once.
type memRoute struct {
	mu      sync.Mutex
	st      engine.RouteState
	trips   int
	changed chan struct{}
}

func (m *memRoute) set(f func(st *engine.RouteState)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(&m.st)
	close(m.changed)
	m.changed = make(chan struct{})
}

func (m *memRoute) Wait(context.Context, int) error { return nil }

func (m *memRoute) Opened(until time.Time) {
	m.set(func(st *engine.RouteState) {
		if !st.Open {
			m.trips++
		}
		st.Open, st.OpenUntil = true, until
	})
}

func (m *memRoute) Closed() {
	m.set(func(st *engine.RouteState) { st.Open, st.OpenUntil = false, time.Time{} })
}

func (m *memRoute) Cooldown(until time.Time) {
	m.set(func(st *engine.RouteState) { st.Cooldown = until })
}

func (m *memRoute) Follow() (engine.RouteState, <-chan struct{}) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st, m.changed
}

func (m *memRoute) state() (engine.RouteState, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.st, m.trips
}

// memRoutes is the shared state of a job's routes, by name.
type memRoutes map[string]*memRoute

func newMemRoutes(names ...string) memRoutes {
	m := memRoutes{}
	for _, n := range names {
		m[n] = &memRoute{changed: make(chan struct{})}
	}
	return m
}

func (m memRoutes) route(name string) engine.SharedRoute { return m[name] }

// sharedRouteCfg is a job over routes a and b whose route state is
// shared through board.
func sharedRouteCfg(board memRoutes, a, b task.Task) engine.Config {
	return engine.Config{Concurrency: 4, Retry: fastRetry, OnTrip: engine.TripAbort,
		Breaker:     breaker.Settings{Threshold: 3, ResetTimeout: time.Hour},
		Routes:      []engine.Route{{Name: "a", Task: a}, {Name: "b", Task: b}},
		Fallbacks:   engine.Fallbacks{Outage: true},
		SharedRoute: board.route}
}

// TestARouteOpenedByOneEngineIsOpenForTheNext: an engine that shares its
// routes' state with another sends no call to a route the other found
// down, and every item goes to b without a trip of the run's breaker.
func TestARouteOpenedByOneEngineIsOpenForTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		board := newMemRoutes("a", "b")
		down := func() *routeTask {
			return &routeTask{fn: always(func() (task.Result, error) { return task.Result{}, err503 })}
		}
		a1, a2 := down(), down()
		// One failure opens a on the first engine: with three, a run in
		// CI under -race served its 20 items without a opening (not
		// reproduced in 500 runs here); what the test checks is the
		// second engine, which needs a opened by the first.
		cfg1 := sharedRouteCfg(board, a1, &routeTask{fn: answerB})
		cfg1.Breaker.Threshold = 1
		sum1, _ := routeRun(t, cfg1, 20)
		if st, trips := board["a"].state(); !st.Open || trips != 1 || sum1.Succeeded != 20 {
			t.Fatalf("after the first engine: a shared as %+v, %d trips, %d succeeded; want open once, 20 succeeded", st, trips, sum1.Succeeded)
		}
		sum2, recs := routeRun(t, sharedRouteCfg(board, a2, &routeTask{fn: answerB}), 20)
		if a2.called() != 0 {
			t.Errorf("the second engine called a %d times, want 0: the first had opened it for both", a2.called())
		}
		if sum2.Succeeded != 20 || sum2.Trips != 0 || sum2.Routes[0].Breaker != breaker.Open {
			t.Errorf("second engine: %d succeeded, %d trips, a's breaker %v; want 20, 0, open", sum2.Succeeded, sum2.Trips, sum2.Routes[0].Breaker)
		}
		for idx, r := range recs {
			if r.Route != "b" || len(r.Tries) != 0 {
				t.Errorf("item %d: route %q, tries %+v; want b and no try of a", idx, r.Route, r.Tries)
			}
		}
		if _, trips := board["a"].state(); trips != 1 {
			t.Errorf("a opened %d times for the job, want once", trips)
		}
	})
}

// TestARouteClosedElsewhereTakesTrafficAgain: a route another engine
// closed (its probe was answered) is closed here too, at once, not an
// hour later when this engine's own reset timeout would end.
func TestARouteClosedElsewhereTakesTrafficAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		board := newMemRoutes("a", "b")
		board["a"].Opened(time.Now().Add(time.Hour))
		a := &routeTask{fn: always(func() (task.Result, error) { return ok("from a") })}
		b := &routeTask{fn: answerB}
		job := newMemJob()
		e := engine.New(sharedRouteCfg(board, a, b), task.Func(func(context.Context, task.Item) (task.Result, error) { return ok("wrong") }), job)
		if st := e.Stats().Routes[0].Breaker; st != breaker.Open {
			t.Fatalf("a's breaker %v before the run, want open as the job shares it", st)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = e.Run(ctx, nil)
		}()
		synctest.Wait()
		board["a"].Closed()
		synctest.Wait()
		if st := e.Stats().Routes[0].Breaker; st != breaker.Closed {
			t.Errorf("a's breaker %v after another engine closed it, want closed", st)
		}
		for i := range 20 {
			if _, err := e.Do(ctx, task.Item{Idx: i}); err != nil {
				t.Fatalf("Do: %v", err)
			}
		}
		if a.called() == 0 {
			t.Errorf("a took no call after it closed elsewhere (b took %d)", b.called())
		}
		cancel()
		<-done
	})
}

// TestACooldownSharedElsewhereHoldsTheRoute: a 429's cooldown another
// engine met on a keeps this engine's calls off a until it ends.
func TestACooldownSharedElsewhereHoldsTheRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		board := newMemRoutes("a", "b")
		board["a"].Cooldown(time.Now().Add(time.Minute))
		a := &routeTask{fn: always(func() (task.Result, error) { return ok("from a") })}
		b := &routeTask{fn: answerB}
		sum, _ := routeRun(t, sharedRouteCfg(board, a, b), 20)
		if a.called() != 0 || sum.Succeeded != 20 {
			t.Errorf("a called %d times during a cooldown met elsewhere, %d succeeded; want 0 calls to a, 20 on b", a.called(), sum.Succeeded)
		}
	})
}
