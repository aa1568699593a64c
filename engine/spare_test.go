package engine_test

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/task"
)

// answeringBucket is a provider's request quota as the LLM task reports
// it: a bucket holding up to a minute of the limit, refilled
// continuously, that counts a call when it arrives and sends its level
// back in the call's Result a latency later. Every sporadicEvery-th call
// it admits is answered 429 all the same, with a retry hint and headers
// that show room: a sporadic 429.
type answeringBucket struct {
	mu            sync.Mutex
	perMinute     int
	level         float64
	last          time.Time
	latency       time.Duration
	sporadicEvery int

	admitted, refused int
	levels            []float64 // left after each call admitted
}

// median is the median level left after the calls admitted in the middle
// half of the run, its steady state.
func (b *answeringBucket) median() float64 {
	mid := slices.Clone(b.levels[len(b.levels)/4 : 3*len(b.levels)/4])
	slices.Sort(mid)
	return mid[len(mid)/2]
}

func (b *answeringBucket) Run(ctx context.Context, _ task.Item) (task.Result, error) {
	b.mu.Lock()
	now := time.Now()
	b.level = min(float64(b.perMinute), b.level+now.Sub(b.last).Minutes()*float64(b.perMinute))
	b.last = now
	took := b.level >= 1
	sporadic := false
	if took {
		b.level--
		b.admitted++
		b.levels = append(b.levels, b.level)
		sporadic = b.sporadicEvery > 0 && b.admitted%b.sporadicEvery == 0
	} else {
		b.refused++
	}
	q := &task.Quota{RequestsLimit: b.perMinute, RequestsRemaining: int(math.Floor(b.level)),
		RequestsReset: time.Duration((float64(b.perMinute) - b.level) / float64(b.perMinute) * float64(time.Minute)),
		TokensLimit:   -1, TokensRemaining: -1}
	b.mu.Unlock()
	if !took {
		q.RetryAfter = time.Duration(float64(time.Minute) / float64(b.perMinute))
		return task.Result{Quota: q}, classify.WithClass(hinted429{q.RetryAfter}, classify.Retryable, "test")
	}
	time.Sleep(b.latency)
	if sporadic {
		q.RetryAfter = 10 * time.Millisecond
		return task.Result{Quota: q}, classify.WithClass(hinted429{q.RetryAfter}, classify.Retryable, "test")
	}
	res, err := ok("x")
	res.Quota = q
	return res, err
}

// TestTheBucketsSpareIsSpent: the provider's bucket held about 60 calls
// unused all run long at 6,000 rpm and 300 ms: the learned limiter
// mirrored the headers' remaining count less the calls under way, which
// dates it a round trip back, and never gave back what a first round trip
// at concurrency 4 left, so the run ended with that much still in the
// bucket. The bucket, dated by the calls started since each answer, is
// now spent down to a reserve of 100 ms of the rate (10 calls); and a sporadic
// 429, whose headers show that reserve, still reads as sporadic (compared
// with the 30 calls under way it read as the limit, a cooldown each).
func TestTheBucketsSpareIsSpent(t *testing.T) {
	for _, tt := range []struct {
		name          string
		sporadicEvery int
	}{
		{"no sporadic 429s", 0},
		{"a sporadic 429 every 25th call", 25},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 6,000 a minute (100 a second), 300 ms a call: 30 calls
				// under way at the pace; 30 calls in the bucket at the
				// start, which a first round trip at 4 does not use.
				b := &answeringBucket{perMinute: 6000, level: 30, last: time.Now(), latency: 300 * time.Millisecond, sporadicEvery: tt.sporadicEvery}
				var mu sync.Mutex
				cooldowns := 0
				onEvent := func(ev engine.Event) {
					if ev.Kind == engine.Cooldown {
						mu.Lock()
						cooldowns++
						mu.Unlock()
					}
				}
				e := engine.New(engine.Config{Concurrency: 64, Adaptive: true, Retry: fastRetry, OnEvent: onEvent}, b, newMemJob())
				if _, err := e.Run(context.Background(), items(3000)); err != nil {
					t.Fatal(err)
				}
				if m := b.median(); m > 13 {
					t.Errorf("the bucket held a median of %.1f calls unused after each call it admitted, want at most 13: the spare the headers showed must be spent", m)
				}
				if b.refused > 0 {
					t.Errorf("%d calls refused for an empty bucket, want none: the spare spent must not overdraw it", b.refused)
				}
				if cooldowns > 0 {
					t.Errorf("%d cooldowns, want none: a sporadic 429 whose headers show room is about its own call", cooldowns)
				}
			})
		})
	}
}
