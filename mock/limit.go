package mock

import (
	"math"
	"time"
)

// The limits a zero RPM or TPM stands for: announced in the headers like
// real ones, too high to reach.
const (
	unlimitedRPM = 1_000_000
	unlimitedTPM = 1_000_000_000
)

// bucket is a token bucket of size limit refilled continuously at limit
// per minute, the model of the providers' rate limits: a request that
// takes n leaves the bucket lighter by n, and after a 429 the wait is the
// time the refill takes to bring back what the request lacks (one request
// at 60 RPM: a second), never a whole minute.
type bucket struct {
	limit float64   // capacity, and refill per minute
	level float64   // what is left, as of at
	at    time.Time // when level was last brought up to date
}

func newBucket(limit int, now time.Time) *bucket {
	return &bucket{limit: float64(limit), level: float64(limit), at: now}
}

// refill brings level up to date at now.
func (b *bucket) refill(now time.Time) {
	if now.After(b.at) {
		b.level = min(b.limit, b.level+b.limit*now.Sub(b.at).Minutes())
		b.at = now
	}
}

// wait is how long until the bucket holds n; 0 when it does now.
func (b *bucket) wait(n float64) time.Duration {
	if b.level >= n {
		return 0
	}
	return time.Duration(math.Ceil((n - b.level) / b.limit * float64(time.Minute)))
}

// untilFull is how long until the bucket is full again: the providers'
// reset time.
func (b *bucket) untilFull() time.Duration { return b.wait(b.limit) }

// remaining is what is left, rounded down.
func (b *bucket) remaining() int { return int(math.Floor(max(b.level, 0))) }

// meter is one bucket as a response reports it.
type meter struct {
	limit, remaining int
	reset            time.Duration // until full
}

func (b *bucket) meter() meter {
	return meter{limit: int(b.limit), remaining: b.remaining(), reset: b.untilFull()}
}

// limitKey names the limits of one model in one dialect: the providers
// limit each model separately.
type limitKey struct{ dialect, model string }

// limiter holds one model's buckets. OpenAI's tokens bucket counts a
// request's prompt and max_tokens; Anthropic's counts input tokens, and
// its output bucket counts max_tokens, adjusted once the answer is known.
type limiter struct {
	requests, tokens, output *bucket // output is nil for OpenAI
}

// cost is what one request takes from a limiter.
type cost struct {
	tokens int // prompt (+ max_tokens for OpenAI)
	output int // Anthropic: max_tokens
}

// Which bucket refused a request.
const (
	byRequests = iota + 1
	byTokens
	byOutput
)

// limitState is a limiter after an admission, as a response reports it.
type limitState struct {
	refused    int           // 0 when admitted, else byRequests, byTokens or byOutput
	tooLarge   bool          // the request exceeds a whole limit: it never fits
	retryAfter time.Duration // when refused and not tooLarge: until it fits
	used       int           // of the refusing bucket, rounded up
	requested  int           // from the refusing bucket

	requests, tokens, output meter
	hasOutput                bool
}

// admit takes c from the buckets if all of them hold it; otherwise it
// takes nothing and says which refused and for how long.
func (l *limiter) admit(now time.Time, c cost) limitState {
	buckets := []*bucket{l.requests, l.tokens, l.output}
	need := []float64{1, float64(c.tokens), float64(c.output)}
	var st limitState
	for i, b := range buckets {
		if b == nil {
			continue
		}
		b.refill(now)
		if st.refused != 0 {
			continue
		}
		switch {
		case need[i] > b.limit:
			st.refused, st.tooLarge = i+1, true
		case b.level < need[i]:
			st.refused, st.retryAfter = i+1, b.wait(need[i])
		default:
			continue
		}
		st.used = int(math.Ceil(b.limit - b.level))
		st.requested = int(need[i])
	}
	if st.refused != 0 && !st.tooLarge {
		// The wait is until every bucket holds its share.
		for i, b := range buckets {
			if b != nil {
				st.retryAfter = max(st.retryAfter, b.wait(need[i]))
			}
		}
	}
	if st.refused == 0 {
		for i, b := range buckets {
			if b != nil {
				b.level -= need[i]
			}
		}
	}
	st.requests, st.tokens = l.requests.meter(), l.tokens.meter()
	if l.output != nil {
		st.output, st.hasOutput = l.output.meter(), true
	}
	return st
}

// giveBack returns n output tokens an answer reserved but did not use.
func (l *limiter) giveBack(now time.Time, n int) {
	if l.output == nil || n <= 0 {
		return
	}
	l.output.refill(now)
	l.output.level = min(l.output.limit, l.output.level+float64(n))
}

// admit applies the limits of d's model at now.
func (s *Server) admit(d *dialect, model string, now time.Time, c cost) limitState {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := limitKey{d.name, model}
	l := s.limits[k]
	if l == nil {
		rpm, tpm := s.cfg.RPM, s.cfg.TPM
		if rpm == 0 {
			rpm = unlimitedRPM
		}
		if tpm == 0 {
			tpm = unlimitedTPM
		}
		l = &limiter{requests: newBucket(rpm, now), tokens: newBucket(tpm, now)}
		if d.outputLimit {
			l.output = newBucket(tpm, now)
		}
		s.limits[k] = l
	}
	return l.admit(now, c)
}

// giveBack returns an answer's unused output tokens to d's model.
func (s *Server) giveBack(d *dialect, model string, now time.Time, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if l := s.limits[limitKey{d.name, model}]; l != nil {
		l.giveBack(now, n)
	}
}
