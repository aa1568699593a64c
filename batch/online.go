package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/task"
)

// runOnline finishes a small wave with online calls (the online tail): the
// items go to Config.Online with their heal feedback and their State,
// which the engine continues: their records count what the earlier waves
// spent on them.
func (r *Runner) runOnline(ctx context.Context, w *waveRun, in Input) (bool, error) {
	r.mu.Lock()
	r.sum.Waves++
	r.mu.Unlock()
	n, stop, err := r.online(ctx, w.num, w.items, in)
	if err != nil || stop {
		return true, err
	}
	return false, r.close(ctx, w, n)
}

// online runs items of wave through Config.Online and returns how many it
// gave the engine. stop says the run stopped short: the items left pending
// are not carried anywhere, the wave stays open in the ledger and a resume
// runs them again.
func (r *Runner) online(ctx context.Context, wave int, flights map[int]*flight, in Input) (int, bool, error) {
	src, err := in.Open()
	if err != nil {
		return 0, true, err
	}
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	var items []task.Item
	carried := map[int]*engine.Carried{}
	for len(items) < len(flights) {
		it, err := src.Next()
		if err == io.EOF {
			break
		}
		var bad *engine.BadItem
		if errors.As(err, &bad) {
			continue
		}
		if err != nil {
			return 0, true, fmt.Errorf("reading the input: %w", err)
		}
		if f := flights[it.Idx]; f != nil {
			it.Feedback = f.Feedback
			items = append(items, it)
			c, err := r.carry(f)
			if err != nil {
				return 0, true, err
			}
			carried[it.Idx] = c
		}
	}
	r.log.Info("finishing items online", "wave", wave, "items", len(items))
	sum, err := r.cfg.Online(ctx, items, carried, in.Job)
	r.tally.Add(sum.Stats)
	r.rs.Add(sum.Routes)
	if err != nil {
		return len(items), true, err
	}
	if sum.Stop != engine.StopNone {
		r.stop(sum.Stop, sum.StopDetail)
		return len(items), true, nil
	}
	return len(items), false, nil
}

// carry is what f spent in the waves, for the engine to continue as one
// item's one State: a copy of it (the wave's own stays as the ledger has
// it) with a copy of its heal tracker and a Retrier continuing its streak
// and its retry.max_elapsed clock.
func (r *Runner) carry(f *flight) (*engine.Carried, error) {
	since := f.Started
	if !f.RetrySince.IsZero() {
		since = f.RetrySince
	}
	c := &engine.Carried{State: f.State, Tries: f.ir.Tries()}
	c.State.Retrier = r.cfg.Retry.Continue(since, f.Retrier.Consecutive())
	if f.Tracker != nil {
		b, err := json.Marshal(f.Tracker)
		if err != nil {
			return nil, fmt.Errorf("copying item %d's heal tracker: %w", f.Idx, err)
		}
		c.State.Tracker = heal.NewTracker(r.cfg.Heal)
		if err := json.Unmarshal(b, c.State.Tracker); err != nil {
			return nil, fmt.Errorf("copying item %d's heal tracker: %w", f.Idx, err)
		}
	}
	return c, nil
}
