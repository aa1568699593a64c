package web

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
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
	// Routes are the routes panel's rows from the latest records (their
	// record columns: recordedRoutes), nil for a job without routes.
	Routes []RouteRow
}

// rateSpan is the span over which a job's rate is read from its records.
const rateSpan = time.Minute

type budget struct {
	MaxCostUSD float64 `json:"max_cost_usd"`
	MaxTokens  int64   `json:"max_tokens"`
}

// timeWindow is the time range a page's charts are zoomed into; the zero
// window is the whole job. Either end may be open (zero).
type timeWindow struct {
	From, To time.Time
}

func (w timeWindow) zero() bool { return w.From.IsZero() && w.To.IsZero() }

// key names the window in the views' cache.
func (w timeWindow) key() string {
	if w.zero() {
		return ""
	}
	return fmt.Sprintf("|%d|%d", w.From.UnixMilli(), w.To.UnixMilli())
}

// maxZoomedViews bounds the zoomed views cached: past it they are all
// dropped, the whole job's views kept.
const maxZoomedViews = 32

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
	return r.getIn(ctx, id, timeWindow{})
}

// getIn is get with the charts zoomed into win.
func (r *reports) getIn(ctx context.Context, id string, win timeWindow) (*jobView, error) {
	r.mu.Lock()
	if r.cache == nil {
		r.cache = map[string]*cachedView{}
	}
	key := id + win.key()
	c, ok := r.cache[key]
	if !ok {
		if !win.zero() && len(r.cache) >= maxZoomedViews {
			for k := range r.cache {
				if strings.Contains(k, "|") {
					delete(r.cache, k)
				}
			}
		}
		c = &cachedView{}
		r.cache[key] = c
	}
	r.mu.Unlock()

	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if (c.view != nil || c.err != nil) && now.Before(c.next) {
		return c.view, c.err
	}
	v, err := buildView(ctx, r.store, id, win)
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
	var cs []*cachedView
	for k, c := range r.cache {
		if k == id || strings.HasPrefix(k, id+"|") {
			cs = append(cs, c)
		}
	}
	r.mu.Unlock()
	for _, c := range cs {
		c.mu.Lock()
		c.next = time.Time{}
		c.mu.Unlock()
	}
}

func buildView(ctx context.Context, st store.Store, id string, win timeWindow) (*jobView, error) {
	j, err := st.OpenReadOnly(ctx, id)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	v := &jobView{Samples: map[string][]int{}, Built: time.Now()}
	var recent []store.Record
	hist := series{from: win.From, to: win.To}
	var rate rateCount
	var tally routeTally
	rate.since = v.Built.Add(-rateSpan)
	// The charts and the rate are of attempts, every record of every
	// run, from the log; the report and the samples of latest records.
	log, fromLog := j.(store.Historian)
	tee := &teeJob{Job: j, fn: func(rec store.Record) {
		if !fromLog {
			hist.add(rec)
			rate.add(rec)
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
		tally.add(rec)
		rec.Input, rec.Output, rec.TrackedErrors = nil, nil, nil
		recent = keepLatest(recent, rec, RecentItems)
	}}
	rep, err := report.BuildReport(ctx, tee, nil)
	if err != nil {
		return nil, err
	}
	if fromLog {
		err := log.Log(ctx, func(rec store.Record) error {
			hist.add(rec)
			rate.add(rec)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	v.Report = rep
	v.Routes = recordedRoutes(rep.Routes, tally)
	slices.SortFunc(recent, func(a, b store.Record) int {
		return cmp.Or(b.FinishedAt.Compare(a.FinishedAt), cmp.Compare(b.Idx, a.Idx))
	})
	v.Recent = recent
	v.Budget = specBudget(rep.Manifest.Spec)
	// A running job's charts reach now; one that ended, its last record.
	var span chartSpan
	if rep.Manifest.State == store.StateRunning {
		span = chartSpan{Through: v.Built, Live: true}
	}
	v.Charts = hist.charts(specConcurrency(rep.Manifest.Spec), span)
	v.Rate = rate.perSecond(v.Built, rep.Manifest.Created)
	if v.Rate > 0 && rep.Pending > 0 {
		v.ETA = time.Duration(float64(rep.Pending) / v.Rate * float64(time.Second)).Round(time.Second)
	}
	return v, nil
}

// rateCount counts the records written since a time, for the rate over
// the last rateSpan.
type rateCount struct {
	since time.Time
	n     int
	// earliest is the earliest start of an item recorded since since.
	earliest time.Time
}

func (c *rateCount) add(rec store.Record) {
	if !rec.FinishedAt.After(c.since) {
		return
	}
	c.n++
	start := rec.FinishedAt.Add(-time.Duration(rec.DurationMS) * time.Millisecond)
	if c.earliest.IsZero() || start.Before(c.earliest) {
		c.earliest = start
	}
}

// perSecond is the rate at now over the time the job existed within the
// span: from the span's start, the job's creation or the earliest start
// of an item recorded in it, whichever is latest, so that a job's first
// seconds (or a run resumed after a pause of days) are not divided by a
// whole span.
func (c *rateCount) perSecond(now, created time.Time) float64 {
	if c.n == 0 {
		return 0
	}
	from := maxTime(c.since, maxTime(created, c.earliest))
	secs := max(now.Sub(from).Seconds(), 1)
	return float64(c.n) / secs
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
