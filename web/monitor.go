package web

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/metrics"
	"github.com/tenaxhq/tenax/store"
)

// Bounds of what a Monitor keeps in memory, whatever the size of the run.
const (
	// TimelineItems is how many items' timelines are kept: the most
	// recently started ones.
	TimelineItems = 500
	// TimelineSteps is the most steps one item's timeline keeps; older
	// steps after the first are dropped and counted.
	TimelineSteps = 64
	// RecentItems is how many finished items the page lists.
	RecentItems = 25
	// rateWindow is the span over which the finishing rate is measured.
	rateWindow = 30
	// textLimit bounds each text a step keeps (errors, feedback, answers).
	textLimit = 4000
)

// Monitor watches a live run through its events (Observe is the engine's
// OnEvent hook) and keeps what the page shows beyond the store's records:
// the rate, cooldowns, 429s, recent items, every recent item's timeline,
// and the breaker's pending question (its Prompter). It also counts the
// run's Prometheus metrics. Its memory is bounded (TimelineItems,
// TimelineSteps, RecentItems); its methods are safe for concurrent use.
type Monitor struct {
	// Prompter answers the breaker's questions from the page.
	Prompter *Prompter
	// Route labels the run's call-level metrics; set it before Start.
	Route metrics.Route

	metrics *Metrics

	mu          sync.Mutex
	jobID       string
	stats       func() engine.Stats
	redact      func(string) string
	timelines   map[int]*Timeline
	order       []int // idx of the kept timelines: a ring, oldest at orderHead
	orderHead   int
	recent      []RecentItem // a ring, oldest at recentHead once full
	recentHead  int
	buckets     [rateWindow]rateBucket
	rateLimited int
	cooldown    time.Time
	coolReason  string
	ended       bool
	batch       string // the batch mode run's latest progress line
	subs        map[chan struct{}]struct{}
	control     Control // the run's levers, nil before Attach
	// stopping says why the run stops dispatching (a Stopping event) and
	// since when, "" while it runs on.
	stopping   string
	stoppingAt time.Time
}

type rateBucket struct {
	sec int64
	n   int
}

// Timeline is one item's history in this run: every call that failed and
// why, each re-ask with its feedback and the answer it corrects, and the
// final outcome.
type Timeline struct {
	Idx     int
	ID      string
	Input   string
	Steps   []Step
	Dropped int // steps dropped to keep the timeline bounded
	Done    bool
}

// Step is one thing that happened to an item.
type Step struct {
	Time time.Time
	// Kind is started, retry, heal, succeeded, failed or pending.
	Kind    string
	Attempt int
	Class   string
	// Reason says why the error has its class.
	Reason string
	Error  string
	// Delay is the wait before the next call (retry).
	Delay time.Duration
	// Answer is the output that failed validation and Feedback the
	// message the re-ask sends (heal); Answer is the final output on
	// success.
	Answer   string
	Feedback string
}

// RecentItem is a finished item in the page's list.
type RecentItem struct {
	Idx     int
	ID      string
	Outcome string
	Class   string
	Error   string
	// Output is the item's output, shortened (check-ins).
	Output   string
	Attempts int
	Heals    int
	Duration time.Duration
	Finished time.Time
}

// NewMonitor returns a Monitor whose metrics are registered on reg (nil:
// no metrics).
func NewMonitor(reg prometheus.Registerer) *Monitor {
	m := &Monitor{timelines: map[int]*Timeline{}, subs: map[chan struct{}]struct{}{}}
	m.Prompter = &Prompter{changed: m.notify}
	if reg != nil {
		m.metrics = NewMetrics(reg, m.Stats)
	}
	return m
}

// Start ties the monitor to the run that is starting: its job id, its
// counters (engine.Engine.Stats) and the function that redacts its secrets
// from what the page shows (nil: nothing to redact).
func (m *Monitor) Start(jobID string, stats func() engine.Stats, redact func(string) string) {
	m.mu.Lock()
	m.jobID, m.stats, m.redact = jobID, stats, redact
	if m.metrics != nil {
		m.metrics.start(jobID, m.Route)
	}
	m.mu.Unlock()
	m.Prompter.setRedact(redact)
	m.notify()
}

// End marks the run as over: the page says so and stops expecting news.
func (m *Monitor) End() {
	m.mu.Lock()
	m.ended = true
	m.mu.Unlock()
	m.notify()
}

// Ended reports whether End was called.
func (m *Monitor) Ended() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ended
}

// JobID returns the id of the monitored job, "" before Start.
func (m *Monitor) JobID() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.jobID
}

// Stats returns the run's counters; the zero Stats before Start.
func (m *Monitor) Stats() engine.Stats {
	m.mu.Lock()
	stats := m.stats
	m.mu.Unlock()
	if stats == nil {
		return engine.Stats{}
	}
	return stats()
}

// ObserveBatch records where a batch mode run's wave stands (its batches'
// request counts, time left before their window closes): what the page
// shows while the requests run at the provider, when no engine event
// comes. p is a batch.Progress, from job.Options.OnBatchProgress; the page
// shows its line, and takes it as a fmt.Stringer so that it links no
// provider SDK.
func (m *Monitor) ObserveBatch(p fmt.Stringer) {
	m.mu.Lock()
	m.batch = p.String()
	m.mu.Unlock()
	m.notify()
}

// Observe records one engine event. It is engine.Config.OnEvent (through
// job.Options.OnEvent): it copies what it keeps, so it never holds on to
// the engine's values, and it does not block.
func (m *Monitor) Observe(ev engine.Event) {
	m.mu.Lock()
	if m.metrics != nil {
		m.metrics.observe(ev)
	}
	switch ev.Kind {
	case engine.ItemStarted:
		t := m.timelineLocked(ev.Item.Idx, ev.Item.ID, ev.Item.Raw)
		t.add(Step{Time: ev.Time, Kind: "started"})
	case engine.ItemRetry:
		if httpStatus(ev.Err) == 429 {
			m.rateLimited++
		}
		t := m.timelineLocked(ev.Item.Idx, ev.Item.ID, ev.Item.Raw)
		t.add(Step{Time: ev.Time, Kind: "retry", Attempt: ev.Attempt, Class: ev.Decision.Class.String(),
			Reason: ev.Decision.Reason, Error: m.text(errText(ev.Err)), Delay: ev.Delay})
	case engine.ItemHeal:
		st := Step{Time: ev.Time, Kind: "heal", Attempt: ev.Attempt, Class: classify.Invalid.String(),
			Reason: ev.Decision.Reason, Error: m.text(errText(ev.Err))}
		if fb := ev.Item.Feedback; fb != nil {
			st.Answer, st.Feedback = m.text(fb.PreviousOutput), m.text(fb.Message)
		}
		m.timelineLocked(ev.Item.Idx, ev.Item.ID, ev.Item.Raw).add(st)
	case engine.ItemFinished:
		m.finishedLocked(ev, &ev.Record)
	case engine.ItemPending:
		t := m.timelineLocked(ev.Item.Idx, ev.Item.ID, ev.Item.Raw)
		t.add(Step{Time: ev.Time, Kind: "pending", Reason: "the run stopped first; a resume runs it again"})
		t.Done = true
	case engine.Cooldown:
		if ev.Until.After(m.cooldown) {
			m.cooldown, m.coolReason = ev.Until, ev.Reason
		}
	case engine.Stopping:
		if m.stopping == "" {
			m.stopping, m.stoppingAt = ev.Reason, ev.Time
		}
	case engine.CallEnded:
		// Nothing the page shows: its item event already woke them.
		m.mu.Unlock()
		return
	}
	m.notifyLocked()
	m.mu.Unlock()
}

func (m *Monitor) finishedLocked(ev engine.Event, rec *store.Record) {
	idx, id, input := rec.Idx, rec.ID, []byte(rec.Input)
	if len(ev.Item.Raw) > 0 {
		idx, id, input = ev.Item.Idx, ev.Item.ID, ev.Item.Raw
	}
	t := m.timelineLocked(idx, id, input)
	st := Step{Time: ev.Time, Kind: "succeeded", Attempt: rec.Attempts}
	ri := RecentItem{Idx: idx, ID: id, Outcome: "succeeded", Attempts: rec.Attempts, Heals: rec.HealAttempts,
		Duration: time.Duration(rec.DurationMS) * time.Millisecond, Finished: ev.Time}
	if rec.Failed() {
		st.Kind, st.Class, st.Reason, st.Error = "failed", rec.Class.String(), ev.Decision.Reason, m.text(rec.Error)
		ri.Outcome, ri.Class, ri.Error = "failed", rec.Class.String(), m.text(firstLine(rec.Error))
		if httpStatus(ev.Err) == 429 {
			m.rateLimited++
		}
	} else {
		st.Answer = m.text(string(rec.Output))
	}
	t.add(st)
	t.Done = true
	if len(m.recent) < RecentItems {
		m.recent = append(m.recent, ri)
	} else {
		m.recent[m.recentHead] = ri
		m.recentHead = (m.recentHead + 1) % RecentItems
	}
	sec := ev.Time.Unix()
	b := &m.buckets[sec%rateWindow]
	if b.sec != sec {
		*b = rateBucket{sec: sec}
	}
	b.n++
}

// timelineLocked returns idx's timeline, creating it (and dropping the
// oldest kept one) when there is none.
func (m *Monitor) timelineLocked(idx int, id string, input []byte) *Timeline {
	if t, ok := m.timelines[idx]; ok {
		return t
	}
	var t *Timeline
	if len(m.order) < TimelineItems {
		t = &Timeline{}
		m.order = append(m.order, idx)
	} else {
		// Reuse the oldest timeline's memory: Timeline returns copies.
		oldest := m.order[m.orderHead]
		t = m.timelines[oldest]
		delete(m.timelines, oldest)
		m.order[m.orderHead] = idx
		m.orderHead = (m.orderHead + 1) % TimelineItems
	}
	*t = Timeline{Idx: idx, ID: id, Input: m.text(string(input)), Steps: t.Steps[:0]}
	m.timelines[idx] = t
	return t
}

func (t *Timeline) add(s Step) {
	if len(t.Steps) == TimelineSteps {
		// Keep the first step (when the item started) and the latest.
		copy(t.Steps[1:], t.Steps[2:])
		t.Steps = t.Steps[:TimelineSteps-1]
		t.Dropped++
	}
	t.Steps = append(t.Steps, s)
}

// text redacts and bounds a text the monitor keeps. The caller holds mu.
func (m *Monitor) text(s string) string {
	if m.redact != nil {
		s = m.redact(s)
	}
	return truncate(s, textLimit)
}

// Timeline returns a copy of idx's timeline, false when it is not kept
// (never started in this run, or dropped for newer ones).
func (m *Monitor) Timeline(idx int) (Timeline, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.timelines[idx]
	if !ok {
		return Timeline{}, false
	}
	c := *t
	c.Steps = append([]Step(nil), t.Steps...)
	return c, true
}

// Live is what the page shows of a live run at one moment.
type Live struct {
	JobID string
	Stats engine.Stats
	// Rate is items finished per second over the last 30 seconds.
	Rate float64
	// ETA is the time left at Rate; 0 when unknown.
	ETA time.Duration
	// RateLimited counts the calls answered 429.
	RateLimited int
	// CooldownUntil is the end of the current cooldown, zero when none.
	CooldownUntil  time.Time
	CooldownReason string
	// Recent are the latest finished items, newest first.
	Recent []RecentItem
	// Question is the breaker's or a check-in's pending question, nil
	// when none.
	Question *Question
	// Ended says the run is over.
	Ended bool
	// Batch is a batch mode run's latest wave progress, "" otherwise.
	Batch string
	// CanControl says the page may pause, continue and stop the run
	// (Monitor.Attach was called).
	CanControl bool
	// Stopping says why the run stops dispatching, and since when; ""
	// while it runs on.
	Stopping   string
	StoppingAt time.Time
}

// Live returns the run's state now.
func (m *Monitor) Live(now time.Time) Live {
	s := m.Stats()
	m.mu.Lock()
	l := Live{JobID: m.jobID, Stats: s, RateLimited: m.rateLimited, Ended: m.ended, Batch: m.batch,
		CanControl: m.control != nil, Stopping: m.stopping, StoppingAt: m.stoppingAt}
	if m.cooldown.After(now) {
		l.CooldownUntil, l.CooldownReason = m.cooldown, m.coolReason
	}
	n := len(m.recent)
	l.Recent = make([]RecentItem, n)
	for i := range n {
		// Newest first: the newest is just before recentHead.
		l.Recent[i] = m.recent[(m.recentHead-1-i+2*n)%n]
	}
	// The window is the last rateWindow seconds of open dispatch: it
	// never reaches back across a pause for the operator, whose seconds
	// finished nothing.
	from, to := s.Started, now
	if s.Resumed.After(from) {
		from = s.Resumed
	}
	if !s.PausedSince.IsZero() && s.PausedSince.Before(to) {
		to = s.PausedSince
	}
	finished := 0
	sec := to.Unix()
	for _, b := range m.buckets {
		if b.sec > sec-rateWindow && b.sec <= sec && b.sec >= from.Unix() {
			finished += b.n
		}
	}
	m.mu.Unlock()
	if !s.Started.IsZero() && finished > 0 {
		window := min(to.Sub(from).Seconds(), rateWindow)
		if window < 1 {
			window = 1
		}
		l.Rate = float64(finished) / window
		planned := s.Planned
		if planned == 0 {
			planned = s.Total - s.Skipped
		}
		if left := planned - s.Done; left > 0 && !l.Ended {
			l.ETA = time.Duration(float64(left) / l.Rate * float64(time.Second)).Round(time.Second)
		}
	}
	l.Question = m.Prompter.Pending()
	return l
}

// Subscribe returns a channel that receives a value (coalesced) whenever
// something changed, and a function that ends the subscription.
func (m *Monitor) Subscribe() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	m.mu.Lock()
	m.subs[ch] = struct{}{}
	m.mu.Unlock()
	return ch, func() {
		m.mu.Lock()
		delete(m.subs, ch)
		m.mu.Unlock()
	}
}

func (m *Monitor) notify() {
	m.mu.Lock()
	m.notifyLocked()
	m.mu.Unlock()
}

// notifyLocked wakes the subscribers without waiting for any of them.
func (m *Monitor) notifyLocked() {
	for ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func httpStatus(err error) int {
	var sc classify.StatusCoder
	if errors.As(err, &sc) {
		return sc.HTTPStatus()
	}
	return 0
}

// truncate shortens s to at most n bytes, at a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func firstLine(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			return s[:i]
		}
	}
	return s
}
