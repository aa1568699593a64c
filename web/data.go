package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
)

// samplesPerGroup is how many failed items each error group lists.
const samplesPerGroup = 5

// jobView is what the store says about a job: status's report (counts,
// error groups with their hints, tokens, cost), more sample items per
// group, the latest finished items and the spec's budget.
type jobView struct {
	Report  *report.Report
	Samples map[string][]int // fingerprint → sample idx
	Recent  []store.Record   // latest finished, newest first (outputs dropped)
	Budget  budget
	Built   time.Time
	// Charts are the job's history over time, from its records.
	Charts []chart
	// Rate is the items recorded per second over the minute before the
	// view was built, by whichever processes run the job (workers
	// included); ETA is the time its pending items take at that rate, 0
	// when unknown.
	Rate float64
	ETA  time.Duration
}

// rateSpan is the span over which a job's rate is read from its records.
const rateSpan = time.Minute

type budget struct {
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
}

// reports builds jobViews from a store, each at most once per refresh
// interval: reading a job's records costs in proportion to its size, so a
// big job is re-read less often (at least five times as long as reading it
// took, never more than once a second).
type reports struct {
	store store.Store

	mu    sync.Mutex
	cache map[string]*cachedView
}

type cachedView struct {
	mu   sync.Mutex
	view *jobView
	err  error
	next time.Time
}

func (r *reports) get(ctx context.Context, id string) (*jobView, error) {
	r.mu.Lock()
	if r.cache == nil {
		r.cache = map[string]*cachedView{}
	}
	c, ok := r.cache[id]
	if !ok {
		c = &cachedView{}
		r.cache[id] = c
	}
	r.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if (c.view != nil || c.err != nil) && now.Before(c.next) {
		return c.view, c.err
	}
	v, err := buildView(ctx, r.store, id)
	took := time.Since(now)
	c.next = time.Now().Add(max(time.Second, 5*took))
	if ctx.Err() != nil {
		// A closed page is no reason to show an error to the next one.
		c.next = time.Time{}
		return v, err
	}
	c.view, c.err = v, err
	return v, err
}

// forget makes the next get of id read the store again.
func (r *reports) forget(id string) {
	r.mu.Lock()
	c := r.cache[id]
	r.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.next = time.Time{}
	c.mu.Unlock()
}

func buildView(ctx context.Context, st store.Store, id string) (*jobView, error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	v := &jobView{Samples: map[string][]int{}, Built: time.Now()}
	var recent []store.Record
	var hist series
	recently := 0
	since := v.Built.Add(-rateSpan)
	tee := &teeJob{Job: j, fn: func(rec store.Record) {
		hist.add(rec)
		if rec.FinishedAt.After(since) {
			recently++
		}
		if rec.Failed() {
			fp := rec.Fingerprint
			if fp == "" {
				fp = heal.Fingerprint(rec.Class.String(), rec.Error)
			}
			if s := v.Samples[fp]; len(s) < samplesPerGroup {
				v.Samples[fp] = append(s, rec.Idx)
			}
		}
		rec.Input, rec.Output, rec.TrackedErrors = nil, nil, nil
		recent = keepLatest(recent, rec, RecentItems)
	}}
	rep, err := report.BuildReport(ctx, tee, nil)
	if err != nil {
		return nil, err
	}
	v.Report = rep
	slices.SortFunc(recent, func(a, b store.Record) int {
		return cmp.Or(b.FinishedAt.Compare(a.FinishedAt), cmp.Compare(b.Idx, a.Idx))
	})
	v.Recent = recent
	v.Budget = specBudget(rep.Manifest.Spec)
	v.Charts = hist.charts(specConcurrency(rep.Manifest.Spec))
	v.Rate = float64(recently) / rateSpan.Seconds()
	if v.Rate > 0 && rep.Pending > 0 {
		v.ETA = time.Duration(float64(rep.Pending) / v.Rate * float64(time.Second)).Round(time.Second)
	}
	return v, nil
}

// keepLatest keeps the n records that finished last.
func keepLatest(recs []store.Record, rec store.Record, n int) []store.Record {
	if len(recs) < n {
		return append(recs, rec)
	}
	oldest := 0
	for i := range recs {
		if recs[i].FinishedAt.Before(recs[oldest].FinishedAt) {
			oldest = i
		}
	}
	if rec.FinishedAt.After(recs[oldest].FinishedAt) {
		recs[oldest] = rec
	}
	return recs
}

// teeJob shows every record report.BuildReport scans to fn as well, so that
// one pass over the records gives both. The page shows no batch waves:
// BuildReport is given no report.WaveReader.
type teeJob struct {
	report.Job
	fn func(store.Record)
}

func (t *teeJob) Scan(ctx context.Context, fn func(store.Record) error) error {
	return t.Job.Scan(ctx, func(rec store.Record) error {
		err := fn(rec)
		t.fn(rec)
		return err
	})
}

// specBudget reads the budget back from the manifest's resolved spec.
func specBudget(raw json.RawMessage) budget {
	var sp struct {
		Budget budget `json:"budget"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &sp) // a spec without a readable budget has none
	}
	return sp.Budget
}

// specConcurrency reads concurrency.max back from the manifest's resolved
// spec; 0 when the spec left it to its default.
func specConcurrency(raw json.RawMessage) int {
	var sp struct {
		Concurrency struct {
			Max int `json:"max"`
		} `json:"concurrency"`
	}
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &sp) // a spec without a readable limit has none
	}
	return sp.Concurrency.Max
}

// findRecord returns idx's latest record.
func findRecord(ctx context.Context, st store.Store, id string, idx int) (store.Record, bool, error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return store.Record{}, false, err
	}
	defer j.Close()
	var found store.Record
	ok := false
	errFound := fmt.Errorf("found")
	err = j.Scan(ctx, func(rec store.Record) error {
		if rec.Idx == idx {
			found, ok = rec, true
			return errFound
		}
		return nil
	})
	if err != nil && err != errFound {
		return store.Record{}, false, err
	}
	return found, ok, nil
}
