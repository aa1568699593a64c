package engine

import (
	"math"
	"sync/atomic"
	"time"
)

// Adaptive concurrency, told nothing, finds how many calls the provider
// takes at once and holds there under noise. It borrows from TCP's
// congestion control rather than from latency-gradient limiters (Vegas,
// Netflix's Gradient2, Envoy's adaptive concurrency): an LLM call's latency
// is dominated by the answer's length, not by queueing, so latency says
// little about capacity, while a provider says "too many" outright with a
// 429 and its rate-limit headers. docs/concurrency.md explains the choice.
//
//   - Slow start: from Config.InitialConcurrency the limit grows by one for
//     every call that succeeds while all slots were in use, doubling each
//     round trip, until the first sign of a limit or a round trip at max.
//     When the request rate is known (the spec's rate_limit, or the
//     provider's headers), a success jumps the limit to what that rate
//     needs by Little's law, rate × the call's round trip × jumpHeadroom:
//     the slots then never hold back what the pace allows, from the second
//     round trip on.
//   - Congestion avoidance after that: one more slot per round trip of
//     successes at capacity.
//   - Decrease: to decreaseFactor of the limit (to half when it ends slow
//     start, which overshoots by up to twice), at most once per round
//     trip: a capacity signal from a call that started before the last
//     decrease is already answered by it (as TCP reacts once to a window
//     of losses).
//   - What counts as a signal: a 429 that the provider's headers do not
//     explain as sporadic (they showed room for more calls). A 5xx, 529 or
//     timeout is a failure of that call, handled by retries and the breaker,
//     not a capacity signal.
//   - Noise or a limit: a decrease also needs the 429s to be a pattern, so
//     that 2% of random 429s do not pin the limit near √(2/p). Whether the
//     share of 429s among outcomes has risen from noise (noiseShare) to a
//     limit (limitShare) is a change-detection problem; Page's CUSUM test
//     answers it with one number, the evidence: each outcome adds its
//     log-likelihood ratio, a 429 ln(limitShare/noiseShare), a success
//     ln((1-limitShare)/(1-noiseShare)) < 0, floored at 0; the limit is
//     reached when the evidence reaches evidenceThreshold. A fixed window
//     with a share threshold cannot tell them apart quickly enough without
//     false alarms: three 429s in the first 59 outcomes of a window, which
//     2% of noise gives about one window in ten, read as more than 5%.
//
// The rate-limit headers, when the provider sends them, are the primary
// signal and are handled by the gate: their limits pace calls and an
// exhausted quota is a cooldown. Then the concurrency limit only has to be
// large enough, and stops growing once calls wait on the pace instead of on
// a slot.
type adaptive struct {
	max       int
	slowStart bool
	credit    float64 // fractional growth in congestion avoidance
	gen       atomic.Uint64

	// evidence is the CUSUM statistic that the 429s are a limit, not
	// noise; a decrease resets it.
	evidence float64
	// maxAt is when slow start reached max, which ends it a round trip
	// later.
	maxAt time.Time
}

// The log-likelihood ratios of one outcome, noise against limit.
var (
	signalEvidence = math.Log(limitShare / noiseShare)
	quietEvidence  = math.Log((1 - limitShare) / (1 - noiseShare))
)

const (
	// decreaseFactor is what remains of the limit after a decrease. TCP
	// Reno halves; CUBIC keeps 0.7. Keeping 0.8 holds the average near
	// 90% of the limit in the sawtooth that follows.
	decreaseFactor = 0.8
	// noiseShare is the share of 429s that is noise (providers' sporadic
	// 429s run at 1–2%), and limitShare one that is a limit speaking. A
	// share above about 6.6%, where the two log-likelihood ratios balance,
	// builds evidence; one below wears it down.
	noiseShare = 0.03
	limitShare = 0.12
	// evidenceThreshold is the evidence a decrease needs. Measured by
	// simulation: at 2% random 429s a false decrease comes once in about
	// 130,000 outcomes, at 3% once in 14,000 (a window of 50 with a 5%
	// share threshold gave one every 600–800 outcomes at 2%); 10% of 429s
	// are detected after about 100 outcomes, 20% after 31, 40% after 13.
	// At least five 429s are needed.
	evidenceThreshold = 6.0
	// jumpHeadroom covers round trips longer than the one measured: a
	// slot short costs a call's worth of pace, a slot too many costs
	// nothing, since the pace, not the slots, holds calls back.
	jumpHeadroom = 1.25
)

// callStart is what adaptive concurrency remembers of a call while it runs.
//
// Its bools sit together at the end: every itemRun holds one (in its
// ticket), and padding after each bool once cost every item a larger
// size class, when each item allocated its own itemRun (Do's still do).
type callStart struct {
	gen uint64    // the decrease generation it started in
	at  time.Time // when it started, for its round trip
	// seq is its number in the order calls started (limiter.starts), 0
	// for no call: it dates the quota its answer carries.
	seq        uint64
	counted    bool // the call was counted in executing
	atCapacity bool // it took the last free slot, or waited for one
	// spaced says it waited its turn in the request limiter: it went on
	// its own, spaced from the calls around it by the pace, so the
	// provider counted those calls in the order they started.
	spaced bool
}

func newLimiter(cfg Config) *limiter {
	l := &limiter{limit: cfg.Concurrency}
	if cfg.Adaptive {
		initial := cfg.InitialConcurrency
		if initial <= 0 {
			initial = min(4, cfg.Concurrency)
		}
		l.limit = max(1, min(initial, cfg.Concurrency))
		l.adapt = &adaptive{max: cfg.Concurrency, slowStart: true}
	}
	return l
}

// outcome is what a call's end says about capacity.
type outcome uint8

const (
	outcomeNeutral  outcome = iota // says nothing about capacity
	outcomeSuccess                 // the call went through
	outcomeCapacity                // a 429 the headers do not explain as sporadic
)

// ended takes a call's outcome and moves the limit. perSecond is the
// request rate the gate paces calls at, 0 when none is known. It returns
// the new limit and whether it changed.
func (l *limiter) ended(c callStart, o outcome, perSecond float64) (int, bool) {
	if c.counted {
		l.executing.Add(-1)
	}
	a := l.adapt
	if a == nil || o == outcomeNeutral {
		return 0, false
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := l.limit
	switch o {
	case outcomeSuccess:
		a.evidence = max(0, a.evidence+quietEvidence)
		if a.slowStart && l.limit >= a.max && !a.maxAt.IsZero() && c.at.After(a.maxAt) {
			// A call that started at the ceiling came back without a
			// signal: the limit has not overshot what the provider
			// takes, and a later 429 needs no halving.
			a.slowStart = false
		}
		if c.atCapacity && l.limit < a.max {
			if a.slowStart {
				next := l.limit + 1
				if perSecond > 0 && !c.at.IsZero() {
					need := math.Ceil(perSecond * time.Since(c.at).Seconds() * jumpHeadroom)
					if need > float64(next) {
						next = int(min(need, float64(a.max)))
					}
				}
				l.setLimitLocked(min(next, a.max))
				if l.limit >= a.max {
					a.maxAt = time.Now()
				}
			} else if a.credit += 1 / float64(l.limit); a.credit >= 1 {
				a.credit--
				l.setLimitLocked(l.limit + 1)
			}
		}
	case outcomeCapacity:
		if c.gen != a.gen.Load() {
			// Started before the last decrease, which already answered it.
			break
		}
		if a.evidence += signalEvidence; a.evidence >= evidenceThreshold {
			next := int(float64(l.limit) * decreaseFactor)
			if a.slowStart {
				// Doubling each round trip, the limit has overshot by up
				// to twice what the provider takes when the signal comes
				// back: go back to where the last round trip started.
				next = l.limit / 2
				a.slowStart = false
			}
			a.credit = 0
			a.evidence = 0
			a.gen.Add(1)
			l.setLimitLocked(max(1, next))
		}
	}
	return l.limit, l.limit != old
}
