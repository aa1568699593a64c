package retry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tenaxhq/tenax/classify"
)

func retryable(msg string) error {
	return classify.WithClass(errors.New(msg), classify.Retryable, "test")
}

// opError is an operation's own error type, which callers must reach with
// errors.As through a *retry.Error.
type opError struct{ status int }

func (e *opError) Error() string { return fmt.Sprintf("status %d", e.status) }

// flaky returns an operation that fails with errs in turn, then succeeds,
// and a pointer to its call count.
func flaky(errs ...error) (func(context.Context) error, *int) {
	calls := 0
	return func(context.Context) error {
		calls++
		if calls <= len(errs) {
			return errs[calls-1]
		}
		return nil
	}, &calls
}

func TestDoWaitsForServerHint(t *testing.T) {
	tests := []struct {
		name     string
		headers  func(now time.Time) map[string]string
		maxHint  time.Duration
		wantWait time.Duration
	}{
		{"Retry-After seconds", func(time.Time) map[string]string {
			return map[string]string{"Retry-After": "7"}
		}, 0, 7 * time.Second},
		{"Retry-After http date", func(now time.Time) map[string]string {
			return map[string]string{"Retry-After": now.Add(30 * time.Second).UTC().Format(http.TimeFormat)}
		}, 0, 30 * time.Second},
		{"retry-after-ms wins over Retry-After", func(time.Time) map[string]string {
			return map[string]string{"Retry-After": "7", "retry-after-ms": "1500"}
		}, 0, 1500 * time.Millisecond},
		{"hint above default MaxHint is capped at 2m", func(time.Time) map[string]string {
			return map[string]string{"Retry-After": "600"}
		}, 0, 2 * time.Minute},
		{"hint above MaxHint is capped", func(time.Time) map[string]string {
			return map[string]string{"Retry-After": "30"}
		}, 10 * time.Second, 10 * time.Second},
		{"negative MaxHint ignores hints", func(time.Time) map[string]string {
			return map[string]string{"Retry-After": "30"}
		}, -1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var events []RetryEvent
				p := Policy{
					MaxHint: tt.maxHint,
					Backoff: Backoff{Base: time.Second, Jitter: JitterNone},
					OnRetry: func(e RetryEvent) { events = append(events, e) },
				}
				calls := 0
				start := time.Now()
				err := p.Do(t.Context(), func(context.Context) error {
					calls++
					if calls > 1 {
						return nil
					}
					h := http.Header{}
					for k, v := range tt.headers(time.Now()) {
						h.Set(k, v)
					}
					d, ok := ParseHeaders(h, time.Now())
					if !ok {
						t.Fatalf("ParseHeaders(%v) found no hint", h)
					}
					return After(d, retryable("429 rate limited"))
				})
				if err != nil {
					t.Fatalf("Do = %v, want success on the second call", err)
				}
				if waited := time.Since(start); waited != tt.wantWait {
					t.Errorf("Do waited %v, want exactly %v", waited, tt.wantWait)
				}
				if len(events) != 1 || events[0].Hinted != (tt.maxHint >= 0) {
					t.Errorf("OnRetry events = %+v, want one with Hinted %v", events, tt.maxHint >= 0)
				}
			})
		})
	}
}

// docs/heal.md, "The loop": with max_attempts 3, [retryable, invalid output, retryable,
// retryable, valid output] ends in success after 5 calls, because the
// invalid answer was a successful call and resets the streak. A counter
// that did not reset would stop at the fourth call.
func TestConsecutiveCountResetsAfterSuccessfulCall(t *testing.T) {
	type call int
	const (
		failRetryable call = iota
		invalidOutput
		validOutput
	)
	sequence := []call{failRetryable, invalidOutput, failRetryable, failRetryable, validOutput}
	tests := []struct {
		name            string
		reportSuccess   bool // whether the invalid-output call is reported with Success
		wantSucceeded   bool
		wantCalls       int
		wantConsecutive int
		wantStopCause   error
	}{
		{"invalid output resets the streak", true, true, 5, 0, nil},
		{"without the reset three failures exhaust at call 4", false, false, 4, 3, ErrExhausted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := Policy{MaxAttempts: 3}.Start()
				calls, succeeded := 0, false
				var stop error
			loop:
				for _, c := range sequence {
					calls++
					switch c {
					case failRetryable:
						var delay time.Duration
						delay, _, stop = r.Failure(retryable("connection reset"))
						if stop != nil {
							break loop
						}
						if err := r.Wait(t.Context(), delay); err != nil {
							t.Fatalf("Wait: %v", err)
						}
					case invalidOutput:
						if tt.reportSuccess {
							r.Success()
						}
					case validOutput:
						r.Success()
						succeeded = true
					}
				}
				if succeeded != tt.wantSucceeded || calls != tt.wantCalls {
					t.Errorf("succeeded=%v after %d calls (stop: %v), want succeeded=%v after %d", succeeded, calls, stop, tt.wantSucceeded, tt.wantCalls)
				}
				if tt.wantStopCause != nil && !errors.Is(stop, tt.wantStopCause) {
					t.Errorf("stop = %v, want %v", stop, tt.wantStopCause)
				}
				if r.Consecutive() != tt.wantConsecutive {
					t.Errorf("Consecutive() = %d, want %d", r.Consecutive(), tt.wantConsecutive)
				}
				wantTotal := tt.wantCalls
				if !tt.reportSuccess {
					wantTotal-- // the unreported call is unknown to the Retrier
				}
				if r.Total() != wantTotal {
					t.Errorf("Total() = %d, want %d", r.Total(), wantTotal)
				}
			})
		})
	}
}

func TestDoStopsAtOnceOnNonRetryable(t *testing.T) {
	for _, class := range []classify.Class{classify.Fatal, classify.Item, classify.Invalid} {
		t.Run(class.String(), func(t *testing.T) {
			op, calls := flaky(classify.WithClass(&opError{status: 401}, class, "test"))
			err := Policy{}.Do(t.Context(), op)
			if *calls != 1 {
				t.Errorf("op was called %d times, want 1", *calls)
			}
			if !errors.Is(err, ErrNotRetryable) {
				t.Errorf("Do = %v, want ErrNotRetryable", err)
			}
			var oe *opError
			if !errors.As(err, &oe) || oe.status != 401 {
				t.Errorf("errors.As(%v, *opError) did not reach the op's error", err)
			}
			var re *Error
			if !errors.As(err, &re) || re.Decision.Class != class || re.Attempts != 1 {
				t.Errorf("*Error = %+v, want Decision.Class %v and 1 attempt", re, class)
			}
		})
	}
}

func TestDoGivesUpAfterMaxAttempts(t *testing.T) {
	tests := []struct {
		maxAttempts int
		wantCalls   int
		wantMessage string
	}{
		{1, 1, "gave up after 1 attempt: retries exhausted: boom"},
		{3, 3, "gave up after 3 attempts: retries exhausted: boom"},
		{0, DefaultMaxAttempts, "gave up after 5 attempts: retries exhausted: boom"},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.maxAttempts), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				calls := 0
				err := Policy{MaxAttempts: tt.maxAttempts}.Do(t.Context(), func(context.Context) error {
					calls++
					return retryable("boom")
				})
				if calls != tt.wantCalls {
					t.Errorf("op called %d times, want %d", calls, tt.wantCalls)
				}
				if !errors.Is(err, ErrExhausted) {
					t.Errorf("Do = %v, want ErrExhausted", err)
				}
				if err == nil || err.Error() != tt.wantMessage {
					t.Errorf("message = %q, want %q", err, tt.wantMessage)
				}
			})
		})
	}
}

func TestDoStopsBeforeWaitPastMaxElapsed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Policy{
			MaxAttempts: 10,
			MaxElapsed:  5 * time.Second,
			Backoff:     Backoff{Base: time.Second, Jitter: JitterNone},
		}
		calls := 0
		start := time.Now()
		err := p.Do(t.Context(), func(context.Context) error {
			calls++
			return retryable("timeout")
		})
		// Waits 1s and 2s; the third wait (4s) would end at 7s > 5s.
		if calls != 3 || !errors.Is(err, ErrMaxElapsed) {
			t.Errorf("Do = %v after %d calls, want ErrMaxElapsed after 3", err, calls)
		}
		if waited := time.Since(start); waited != 3*time.Second {
			t.Errorf("Do took %v, want 3s (it must not wait out a doomed delay)", waited)
		}
	})
}

func TestDoReturnsPromptlyWhenCanceledDuringWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(5*time.Second, cancel)
		p := Policy{Backoff: Backoff{Base: time.Hour, Max: time.Hour, Jitter: JitterNone}}
		start := time.Now()
		op, calls := flaky(retryable("503"), retryable("503"))
		err := p.Do(ctx, op)
		if waited := time.Since(start); waited != 5*time.Second {
			t.Errorf("Do returned after %v, want 5s when the context was canceled", waited)
		}
		if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) {
			t.Errorf("Do = %v, want ErrCanceled wrapping context.Canceled", err)
		}
		var re *Error
		if !errors.As(err, &re) || re.Attempts != 1 || re.Last == nil || re.Last.Error() != "503" {
			t.Errorf("*Error = %+v, want 1 attempt with the op's last error", re)
		}
		if *calls != 1 {
			t.Errorf("op called %d times, want 1", *calls)
		}
	})
}

func TestDoStopsOnCanceledError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	err := Policy{}.Do(ctx, func(ctx context.Context) error {
		calls++
		cancel()
		return ctx.Err()
	})
	if calls != 1 || !errors.Is(err, ErrCanceled) {
		t.Errorf("Do = %v after %d calls, want ErrCanceled after 1", err, calls)
	}
	if errors.Is(err, ErrNotRetryable) {
		t.Errorf("Do = %v, a canceled call must not read as not retryable", err)
	}
}

func TestDoWithDoneContextMakesNoCall(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	op, calls := flaky()
	err := Policy{}.Do(ctx, op)
	if *calls != 0 || !errors.Is(err, ErrCanceled) {
		t.Errorf("Do = %v after %d calls, want ErrCanceled and no call", err, *calls)
	}
	if want := "gave up after 0 attempts: retry canceled: context canceled"; err.Error() != want {
		t.Errorf("message = %q, want %q", err, want)
	}
}

func TestOnRetrySeesAttemptDelayAndClass(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var events []RetryEvent
		p := Policy{
			Backoff: Backoff{Base: time.Second, Jitter: JitterNone},
			OnRetry: func(e RetryEvent) { events = append(events, e) },
		}
		hinted := After(9*time.Second, retryable("429"))
		op, _ := flaky(retryable("reset"), retryable("reset"), hinted)
		if err := p.Do(t.Context(), op); err != nil {
			t.Fatalf("Do = %v, want success", err)
		}
		want := []struct {
			attempt int
			delay   time.Duration
			hinted  bool
		}{{1, time.Second, false}, {2, 2 * time.Second, false}, {3, 9 * time.Second, true}}
		if len(events) != len(want) {
			t.Fatalf("OnRetry called %d times, want %d: %+v", len(events), len(want), events)
		}
		for i, w := range want {
			e := events[i]
			if e.Attempt != w.attempt || e.Delay != w.delay || e.Hinted != w.hinted || e.Decision.Class != classify.Retryable || e.Err == nil {
				t.Errorf("event %d = {Attempt %d, Delay %v, Hinted %v, Class %v, Err %v}, want {%d, %v, %v, retryable, non-nil}",
					i, e.Attempt, e.Delay, e.Hinted, e.Decision.Class, e.Err, w.attempt, w.delay, w.hinted)
			}
		}
	})
}

func TestDoValueReturnsValueOfSuccessfulCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		v, err := DoValue(t.Context(), Policy{}, func(context.Context) (string, error) {
			calls++
			if calls < 2 {
				return "partial", retryable("reset")
			}
			return "done", nil
		})
		if v != "done" || err != nil {
			t.Errorf("DoValue = %q, %v; want \"done\", nil", v, err)
		}
		v, err = DoValue(t.Context(), Policy{MaxAttempts: 1}, func(context.Context) (string, error) {
			return "partial", retryable("reset")
		})
		if v != "" || !errors.Is(err, ErrExhausted) {
			t.Errorf("DoValue = %q, %v; want the zero value and ErrExhausted", v, err)
		}
	})
}

func TestSeedMakesJitterReproducible(t *testing.T) {
	p := Policy{MaxAttempts: 100, Seed: 42}
	a, b := p.Start(), p.Start()
	for i := range 20 {
		da, _, _ := a.Failure(retryable("x"))
		db, _, _ := b.Failure(retryable("x"))
		if da != db {
			t.Fatalf("failure %d: delays %v and %v differ under the same Seed", i+1, da, db)
		}
	}
}

func TestSuccessRestartsBackoff(t *testing.T) {
	r := Policy{Backoff: Backoff{Jitter: JitterNone}}.Start()
	r.Failure(retryable("x"))
	r.Failure(retryable("x"))
	r.Success()
	if d, _, _ := r.Failure(retryable("x")); d != time.Second {
		t.Errorf("first delay after a success = %v, want the base 1s again", d)
	}
}

func TestDoSuccessDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	p := Policy{}
	op := func(context.Context) error { return nil }
	if n := testing.AllocsPerRun(1000, func() { _ = p.Do(ctx, op) }); n != 0 {
		t.Errorf("Do on success allocated %v times per call, want 0", n)
	}
	opv := func(context.Context) (int, error) { return 1, nil }
	if n := testing.AllocsPerRun(1000, func() { _, _ = DoValue(ctx, p, opv) }); n != 0 {
		t.Errorf("DoValue on success allocated %v times per call, want 0", n)
	}
}

func BenchmarkDoSuccess(b *testing.B) {
	ctx := context.Background()
	p := Policy{}
	op := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := p.Do(ctx, op); err != nil {
			b.Fatal(err)
		}
	}
}

func TestStartAfterContinuesAStreakOfFailures(t *testing.T) {
	p := Policy{MaxAttempts: 4, Backoff: Backoff{Base: time.Second, Max: time.Minute, Jitter: JitterNone}}
	for _, tt := range []struct {
		after, failuresLeft int
	}{{0, 4}, {1, 3}, {3, 1}, {5, 1}} {
		r := p.StartAfter(tt.after)
		n := 0
		for {
			n++
			if _, _, stop := r.Failure(retryable("500")); stop != nil {
				break
			}
		}
		if n != tt.failuresLeft {
			t.Errorf("after %d failures, %d more failed before giving up; want %d (MaxAttempts 4 counts the whole streak)", tt.after, n, tt.failuresLeft)
		}
	}
	fresh, cont := p.Start(), p.StartAfter(2)
	d1, _, _ := fresh.Failure(retryable("500"))
	d3, _, _ := cont.Failure(retryable("500"))
	if d3 <= d1 {
		t.Errorf("the third failure of a streak waits %v, the first %v: the backoff should continue the streak", d3, d1)
	}
}

// TestContinueMeasuresMaxElapsedFromTheStart: an item read back from a
// batch ledger began long before this Retrier was made, and its
// retry.max_elapsed counts from then.
func TestContinueMeasuresMaxElapsedFromTheStart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := Policy{MaxElapsed: 10 * time.Minute, Backoff: Backoff{Base: time.Second, Jitter: JitterNone}}
		began := time.Now()
		time.Sleep(9*time.Minute + 30*time.Second)
		if _, _, stop := p.Continue(began, 1).Failure(retryable("500")); stop != nil {
			t.Fatalf("a wait of 2s ending at 9m32s stopped: %v", stop)
		}
		time.Sleep(29 * time.Second)
		_, _, stop := p.Continue(began, 1).Failure(retryable("500"))
		if !errors.Is(stop, ErrMaxElapsed) {
			t.Fatalf("a wait of 2s ending at 10m01s gave %v; want ErrMaxElapsed", stop)
		}
		if _, _, stop := p.Start().Failure(retryable("500")); stop != nil {
			t.Fatalf("a fresh Retrier measures from now, yet it stopped: %v", stop)
		}
	})
}
