package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/batch"
	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/engine/enginetest"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/llm"
)

// routedWorld is a world whose job has two routes: a, on a mock whose
// every batch request errors 500, and b, on the world's own mock.
func routedWorld(t *testing.T, n int) (*world, *mock.Server) {
	t.Helper()
	w := newWorld(t, llm.ProviderOpenAI, n, mock.Config{Seed: 3, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
	down := mock.New(mock.Config{Seed: 3, Faults: mock.Faults{Server: 1}, Batch: mock.BatchConfig{ProcessingTime: time.Hour}})
	return w, down
}

// routes returns the routes a (down) and b (the world's).
func (w *world) routes(down *mock.Server) []batch.Route {
	lc := llm.Config{Provider: llm.ProviderOpenAI, Model: mock.ModelJSON, Prompt: "{{.word}}", Output: llm.OutputJSON, MaxTokens: 200,
		HTTPClient: down.Client(), APIKey: "k", BaseURL: "http://down.invalid/v1/"}
	ta, err := llm.New(lc)
	if err != nil {
		w.t.Fatal(err)
	}
	return []batch.Route{
		{Route: engine.Route{Name: "a", Provider: "mock", Model: mock.ModelJSON, Tier: 0}, Codec: ta.Batch(),
			Client: batch.NewOpenAI(llm.ProviderOpenAI, lc.BaseURL, "k", down.Client(), batch.Limits{MaxRequests: 700})},
		{Route: engine.Route{Name: "b", Provider: "mock", Model: mock.ModelJSON, Tier: 1}, Codec: w.task.Batch(), Client: w.client},
	}
}

// TestWavesMoveOffARouteWhoseBatchesFail: every request of route a's
// batch errors 500. a's breaker opens after that one wave without asking
// the operator, and every item succeeds in b's batch. With
// fallbacks.outage the records name a's error in their tries; without
// it, the open breaker alone moves them, and their tries stay empty.
func TestWavesMoveOffARouteWhoseBatchesFail(t *testing.T) {
	for _, fallback := range []bool{true, false} {
		name := map[bool]string{true: "fallbacks.outage", false: "no fallback"}[fallback]
		t.Run(name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w, down := routedWorld(t, 60)
				defer w.close()
				asked := &answering{answers: []engine.TripDecision{engine.TripAbortRun}}
				sum, err := w.runner(0, func(c *batch.Config) {
					c.Routes, c.Fallbacks = w.routes(down), engine.Fallbacks{Outage: fallback}
					c.OnTrip, c.Operator, c.TripMinimum = engine.TripPrompt, asked, 5
				}).Run(context.Background(), w.input())
				if err != nil {
					t.Fatal(err)
				}
				if sum.Stop != engine.StopNone || len(asked.reports) != 0 {
					t.Fatalf("stop %v (%s), operator asked %d times; want no trip: b can serve", sum.Stop, sum.StopDetail, len(asked.reports))
				}
				recs := w.records()
				if len(recs) != 60 {
					t.Fatalf("%d records, want 60", len(recs))
				}
				for idx, r := range recs {
					if r.Failed() || r.Route != "b" || r.Model != mock.ModelJSON {
						t.Fatalf("item %d: route %q model %q error %q; want success on b", idx, r.Route, r.Model, r.Error)
					}
					switch {
					case fallback && (len(r.Tries) != 1 || r.Tries[0].Route != "a" || !strings.Contains(r.Tries[0].Error, "500") || r.Tries[0].Class != classify.Retryable):
						t.Errorf("item %d: tries %+v; want a's 500, retryable", idx, r.Tries)
					case !fallback && len(r.Tries) != 0:
						t.Errorf("item %d: tries %+v; without fallbacks.outage nothing is added to them", idx, r.Tries)
					}
				}
				if a, b := down.BatchStats(), w.srv.BatchStats(); a.Submissions != 1 || a.Requests != 60 || b.Submissions != 1 || b.Requests != 60 {
					t.Errorf("route a got %d batches (%d requests), b %d (%d); want one batch of the 60 items on each", a.Submissions, a.Requests, b.Submissions, b.Requests)
				}
				if len(sum.Routes) != 2 || sum.Routes[0].Breaker != breaker.Open || sum.Routes[1].Succeeded != 60 || sum.Routes[0].Calls != 60 {
					t.Errorf("route stats %+v; want a open after 60 requests and b with the 60 records", sum.Routes)
				}
			})
		})
	}
}

// refusing is a route whose batch API refuses to create batches.
type refusing struct{ batch.Client }

func (refusing) Submit(context.Context, string, []batch.Request) (string, error) {
	return "", &batch.OpError{Op: "create", Status: 401, Code: "invalid_api_key", Err: errInvalidKey}
}

var errInvalidKey = &llm.Error{Provider: "openai", Status: 401, Type: "invalid_request_error", Code: "invalid_api_key", Message: "Incorrect API key provided"}

// TestARouteThatRefusesToCreateTheBatchSendsItsItemsToTheNext: route a
// answers 401 to the batch create; its breaker opens and the chunk goes
// to b's batch in the same wave, the create's error in the tries.
func TestARouteThatRefusesToCreateTheBatchSendsItsItemsToTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, down := routedWorld(t, 30)
		defer w.close()
		routes := w.routes(down)
		routes[0].Client = refusing{routes[0].Client}
		sum, err := w.runner(0, func(c *batch.Config) { c.Routes, c.Fallbacks = routes, engine.Fallbacks{Outage: true} }).Run(context.Background(), w.input())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Waves != 1 || sum.Succeeded != 30 {
			t.Fatalf("%d waves, %d succeeded; want the 30 items in one wave, on b", sum.Waves, sum.Succeeded)
		}
		for idx, r := range w.records() {
			if r.Route != "b" || len(r.Tries) != 1 || r.Tries[0].Route != "a" || !strings.Contains(r.Tries[0].Error, "submitting batch") {
				t.Errorf("item %d: route %q, tries %+v; want b, after a's refused create", idx, r.Route, r.Tries)
			}
		}
	})
}

// TestRoutedResumePollsEachBatchOnItsOwnRoute: killed while wave 2
// polls b's batch, a resume polls that batch at b (where its id means
// something; a's mock numbers its batches from 1 too) and submits
// nothing to either route.
func TestRoutedResumePollsEachBatchOnItsOwnRoute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, down := routedWorld(t, 40)
		ctx, crash := context.WithCancel(context.Background())
		sum, err := w.runner(0, func(c *batch.Config) {
			c.Routes, c.Fallbacks = w.routes(down), engine.Fallbacks{Outage: true}
			c.OnProgress = func(p batch.Progress) {
				if p.Wave == 2 {
					crash()
				}
			}
		}).Run(ctx, w.input())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Stop != engine.StopSignal || len(w.records()) != 0 {
			t.Fatalf("the killed run stopped with %v and %d records; want a stop while wave 2 polls, with none", sum.Stop, len(w.records()))
		}
		a, b := down.BatchStats(), w.srv.BatchStats()
		w.close()

		w.open(true)
		defer w.close()
		sum, err = w.runner(0, func(c *batch.Config) { c.Routes, c.Fallbacks = w.routes(down), engine.Fallbacks{Outage: true} }).Run(context.Background(), w.input())
		if err != nil {
			t.Fatal(err)
		}
		if a2, b2 := down.BatchStats(), w.srv.BatchStats(); a2.Submissions != a.Submissions || b2.Submissions != b.Submissions || sum.Repolled != 1 {
			t.Errorf("the resume submitted %d batches to a and %d to b, re-polled %d; want none submitted and b's one re-polled",
				a2.Submissions-a.Submissions, b2.Submissions-b.Submissions, sum.Repolled)
		}
		recs := w.records()
		for idx := range 40 {
			if r := recs[idx]; r.Failed() || r.Route != "b" || len(r.Tries) != 1 || r.Tries[0].Route != "a" {
				t.Errorf("item %d after the resume: route %q, tries %+v, error %q; want success on b after a", idx, r.Route, r.Tries, r.Error)
			}
		}
	})
}

// TestItemsARouteRefusedCountOnceAgainstTheEnqueuedTokenCap: the items of
// a batch whose route refused to create it were counted against
// max_enqueued_tokens twice, once for the batch that never entered the
// provider's queue and once for the next route's, so that a wave that
// fitted under the cap deferred every one of them to the next wave.
func TestItemsARouteRefusedCountOnceAgainstTheEnqueuedTokenCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w, down := routedWorld(t, 30)
		defer w.close()
		routes := w.routes(down)
		routes[0].Client = refusing{routes[0].Client}
		est := w.task.EstimateTokens(task.Item{Idx: 29, Fields: map[string]any{"word": "w29"}})
		sum, err := w.runner(0, func(c *batch.Config) {
			c.Routes, c.Fallbacks = routes, engine.Fallbacks{Outage: true}
			c.MaxEnqueuedTokens = 31 * est
		}).Run(context.Background(), w.input())
		if err != nil {
			t.Fatal(err)
		}
		if sum.Waves != 1 || sum.Deferred != 0 || sum.Succeeded != 30 {
			t.Errorf("%d waves, %d items deferred, %d succeeded; want the 30 items, which fit under the cap, in b's batch of wave 1", sum.Waves, sum.Deferred, sum.Succeeded)
		}
	})
}

// TestRetriesSpentInTheWaveThatLeavesNoRouteAwaitTheOperator: item 0,
// having left a for b, spent its retries on b in the wave where a's
// breaker opened and b's requests tripped the run's breaker: no route
// could serve. It was recorded failed, while the items b's trip held
// waited for the operator. Now it awaits the decision too (the engine's
// rule: a streak spent while every route it fits is open is the run
// breaker's to decide), and goes on after Continue.
func TestRetriesSpentInTheWaveThatLeavesNoRouteAwaitTheOperator(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		outage := func(msg string) batch.Answer {
			return batch.Answer{Err: classify.WithClass(errors.New("503 "+msg), classify.Retryable, "test")}
		}
		body := func(a enginetest.Answer) batch.Answer {
			b, _ := json.Marshal(scriptBody{Answer: a, Call: 1})
			return batch.Answer{Body: b}
		}
		names := []string{"amber", "birch", "cedar", "dune"}
		// Each item's answer by route and wave. Wave 1 sends items 0, 2
		// and 3 to b, each failing its own way; item 1 stays on a (a
		// re-ask, then a 429). In wave 2 item 0 fails on b too, items 2
		// and 3 re-ask.
		// In wave 3 every request of a route fails alike but item 0's,
		// whose third failure spends its retries.
		answer := func(route string) func(batch.Request) batch.Answer {
			return func(q batch.Request) batch.Answer {
				idx, wave, err := batch.ParseCustomID(q.CustomID)
				if err != nil {
					panic(err)
				}
				switch {
				case wave == 1 && idx != 1, wave <= 3 && idx == 0:
					return outage("replica " + names[idx] + " is down on " + route)
				case wave == 2 && idx == 1:
					// A 429 moves nothing: item 1 stays on a.
					return batch.Answer{Err: &llm.Error{Provider: "openai", Status: 429, Type: "requests", Message: "slow down"}}
				case wave <= 2:
					return body(enginetest.Invalid)
				case wave == 3:
					return outage("route " + route + " is down")
				}
				return body(enginetest.Valid)
			}
		}
		a, b := &fakeClient{answer: answer("a")}, &fakeClient{answer: answer("b")}
		var st memory.Store
		j, err := st.Create(context.Background(), store.Manifest{ID: "outage", Created: time.Now(), Items: 4, State: store.StateRunning})
		if err != nil {
			t.Fatal(err)
		}
		ledger, err := batch.OpenFileLedger(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer ledger.Close()
		asked := &answering{answers: []engine.TripDecision{engine.TripContinue}}
		cfg := batch.Config{
			Routes:    []batch.Route{{Route: engine.Route{Name: "a"}, Client: a, Codec: scriptCodec{}}, {Route: engine.Route{Name: "b", Tier: 1}, Client: b, Codec: scriptCodec{}}},
			Fallbacks: engine.Fallbacks{Outage: true}, Ledger: ledger, Retry: enginetest.Policy(), Ops: enginetest.Policy(), // 3 attempts
			Validator: enginetest.Validator{}, Heal: enginetest.Budget(), PollMin: time.Minute, Total: 4,
			TripMinimum: 1, OnTrip: engine.TripPrompt, Operator: asked,
		}
		in := batch.Input{Open: func() (batch.Source, error) { return &sliceSource{n: 4}, nil }, Want: func(int) bool { return true }, Job: j, JobID: j.Manifest().ID}
		sum, err := batch.New(cfg).Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		recs := map[int]store.Record{}
		if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
			t.Fatal(err)
		}
		if r := recs[0]; sum.Succeeded != 4 || r.Failed() || r.Route != "b" {
			t.Fatalf("%d succeeded; item 0: route %q, error %q, tries %+v; want every item to succeed after Continue, item 0 on b", sum.Succeeded, r.Route, r.Error, r.Tries)
		}
		if tries := recs[0].Tries; len(tries) != 3 || tries[2].Route != "b" || !strings.Contains(tries[2].Error, "amber is down on b") {
			t.Errorf("item 0's tries %+v; want a, b, then b's failure of wave 3", tries)
		}
		if len(asked.reports) != 1 || !strings.Contains(asked.reports[0].Reason, "no other route can serve") {
			t.Errorf("the operator was asked %d times (%+v); want once, saying no other route can serve", len(asked.reports), asked.reports)
		}
		if sum.Waves != 4 {
			t.Errorf("%d waves; want 4: the outage in wave 3, every item on b in wave 4", sum.Waves)
		}
	})
}

// kindError is a provider's refusal that calls for a fallback of its kind
// (engine.FallbackKinder).
type kindError string

func (k kindError) Error() string        { return "400 " + string(k) }
func (k kindError) FallbackKind() string { return string(k) }

// TestFallbacksThatWantAnotherKindOfRouteMoveToItsNextWave: route a
// (tier 0) answers every item with a failure whose fallback wants another
// kind of route — past its context window, refused by its content filter,
// or invalid until the heal budget is spent (escalation). The waves choose
// routes by the engine's own rule (engine.Routes), so the item's next wave
// sends it to b (another provider, a larger window, a higher tier), where
// it succeeds: its tries name a's error and the fallback, its attempts
// count every wave, and no online call is made. Batch mode once refused
// these fallbacks as a spec error, then sent such items online.
func TestFallbacksThatWantAnotherKindOfRouteMoveToItsNextWave(t *testing.T) {
	refusal := func(kind string) func(task.Item, int) (task.Result, error) {
		return func(task.Item, int) (task.Result, error) {
			return task.Result{}, classify.WithClass(kindError(kind), classify.Item, "test")
		}
	}
	invalid := func(_ task.Item, call int) (task.Result, error) {
		return enginetest.Invalid.Result(call)
	}
	for _, tt := range []struct {
		kind      string
		fallbacks engine.Fallbacks
		onA       func(task.Item, int) (task.Result, error)
		waves     int // waves on a before the item moves to b
	}{
		{engine.FallbackContextWindow, engine.Fallbacks{ContextWindow: true}, refusal(engine.FallbackContextWindow), 1},
		{engine.FallbackContentFilter, engine.Fallbacks{ContentFilter: true}, refusal(engine.FallbackContentFilter), 1},
		{engine.FallbackEscalate, engine.Fallbacks{Escalate: true}, invalid, 3},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				const n = 4
				calls := map[int]int{}
				waveAnswer := func(q batch.Request) batch.Answer {
					idx, _, _ := batch.ParseCustomID(q.CustomID)
					calls[idx]++
					if _, err := tt.onA(task.Item{Idx: idx}, calls[idx]); err != nil {
						return batch.Answer{Err: err}
					}
					body, _ := json.Marshal(scriptBody{Answer: enginetest.Invalid, Call: calls[idx]})
					return batch.Answer{Body: body}
				}
				a := &fakeClient{answer: waveAnswer}
				b := &fakeClient{answer: func(batch.Request) batch.Answer {
					body, _ := json.Marshal(scriptBody{Answer: enginetest.Valid, Call: 1})
					return batch.Answer{Body: body}
				}}
				var st memory.Store
				j, err := st.Create(context.Background(), store.Manifest{ID: "kinds", Created: time.Now(), Items: n, State: store.StateRunning})
				if err != nil {
					t.Fatal(err)
				}
				ledger, err := batch.OpenFileLedger(t.TempDir())
				if err != nil {
					t.Fatal(err)
				}
				defer ledger.Close()
				cfg := batch.Config{
					Routes: []batch.Route{
						{Route: engine.Route{Name: "a", Provider: "p1", Model: "small", ContextWindow: 1000}, Client: a, Codec: scriptCodec{}},
						{Route: engine.Route{Name: "b", Provider: "p2", Model: "large", ContextWindow: 200000, Tier: 1}, Client: b, Codec: scriptCodec{}},
					},
					Fallbacks: tt.fallbacks, Ledger: ledger, Retry: enginetest.Policy(), Ops: enginetest.Policy(),
					Validator: enginetest.Validator{}, Heal: enginetest.Budget(), PollMin: time.Minute, Total: n, TripShare: 2,
				}
				in := batch.Input{Open: func() (batch.Source, error) { return &sliceSource{n: n}, nil }, Want: func(int) bool { return true }, Job: j, JobID: j.Manifest().ID}
				sum, err := batch.New(cfg).Run(context.Background(), in)
				if err != nil {
					t.Fatal(err)
				}
				recs := map[int]store.Record{}
				if err := j.Scan(context.Background(), func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
					t.Fatal(err)
				}
				if sum.Succeeded != n || len(recs) != n {
					t.Fatalf("%d succeeded, %d records; want all %d on b", sum.Succeeded, len(recs), n)
				}
				for idx, r := range recs {
					if r.Failed() || r.Route != "b" || r.Model != "large" {
						t.Errorf("item %d: route %q model %q error %q; want success on b", idx, r.Route, r.Model, r.Error)
					}
					if len(r.Tries) != 1 || r.Tries[0].Route != "a" || r.Tries[0].Fallback != tt.kind {
						t.Errorf("item %d: tries %+v; want a's failure, once, moved by %s", idx, r.Tries, tt.kind)
					}
					if r.Attempts != tt.waves+1 {
						t.Errorf("item %d: %d attempts; want %d waves on a and 1 on b", idx, r.Attempts, tt.waves+1)
					}
				}
				if sum.Waves != tt.waves+1 {
					t.Errorf("%d waves; want %d on a and one on b", sum.Waves, tt.waves+1)
				}
			})
		})
	}
}
