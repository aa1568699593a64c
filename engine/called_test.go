package engine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// TestItemCalledReportsEachCallBeforeItsConsequence pins down the event a
// tracer draws attempts from: one ItemCalled per call, numbered, with the
// call's usage, class and next step, timed (queued ≤ started ≤ ended),
// and sent before the retry, re-ask or record it leads to.
func TestItemCalledReportsEachCallBeforeItsConsequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tk := &scriptTask{script: []func() (task.Result, error){
			func() (task.Result, error) { return task.Result{}, errRetryable },
			func() (task.Result, error) {
				time.Sleep(3 * time.Second) // the call takes fake time
				r, err := ok("wrong")
				r.Usage = task.Usage{InputTokens: 10, OutputTokens: 2}
				return r, err
			},
			func() (task.Result, error) {
				r, err := ok("valid")
				r.Usage, r.FinishReason = task.Usage{InputTokens: 12, OutputTokens: 3}, "stop"
				return r, err
			},
		}}
		var mu sync.Mutex
		var kinds []string
		var calls []engine.Event
		e := engine.New(engine.Config{Concurrency: 1, Retry: fastRetry, Validator: onlyValid, OnEvent: func(ev engine.Event) {
			mu.Lock()
			defer mu.Unlock()
			if ev.Kind != engine.CallEnded { // metrics' event, tested apart
				kinds = append(kinds, ev.Kind.String())
			}
			if ev.Kind == engine.ItemCalled {
				calls = append(calls, ev)
			}
		}}, tk, newMemJob())
		if _, err := e.Run(context.Background(), items(1)); err != nil {
			t.Fatal(err)
		}
		want := "item_started item_called item_retry item_called item_heal item_called item_finished"
		if got := strings.Join(kinds, " "); got != want {
			t.Fatalf("events %q, want %q: each call's ItemCalled comes before what it leads to", got, want)
		}
		type seen struct {
			n      int
			next   engine.Step
			class  classify.Class
			tokens int64
			finish string
			err    bool
		}
		wantCalls := []seen{
			{1, engine.StepRetry, classify.Retryable, 0, "", true},
			{2, engine.StepReask, classify.Invalid, 12, "", true},
			{3, engine.StepRecord, classify.Unknown, 15, "stop", false},
		}
		for i, ev := range calls {
			c := ev.Call
			got := seen{c.Number, c.Next, ev.Decision.Class, c.Usage.Total(), c.FinishReason, ev.Err != nil}
			if got != wantCalls[i] {
				t.Errorf("call %d reported %+v, want %+v", i+1, got, wantCalls[i])
			}
			if c.Queued.IsZero() || c.Started.Before(c.Queued) || c.Ended.Before(c.Started) {
				t.Errorf("call %d timed queued %v started %v ended %v: want queued ≤ started ≤ ended", i+1, c.Queued, c.Started, c.Ended)
			}
		}
		if d := calls[1].Call.Ended.Sub(calls[1].Call.Started); d != 3*time.Second {
			t.Errorf("the second call lasted %v, want the 3s its task took", d)
		}
		if fmt.Sprint(calls[0].Item.Idx) != "0" {
			t.Errorf("call event for item %d, want 0", calls[0].Item.Idx)
		}
	})
}
