package retry

import (
	"math"
	"math/rand/v2"
	"time"
)

// Defaults of Backoff's zero fields.
const (
	DefaultBase       = time.Second
	DefaultMultiplier = 2.0
	DefaultMax        = 60 * time.Second
)

// Backoff computes the delay before each retry: exponential growth from
// Base by Multiplier, capped at Max, randomized by Jitter, and finally
// clamped to [Min, Max]. It is a plain value with no state of its own, so
// one Backoff serves any number of items at once; the little state that
// decorrelated jitter needs (the previous delay) is passed in.
//
// Zero fields take defaults: Base 1s, Multiplier 2, Max 60s, Min 0,
// Jitter proportional.
type Backoff struct {
	// Base is the delay before the first retry, before jitter. Zero
	// means 1s.
	Base time.Duration
	// Multiplier is the growth factor per retry. Zero or less means 2;
	// 1 gives a constant delay.
	Multiplier float64
	// Min is the least delay after jitter (default 0).
	Min time.Duration
	// Max caps the exponential term and, after jitter, the delay itself.
	// Zero means 60s. When Min exceeds Max, Max wins.
	Max time.Duration
	// Jitter is how the delay is randomized (default proportional).
	Jitter Jitter
}

func (b Backoff) base() time.Duration {
	if b.Base <= 0 {
		return DefaultBase
	}
	return b.Base
}

func (b Backoff) multiplier() float64 {
	if b.Multiplier <= 0 || math.IsNaN(b.Multiplier) {
		return DefaultMultiplier
	}
	return b.Multiplier
}

func (b Backoff) max() time.Duration {
	if b.Max <= 0 {
		return DefaultMax
	}
	return b.Max
}

// exponential returns min(max, base × multiplier^(n-1)) for retry n ≥ 1,
// computed in floating point so that no n overflows.
func (b Backoff) exponential(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	limit := b.max()
	d := float64(b.base()) * math.Pow(b.multiplier(), float64(n-1))
	if math.IsNaN(d) || d >= float64(limit) {
		return limit
	}
	return time.Duration(d)
}

// Delay returns the wait before retry n (n = 1 for the first retry):
// min(Max, Base × Multiplier^(n-1)), then jitter, then clamped to
// [Min, Max]. prev is the delay returned for the previous retry (0 for
// the first); only JitterDecorrelated uses it. rnd is the random source;
// nil uses math/rand/v2's global, concurrency-safe source. n below 1 is
// taken as 1, and a huge n simply gives Max.
func (b Backoff) Delay(n int, prev time.Duration, rnd *rand.Rand) time.Duration {
	d := b.exponential(n)
	switch b.Jitter {
	case JitterProportional:
		d = scale(d, 0.5+float64v(rnd))
	case JitterFull:
		d = scale(d, float64v(rnd))
	case JitterEqual:
		d = d/2 + scale(d/2, float64v(rnd))
	case JitterDecorrelated:
		d = b.decorrelated(prev, rnd)
	}
	return b.clamp(d)
}

// decorrelated draws from U(base, 3 × prev), where prev is at least base.
func (b Backoff) decorrelated(prev time.Duration, rnd *rand.Rand) time.Duration {
	base := b.base()
	prev = max(prev, base)
	upper := 3 * float64(prev)
	limit := float64(b.max())
	if upper > limit {
		upper = limit
	}
	if upper <= float64(base) {
		return base
	}
	return time.Duration(float64(base) + (upper-float64(base))*float64v(rnd))
}

func (b Backoff) clamp(d time.Duration) time.Duration {
	if d < b.Min {
		d = b.Min
	}
	return min(d, b.max())
}

// Schedule returns the delays before retries 1..n without jitter (but
// clamped to [Min, Max]), so a policy can be printed and checked by eye.
func (b Backoff) Schedule(n int) []time.Duration {
	if n <= 0 {
		return nil
	}
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = b.clamp(b.exponential(i + 1))
	}
	return out
}

// scale returns d × f without overflowing: the result saturates at the
// largest Duration.
func scale(d time.Duration, f float64) time.Duration {
	x := float64(d) * f
	if x >= math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(x)
}

// float64v returns a draw from [0, 1) from rnd, or from the global source
// when rnd is nil.
func float64v(rnd *rand.Rand) float64 {
	if rnd == nil {
		return rand.Float64()
	}
	return rnd.Float64()
}
