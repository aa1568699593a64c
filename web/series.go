package web

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/store"
)

// Bounds of a job's series, whatever the size and length of the job.
const (
	// seriesBuckets is the most time buckets a series keeps: when a job
	// runs longer, the buckets double in width and merge in pairs.
	seriesBuckets = 120
	// latencyBins is the number of log-scale bins of an item's duration
	// per bucket: bin k holds [2^(k/2), 2^((k+1)/2)) ms, so a percentile
	// read from them is within 19% of the true one, up to 2^24 ms (4.6 h),
	// and the last bin holds anything longer.
	latencyBins = 48
)

// failureClasses are the classes a failed record can have, in the order the
// failures chart draws them.
var failureClasses = [...]classify.Class{classify.Retryable, classify.Fatal, classify.Item, classify.Invalid}

// series is a job's history over time, read from its records alone (their
// finished_at, duration_ms, class, usage and cost_usd), so that it is the
// same for a live run, a finished job served by `tenax ui` and a job that
// workers run on PostgreSQL. Its memory is bounded by seriesBuckets.
type series struct {
	origin  time.Time     // the start of bucket 0
	width   time.Duration // of every bucket; a power of two of seconds
	buckets []seriesBucket
	// from and to, when set, bound the records counted (a chart zoomed
	// into a time range): a record that finished outside is left out,
	// and an item's time in flight before from is not counted.
	from, to time.Time
	// first is the earliest start of an item counted, last the latest
	// finish: the job existed from first, so that its first bucket's
	// rates are over the seconds it existed, not the whole bucket.
	first, last time.Time
}

type seriesBucket struct {
	finished int
	// failed counts the failures by class, in failureClasses's order.
	failed [len(failureClasses)]int
	// limited counts the calls answered 429 of the items that finished.
	limited int
	// busy sums the seconds that items were in flight (dispatched, not
	// yet recorded) within the bucket: busy/width is the mean in flight.
	busy          float64
	latency       [latencyBins]uint32
	inTok, outTok int64
	cost          float64
}

// add counts one record: it finished at FinishedAt and was in flight for
// DurationMS before that.
func (s *series) add(rec store.Record) {
	end := rec.FinishedAt
	if end.IsZero() || !s.from.IsZero() && end.Before(s.from) || !s.to.IsZero() && end.After(s.to) {
		return
	}
	start := end.Add(-time.Duration(rec.DurationMS) * time.Millisecond)
	if !s.from.IsZero() && start.Before(s.from) {
		start = s.from
	}
	if s.first.IsZero() || start.Before(s.first) {
		s.first = start
	}
	if end.After(s.last) {
		s.last = end
	}
	s.cover(start, end)
	b := &s.buckets[s.index(end)]
	b.finished++
	for i, c := range failureClasses {
		if rec.Failed() && rec.Class == c {
			b.failed[i]++
		}
	}
	b.limited += rec.RateLimited
	b.latency[latencyBin(rec.DurationMS)]++
	b.inTok += rec.Usage.InputTokens
	b.outTok += rec.Usage.OutputTokens
	if rec.CostUSD != nil {
		b.cost += *rec.CostUSD
	}
	// Spread the item's time in flight over the buckets it spans.
	for i := s.index(start); i <= s.index(end); i++ {
		from := s.origin.Add(time.Duration(i) * s.width)
		lo, hi := maxTime(from, start), minTime(from.Add(s.width), end)
		if hi.After(lo) {
			s.buckets[i].busy += hi.Sub(lo).Seconds()
		}
	}
}

func (s *series) index(t time.Time) int {
	return int(t.Sub(s.origin) / s.width)
}

// cover makes the buckets reach from start to end, widening them first
// when the span would need more than seriesBuckets.
func (s *series) cover(start, end time.Time) {
	if s.buckets == nil {
		s.width = time.Second
		s.origin = start.Truncate(time.Second)
		s.buckets = make([]seriesBucket, 1, seriesBuckets)
	}
	lo := minTime(start, s.origin)
	hi := maxTime(end, s.origin.Add(time.Duration(len(s.buckets))*s.width))
	for hi.Sub(lo.Truncate(s.width)) > time.Duration(seriesBuckets-1)*s.width {
		s.merge()
	}
	if lo.Before(s.origin) {
		// Records are written in the order items finish, but an item
		// that started long ago (or an older run's) may come later.
		n := int((s.origin.Sub(lo) + s.width - 1) / s.width)
		s.buckets = append(make([]seriesBucket, n, seriesBuckets), s.buckets...)
		s.origin = s.origin.Add(-time.Duration(n) * s.width)
	}
	for s.index(end) >= len(s.buckets) {
		s.buckets = append(s.buckets, seriesBucket{})
	}
}

// merge doubles the buckets' width, adding them up in pairs. The origin
// moves back to a multiple of the new width so that merges stay aligned.
func (s *series) merge() {
	w := 2 * s.width
	origin := s.origin.Truncate(w)
	shift := 0
	if origin.Before(s.origin) {
		shift = 1
	}
	merged := make([]seriesBucket, (len(s.buckets)+shift+1)/2, seriesBuckets)
	for i := range s.buckets {
		merged[(i+shift)/2].addBucket(&s.buckets[i])
	}
	s.origin, s.width, s.buckets = origin, w, merged
}

func (b *seriesBucket) addBucket(o *seriesBucket) {
	b.finished += o.finished
	for i := range b.failed {
		b.failed[i] += o.failed[i]
	}
	b.limited += o.limited
	b.busy += o.busy
	for i := range b.latency {
		b.latency[i] += o.latency[i]
	}
	b.inTok += o.inTok
	b.outTok += o.outTok
	b.cost += o.cost
}

func latencyBin(ms int64) int {
	if ms < 1 {
		return 0
	}
	return min(int(2*math.Log2(float64(ms))), latencyBins-1)
}

// percentile returns the q-quantile (0 < q ≤ 1) of the bucket's durations
// in milliseconds, read at the geometric middle of its bin; NaN when no
// item finished in the bucket.
func (b *seriesBucket) percentile(q float64) float64 {
	if b.finished == 0 {
		return math.NaN()
	}
	want := uint32(math.Ceil(q * float64(b.finished)))
	var seen uint32
	for k, n := range b.latency {
		seen += n
		if seen >= want && n > 0 {
			if k == 0 {
				return 1
			}
			return math.Pow(2, (float64(k)+0.5)/2)
		}
	}
	return math.NaN()
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// chartSpan says how far a series' charts reach: the records run from the
// first item's start to Through (the last record's finish for a job that
// has ended, now for one that runs); Live says the job runs, so that a
// last bucket that covers less than half its width is left out (its
// records are still coming in) rather than drawn as a cliff.
type chartSpan struct {
	Through time.Time
	Live    bool
}

// covered returns the seconds bucket i covers of the time the job
// existed (from the first item's start to through), at least
// minCoverSeconds, and when that part of the bucket ends.
func (s *series) covered(i int, through time.Time) (float64, time.Time) {
	from := s.origin.Add(time.Duration(i) * s.width)
	to := from.Add(s.width)
	lo, hi := maxTime(from, s.first), minTime(to, through)
	least := min(s.width/2, time.Second)
	return max(hi.Sub(lo), least).Seconds(), maxTime(hi, from)
}

// drawn returns how many buckets the charts draw, the time they reach and
// whether the last one drawn is partial: a live job's last bucket under
// half covered is left out.
func (s *series) drawn(span chartSpan) (n int, through time.Time, partial bool) {
	n = len(s.buckets)
	through = maxTime(span.Through, s.last)
	if !s.to.IsZero() && through.After(s.to) {
		through = s.to
	}
	if n == 0 {
		return 0, through, false
	}
	_, end := s.covered(n-1, through)
	from := s.origin.Add(time.Duration(n-1) * s.width)
	partial = end.Before(from.Add(s.width))
	if partial && span.Live && n > 1 && end.Sub(from) < s.width/2 {
		return n - 1, through, false
	}
	return n, through, partial
}

// charts draws the series: the finishing rate, items in flight against
// limit (the spec's concurrency.max, 0 for none known), the items'
// latency percentiles, failures by class, and tokens and cost summed over
// the run.
func (s *series) charts(limit int, span chartSpan) []chart {
	n, through, partial := s.drawn(span)
	times, seconds := make([]time.Time, n), make([]float64, n)
	rate, inflight := make([]float64, n), make([]float64, n)
	p50, p90, p99 := make([]float64, n), make([]float64, n), make([]float64, n)
	inTok, outTok, cost := make([]float64, n), make([]float64, n), make([]float64, n)
	failed := make([][]float64, len(failureClasses))
	for c := range failed {
		failed[c] = make([]float64, n)
	}
	limited := make([]float64, n)
	var sumIn, sumOut, sumCost float64
	for i := range n {
		b := &s.buckets[i]
		// A bucket's rates are over the part of it the job existed: a
		// job that started or stops mid-bucket is not drawn slower.
		secs, end := s.covered(i, through)
		times[i], seconds[i] = end, secs
		rate[i] = float64(b.finished) / secs
		inflight[i] = b.busy / secs
		p50[i], p90[i], p99[i] = b.percentile(0.5), b.percentile(0.9), b.percentile(0.99)
		for c := range failureClasses {
			failed[c][i] = float64(b.failed[c])
		}
		limited[i] = float64(b.limited)
		sumIn, sumOut, sumCost = sumIn+float64(b.inTok), sumOut+float64(b.outTok), sumCost+b.cost
		inTok[i], outTok[i], cost[i] = sumIn, sumOut, sumCost
	}
	per := "per " + s.width.String()
	if n == 0 {
		per = ""
	}
	cs := []chart{
		{ID: "chart-rate", Title: "Items finished per second", Times: times, Format: count,
			Lines: []chartLine{{Name: "items/s", Class: "rate", Values: rate}}},
		// Under way is dispatch to record, backoff waits included, while
		// concurrency.max bounds the calls: the line may pass the limit.
		{ID: "chart-inflight", Title: "Items under way, dispatch to record (mean " + per + ")", Times: times, Format: count,
			Lines: []chartLine{{Name: "under way", Class: "inflight", Values: inflight}}},
		{ID: "chart-latency", Title: "Item duration, dispatch to record (" + per + ")", Times: times, Format: millis,
			Lines: []chartLine{{Name: "p99", Class: "p99", Values: p99}, {Name: "p90", Class: "p90", Values: p90}, {Name: "p50", Class: "p50", Values: p50}}},
	}
	if limit > 0 {
		cs[1].Ref = &chartRef{Label: fmt.Sprintf("concurrency.max %d", limit), Value: float64(limit)}
	}
	fc := chart{ID: "chart-failures", Title: "Failures by class, and calls answered 429 (" + per + ")", Times: times, Format: count}
	for c, class := range failureClasses {
		if slices.ContainsFunc(failed[c], func(v float64) bool { return v > 0 }) {
			fc.Lines = append(fc.Lines, chartLine{Name: class.String(), Class: class.String(), Values: failed[c]})
		}
	}
	// A 429 is a call, not an item: most are retried into a success, so
	// they are their own line, counted when their item finished.
	if slices.ContainsFunc(limited, func(v float64) bool { return v > 0 }) {
		fc.Lines = append(fc.Lines, chartLine{Name: "429s", Class: "limited", Values: limited})
	}
	if fc.Lines == nil {
		fc.Lines = []chartLine{{Name: "none", Class: "none", Values: failed[0]}}
	}
	cs = append(cs, fc,
		chart{ID: "chart-tokens", Title: "Tokens, summed over the job", Times: times, Format: count,
			Lines: []chartLine{{Name: "in", Class: "tokin", Values: inTok}, {Name: "out", Class: "tokout", Values: outTok}}},
		chart{ID: "chart-cost", Title: "Cost, summed over the job", Times: times, Format: dollars,
			Lines: []chartLine{{Name: "cost", Class: "cost", Values: cost}}})
	for i := range cs {
		cs[i].Seconds, cs[i].Partial, cs[i].Width = seconds, partial, s.width
	}
	return cs
}
