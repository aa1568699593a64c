package web_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/web"
)

// A Monitor fed with a run's events keeps each recent item's timeline and
// counts the run's metrics on the registry it was given.
func ExampleMonitor() {
	reg := prometheus.NewRegistry()
	mon := web.NewMonitor(reg)
	mon.Start("job_1", func() engine.Stats { return engine.Stats{Total: 1} }, nil)

	// What engine.Config.OnEvent would deliver for one item.
	item := task.Item{Idx: 0, Raw: []byte(`{"word": "willow"}`)}
	mon.Observe(engine.Event{Kind: engine.ItemStarted, Item: item})
	mon.Observe(engine.Event{Kind: engine.ItemRetry, Item: item, Attempt: 1, Delay: time.Second,
		Err: errors.New("503 overloaded"), Decision: classify.Decision{Class: classify.Retryable}})
	item.Feedback = &task.Feedback{PreviousOutput: `{"text": "willow"`, Message: "answer is not JSON", Attempt: 1}
	mon.Observe(engine.Event{Kind: engine.ItemHeal, Item: item, Attempt: 1, Err: errors.New("answer is not JSON")})
	mon.Observe(engine.Event{Kind: engine.ItemFinished, Item: item,
		Record: store.Record{Idx: 0, Output: []byte(`{"text": "willow"}`), Attempts: 3, HealAttempts: 1}})

	tl, _ := mon.Timeline(0)
	for _, s := range tl.Steps {
		switch s.Kind {
		case "retry":
			fmt.Printf("retry: %s (%s), next call in %s\n", s.Error, s.Class, s.Delay)
		case "heal":
			fmt.Printf("heal: re-ask %d with the feedback %q\n", s.Attempt, s.Feedback)
		default:
			fmt.Println(s.Kind)
		}
	}
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "tenax_retries_total" {
			fmt.Println(f.GetName(), f.GetMetric()[0].GetCounter().GetValue())
		}
	}
	// Output:
	// started
	// retry: 503 overloaded (retryable), next call in 1s
	// heal: re-ask 1 with the feedback "answer is not JSON"
	// succeeded
	// tenax_retries_total 1
}

// Race asks the page and the terminal at once: whichever answers first
// decides, and the other stops asking.
func ExampleRace() {
	page := web.NewMonitor(nil).Prompter
	page.OnAnswer = func(q web.Question, answer string) { fmt.Println("answered on the page:", answer) }
	terminal := silentTerminal{}

	go func() {
		for page.Pending() == nil {
			time.Sleep(time.Millisecond)
		}
		page.Answer(page.Pending().ID, true) // the Continue button
	}()
	d := web.Race(terminal, page).Trip(context.Background(), engine.TripReport{Reason: "5 consecutive failures"})
	fmt.Println(d == engine.TripContinue)
	// Output:
	// answered on the page: continue
	// true
}

// silentTerminal is a terminal nobody answers at.
type silentTerminal struct{}

func (silentTerminal) Trip(ctx context.Context, _ engine.TripReport) engine.TripDecision {
	<-ctx.Done()
	return engine.TripAbortRun
}

func (silentTerminal) CheckIn(ctx context.Context, _ engine.CheckIn) bool {
	<-ctx.Done()
	return false
}
