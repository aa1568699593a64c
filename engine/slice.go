package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/memory"
	"github.com/tenaxhq/tenax/task"
)

// ErrNotRun is the Err of an Outcome whose item did not end: the run
// stopped first (the breaker opened, a budget was reached, ctx ended).
var ErrNotRun = errors.New("engine: the run stopped before this item ended")

// Outcome is how one item of RunSlice ended.
type Outcome[Out any] struct {
	// Value is what f returned for the item, when it succeeded.
	Value Out
	// Err is nil when the item succeeded; f's last error when it failed
	// for good; ErrNotRun when the run stopped before it ended.
	Err error
	// Class is the class of a failure (see package classify), Unknown on
	// success and for an item not run.
	Class classify.Class
	// Attempts counts the calls of f the item took.
	Attempts int
}

// RunSlice calls f on every item of items, as a tenax run does: cfg's
// Concurrency items at once, each retried as cfg.Retry says, under a
// circuit breaker, checkpointed in a memory store. It returns one Outcome
// per item, in the order of items, and the run's Summary.
//
// The zero Config has sane defaults: 8 items at once; 5 calls at most for
// an error that classifies as retryable, with backoff from 1s; one call for
// an error with no class signal (see package retry: set
// cfg.Retry.Classifier.Otherwise to classify.Retryable to retry those); and
// a breaker that stops the run after 5 consecutive failed items, leaving
// the rest with ErrNotRun. cfg.Total is set to len(items).
//
// The error is the run's own failure, never an item's: items fail in their
// Outcome. A canceled ctx stops the run; the items it did not end have
// ErrNotRun.
func RunSlice[In, Out any](ctx context.Context, items []In, f func(context.Context, In) (Out, error), cfg Config) ([]Outcome[Out], Summary, error) {
	out := make([]Outcome[Out], len(items))
	// Each item's calls are made one after another, so each index is
	// written by one goroutine at a time; the run's end orders the writes
	// before the reads below.
	lastErr := make([]error, len(items))
	t := task.Func(func(ctx context.Context, it task.Item) (task.Result, error) {
		v, err := f(ctx, items[it.Idx])
		if err != nil {
			lastErr[it.Idx] = err
			return task.Result{}, err
		}
		out[it.Idx].Value = v
		raw, err := json.Marshal(v)
		if err != nil {
			// The record keeps no output; Value has it.
			raw = nil
		}
		return task.Result{Output: raw}, nil
	})
	var st memory.Store
	job, err := st.Create(ctx, store.Manifest{ID: "slice", Items: len(items)})
	if err != nil {
		return nil, Summary{}, fmt.Errorf("engine: creating the memory checkpoint: %w", err)
	}
	defer job.Close()
	cfg.Total, cfg.Skipped = len(items), 0
	next := 0
	src := SourceFunc(func() (task.Item, error) {
		if next == len(items) {
			return task.Item{}, io.EOF
		}
		it := task.Item{Idx: next, Raw: json.RawMessage("{}")}
		next++
		return it, nil
	})
	s, runErr := New(cfg, t, job).Run(ctx, src)
	ended := make([]bool, len(items))
	err = job.Scan(context.WithoutCancel(ctx), func(r store.Record) error {
		o := &out[r.Idx]
		ended[r.Idx] = true
		o.Attempts = r.Attempts
		if r.Failed() {
			var zero Out
			o.Value, o.Class, o.Err = zero, r.Class, lastErr[r.Idx]
			if o.Err == nil {
				o.Err = errors.New(r.Error)
			}
		}
		return nil
	})
	for i := range out {
		if !ended[i] {
			var zero Out
			out[i] = Outcome[Out]{Value: zero, Err: ErrNotRun}
		}
	}
	return out, s, errors.Join(runErr, err)
}
