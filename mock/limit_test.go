package mock

import (
	"context"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRequestLimitRefillsContinuously(t *testing.T) {
	for _, d := range []string{"openai", "anthropic"} {
		t.Run(d, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Config{RPM: 60})
				remaining := map[string]string{"openai": "x-ratelimit-remaining-requests", "anthropic": "anthropic-ratelimit-requests-remaining"}[d]
				for i := range 60 {
					c := inProcess(t.Context(), s, d, ModelEcho, "hi")
					if c.status != 200 || c.header.Get(remaining) != strconv.Itoa(59-i) {
						t.Fatalf("request %d of a full bucket of 60: status %d, %s = %q; want 200 and %d", i, c.status, remaining, c.header.Get(remaining), 59-i)
					}
				}
				c := inProcess(t.Context(), s, d, ModelEcho, "hi")
				if c.status != 429 || c.header.Get("Retry-After") != "1" {
					t.Fatalf("61st request at once: status %d, Retry-After %q; want 429 and 1 (one request refills in a second at 60 RPM)", c.status, c.header.Get("Retry-After"))
				}
				typ, code, msg := errorFields(t, d, c.body)
				if d == "openai" && (typ != "requests" || code != "rate_limit_exceeded" || !strings.Contains(msg, "Limit 60, Used 60") || c.header.Get("retry-after-ms") != "1000") {
					t.Errorf("429 = %q %q %q, retry-after-ms %q; want type requests, code rate_limit_exceeded, Limit 60, Used 60, 1000 ms", typ, code, msg, c.header.Get("retry-after-ms"))
				}
				if d == "anthropic" && (typ != "rate_limit_error" || c.header.Get("x-should-retry") != "true") {
					t.Errorf("429 type %q, x-should-retry %q; want rate_limit_error and true", typ, c.header.Get("x-should-retry"))
				}
				time.Sleep(time.Second)
				if c := inProcess(t.Context(), s, d, ModelEcho, "hi"); c.status != 200 {
					t.Errorf("a second later: status %d, want 200: %s", c.status, c.body)
				}
				if st := s.Stats(); st.RateLimited != 1 || st.Succeeded != 61 {
					t.Errorf("stats = %+v, want 1 rate limited, 61 succeeded", st)
				}
			})
		})
	}
}

// TestClientAt110PercentSeesTheRefillTime: a client sending 10% faster
// than the limit for a while gets the limit's worth of answers, no
// 429 asks it to wait longer than one request's refill, and
// every 429's retry-after is the true refill time: waiting 90% of it is
// still refused, waiting all of it is served.
func TestClientAt110PercentSeesTheRefillTime(t *testing.T) {
	tests := []struct {
		dialect string
		rpm     int
		header  string
		unit    time.Duration
		run     time.Duration
	}{
		{"openai", 60, "retry-after-ms", time.Millisecond, 20 * time.Minute},
		{"anthropic", 6, "retry-after", time.Second, time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Config{RPM: tt.rpm})
				// Irregular gaps (a mean of 110% of the limit) so that the
				// client does not beat in step with the refill.
				mean := float64(time.Minute) / (1.1 * float64(tt.rpm))
				rng := rand.New(rand.NewPCG(1, 2))
				start := time.Now()
				admitted, refused, probed := 0, 0, 0
				for time.Since(start) < tt.run {
					c := inProcess(t.Context(), s, tt.dialect, ModelEcho, "hi")
					switch c.status {
					case 200:
						admitted++
					case 429:
						refused++
						n, err := strconv.Atoi(c.header.Get(tt.header))
						if err != nil {
							t.Fatalf("429 without %s: %v", tt.header, c.header)
						}
						wait := time.Duration(n) * tt.unit
						if wait > time.Minute/time.Duration(tt.rpm)+tt.unit {
							t.Fatalf("%s = %s, longer than one request's refill (%s)", tt.header, wait, time.Minute/time.Duration(tt.rpm))
						}
						// Probe every few 429s (a refused request takes nothing).
						if refused%3 == 1 && wait >= 2*tt.unit {
							probed++
							early := min(wait*9/10, wait-tt.unit) // retry-after rounds up to its unit
							time.Sleep(early)
							if c := inProcess(t.Context(), s, tt.dialect, ModelEcho, "hi"); c.status != 429 {
								t.Fatalf("after %s of a %s %s: status %d, want still 429", early, tt.header, wait, c.status)
							}
							time.Sleep(wait - early)
							if c := inProcess(t.Context(), s, tt.dialect, ModelEcho, "hi"); c.status != 200 {
								t.Fatalf("after the whole %s %s: status %d, want 200", tt.header, wait, c.status)
							}
							admitted++
							continue
						}
					default:
						t.Fatalf("status %d: %s", c.status, c.body)
					}
					time.Sleep(time.Duration(mean * (0.6 + 0.8*rng.Float64())))
				}
				elapsed := time.Since(start)
				want := float64(tt.rpm) + float64(tt.rpm)*elapsed.Minutes()
				if got := float64(admitted); got > want+1 || got < want*0.97 {
					t.Errorf("admitted %d in %s, want about %.0f (the bucket plus %d a minute)", admitted, elapsed.Round(time.Second), want, tt.rpm)
				}
				if refused == 0 || probed == 0 {
					t.Errorf("%d refused, %d probed: the client at 110%% must meet the limit", refused, probed)
				}
			})
		})
	}
}

func TestTokenLimitCountsPromptAndMaxTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TPM: 250})
		prompt := strings.Repeat("x", 200) // 50 tokens + max_tokens 100
		c := inProcess(t.Context(), s, "openai", ModelEcho, prompt)
		if c.status != 200 || c.header.Get("x-ratelimit-remaining-tokens") != "100" || c.header.Get("x-ratelimit-limit-tokens") != "250" {
			t.Fatalf("status %d, remaining tokens %q; want 200 and 100", c.status, c.header.Get("x-ratelimit-remaining-tokens"))
		}
		if got := c.header.Get("x-ratelimit-reset-tokens"); got != "36s" {
			t.Errorf("x-ratelimit-reset-tokens = %q, want 36s (150 of 250 tokens a minute refill in 36s)", got)
		}
		c = inProcess(t.Context(), s, "openai", ModelEcho, prompt)
		if c.status != 429 || c.header.Get("Retry-After") != "12" || c.header.Get("retry-after-ms") != "12000" {
			t.Fatalf("status %d, Retry-After %q, retry-after-ms %q; want 429, 12, 12000 (50 missing tokens at 250 a minute)", c.status, c.header.Get("Retry-After"), c.header.Get("retry-after-ms"))
		}
		if typ, _, msg := errorFields(t, "openai", c.body); typ != "tokens" || !strings.Contains(msg, "Please try again in 12s") {
			t.Errorf("type = %q, message %q; want tokens and 'try again in 12s'", typ, msg)
		}
	})
}

func TestRequestLargerThanTheLimitIsTooLarge(t *testing.T) {
	for _, d := range []string{"openai", "anthropic"} {
		t.Run(d, func(t *testing.T) {
			s := New(Config{TPM: 50})
			c := inProcess(t.Context(), s, d, ModelEcho, "hi") // max_tokens 100 > 50
			if c.status != 429 || c.header.Get("Retry-After") != "" {
				t.Fatalf("status %d, Retry-After %q; want 429 without Retry-After", c.status, c.header.Get("Retry-After"))
			}
			_, _, msg := errorFields(t, d, c.body)
			if !strings.Contains(strings.ToLower(msg), "request too large") {
				t.Errorf("message %q lacks 'Request too large'", msg)
			}
			if d == "anthropic" && c.header.Get("x-should-retry") != "false" {
				t.Errorf("x-should-retry = %q, want false", c.header.Get("x-should-retry"))
			}
		})
	}
}

func TestLimitsArePerModelAndDialect(t *testing.T) {
	s := New(Config{RPM: 1})
	for _, r := range []struct {
		dialect, model string
		status         int
	}{
		{"openai", ModelEcho, 200}, {"openai", ModelJSON, 200}, {"anthropic", ModelEcho, 200}, {"openai", ModelEcho, 429},
	} {
		if c := inProcess(t.Context(), s, r.dialect, r.model, "hi"); c.status != r.status {
			t.Errorf("%s %s: status %d, want %d", r.dialect, r.model, c.status, r.status)
		}
	}
}

func TestAnthropicGivesBackUnusedOutputTokens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Config{TPM: 1000})
		ask := func() call {
			return post(t.Context(), s.Client(), "http://mock.invalid", "anthropic", ModelEcho, testKey, "", 500, "hi")
		}
		if c := ask(); c.header.Get("anthropic-ratelimit-output-tokens-remaining") != "500" {
			t.Fatalf("first: output tokens remaining %q, want 500 (max_tokens reserved)", c.header.Get("anthropic-ratelimit-output-tokens-remaining"))
		}
		c := ask()
		if c.status != 200 || c.header.Get("anthropic-ratelimit-output-tokens-remaining") != "499" {
			t.Errorf("second: status %d, output tokens remaining %q; want 200 and 499 (the first answer used 1 of its 500)", c.status, c.header.Get("anthropic-ratelimit-output-tokens-remaining"))
		}
		if c.header.Get("anthropic-ratelimit-tokens-remaining") != "499" {
			t.Errorf("tokens-remaining = %q, want the tighter of input and output, 499", c.header.Get("anthropic-ratelimit-tokens-remaining"))
		}
	})
}

func TestLimitHeadersOnEveryAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, tt := range []struct {
			dialect string
			faults  Faults
			headers []string
		}{
			{"openai", Faults{}, []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-requests"}},
			{"openai", Faults{RateLimit: 1}, []string{"x-ratelimit-limit-requests", "x-ratelimit-reset-tokens"}},
			{"anthropic", Faults{}, []string{"anthropic-ratelimit-requests-reset", "anthropic-ratelimit-input-tokens-limit", "anthropic-ratelimit-output-tokens-remaining", "anthropic-ratelimit-tokens-reset"}},
			{"anthropic", Faults{Server: 1}, []string{"anthropic-ratelimit-requests-limit"}},
		} {
			c := inProcess(t.Context(), New(Config{Faults: tt.faults}), tt.dialect, ModelEcho, "hi")
			for _, h := range tt.headers {
				if c.header.Get(h) == "" {
					t.Errorf("%s %+v: status %d without %s", tt.dialect, tt.faults, c.status, h)
				}
			}
			if got := c.header.Get(tt.headers[0]); got != "" && got != "1000000" && !strings.Contains(tt.headers[0], "reset") {
				t.Errorf("%s = %q, want the unlimited tier's 1000000", tt.headers[0], got)
			}
		}
		s := New(Config{RPM: 10})
		c := inProcess(context.Background(), s, "anthropic", ModelEcho, "hi")
		at, err := time.Parse(time.RFC3339, c.header.Get("anthropic-ratelimit-requests-reset"))
		if err != nil {
			t.Fatalf("requests-reset %q: %v", c.header.Get("anthropic-ratelimit-requests-reset"), err)
		}
		if d := time.Until(at); d != 6*time.Second {
			t.Errorf("requests-reset is %v from now, want 6s (one of 10 requests a minute)", d)
		}
	})
}
