package engine_test

import (
	"context"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/engine/enginetest"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/store/storetest"
	"github.com/tenaxhq/tenax/task"
)

// TestSharedScenariosLocally runs the per-item core's shared scenarios
// (enginetest) through the local engine, as enginetest.Local runs them for
// the other modes to compare their records with; batch waves and workers
// run the same table.
func TestSharedScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.Scenarios()
		enginetest.Check(t, "local", scenarios, enginetest.Local(t, scenarios))
	})
}

// TestRoutedScenariosLocally runs the routed scenarios, one per fallback
// kind, through the local engine over two routes: each record is b's, a
// in its tries with the fallback that moved the item.
func TestRoutedScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.RoutedScenarios()
		enginetest.Check(t, "local routed", scenarios, enginetest.LocalRouted(t, scenarios))
	})
}

// estimating is a task that estimates each item's tokens (engine.Estimator,
// without task.Preparer), as a shell or HTTP task with a token count may.
type estimating struct {
	task.Task
	tokens int
}

func (e estimating) EstimateTokens(task.Item) int { return e.tokens }

// TestARunWithoutRoutesWritesTheRecordsOfOneNamedRoute runs the shared
// scenarios once without routes and once over one named route calling the
// same task: a run without routes is a run over one implicit route, by the
// same path, so the run ends alike and every record is the same, whole,
// but for the route's name, which the implicit route never writes. With
// two paths, a named route never asked its task for an estimate: under a
// token budget the estimate exceeds, the run without routes stopped before
// its first call and the routed one spent on every item.
func TestARunWithoutRoutesWritesTheRecordsOfOneNamedRoute(t *testing.T) {
	for _, tc := range []struct {
		name   string
		task   func(*enginetest.Script) task.Task
		budget engine.Budget
	}{
		{name: "a task", task: func(s *enginetest.Script) task.Task { return s }},
		{name: "a task that estimates its tokens past the token budget",
			task:   func(s *enginetest.Script) task.Task { return estimating{Task: s, tokens: 5000} },
			budget: engine.Budget{MaxTokens: 1000}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				scenarios := enginetest.Scenarios()
				sumA, unrouted := runScenarios(t, scenarios, tc.budget, tc.task, "")
				sumB, routed := runScenarios(t, scenarios, tc.budget, tc.task, "only")
				if sumA.Stop != sumB.Stop || sumA.Done != sumB.Done || sumA.Failed != sumB.Failed {
					t.Errorf("without routes the run stopped %v with %d done, %d failed; over one named route %v with %d done, %d failed",
						sumA.Stop, sumA.Done, sumA.Failed, sumB.Stop, sumB.Done, sumB.Failed)
				}
				if len(unrouted) != len(routed) {
					t.Errorf("without routes %d records, over one named route %d", len(unrouted), len(routed))
				}
				for idx, want := range unrouted {
					if want.Route != "" || want.Tries != nil {
						t.Errorf("without routes: item %d's record names route %q, tries %v: the implicit route is never named", idx, want.Route, want.Tries)
					}
					got, ok := routed[idx]
					if !ok {
						t.Errorf("item %d: a record without routes, none over one named route", idx)
						continue
					}
					if got.Route != "only" {
						t.Errorf("item %d's record over the named route names route %q, want %q", idx, got.Route, "only")
					}
					got.Route = ""
					if msg := storetest.DiffRecord(storetest.Untimed(got), storetest.Untimed(want)); msg != "" {
						t.Errorf("%s: its record over one named route differs from its record without routes: %s", scenarios[idx].Name, msg)
					}
				}
			})
		})
	}
}

// runScenarios runs the scenarios' items as enginetest.Local does, over one
// route named route ("" for none), with the task tk makes of their script
// and budget b, and returns the summary and the records by idx.
func runScenarios(t *testing.T, scenarios []enginetest.Scenario, b engine.Budget, tk func(*enginetest.Script) task.Task, route string) (engine.Summary, map[int]store.Record) {
	t.Helper()
	var st memory.Store
	j, err := st.Create(context.Background(), store.Manifest{ID: "j", Created: time.Now(), Items: len(scenarios), State: store.StateRunning})
	if err != nil {
		t.Fatal(err)
	}
	call := tk(&enginetest.Script{Scenarios: scenarios})
	cfg := engine.Config{
		Concurrency: 4, Retry: enginetest.Policy(), Heal: enginetest.Budget(), Validator: enginetest.Validator{}, Budget: b,
		// The breakers are not what the scenarios are about: the run's
		// counts no class, the route's (which counts calls) never opens.
		BreakerCount: []classify.Class{}, Breaker: breaker.Settings{Threshold: -1},
	}
	if route != "" {
		cfg.Routes = []engine.Route{{Name: route, Task: call}}
	}
	items := enginetest.Items(scenarios)
	src := engine.SourceFunc(func() (task.Item, error) {
		if len(items) == 0 {
			return task.Item{}, io.EOF
		}
		it := items[0]
		items = items[1:]
		return it, nil
	})
	sum, err := engine.New(cfg, call, j).Run(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[int]store.Record{}
	if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	return sum, recs
}
