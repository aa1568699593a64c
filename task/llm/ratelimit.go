package llm

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tenaxhq/tenax/retry"
)

// RateLimit is what a response's headers say about the provider's rate
// limits, for a limiter that adapts to the real limit (Config.OnRateLimit).
// A count whose header was absent is -1; a reset whose header was absent
// or unreadable is 0.
type RateLimit struct {
	// Provider is the Config's provider.
	Provider string
	// RequestsLimit and RequestsRemaining count requests per window.
	RequestsLimit, RequestsRemaining int
	// TokensLimit and TokensRemaining count tokens per window.
	TokensLimit, TokensRemaining int
	// RequestsReset and TokensReset are how long from the response until
	// the limits reset.
	RequestsReset, TokensReset time.Duration
	// RetryAfter is the same response's retry hint (retry-after-ms,
	// Retry-After), 0 when it gave none: the server's explicit word, which
	// a limiter should let win over what the counts imply.
	RetryAfter time.Duration
}

// ParseRateLimit reads the rate limit headers of a response in wire
// format "openai" (x-ratelimit-limit-requests, …, resets as Go-like
// durations: "6m0s", "1s", "20ms") or "anthropic"
// (anthropic-ratelimit-requests-limit, …, resets as RFC 3339 times, taken
// relative to now), and the response's retry hint. ok is false when the
// response has no rate-limit header.
func ParseRateLimit(wire string, h http.Header, now time.Time) (rl RateLimit, ok bool) {
	var names [6]string // req limit, req remaining, req reset, tok limit, tok remaining, tok reset
	var reset func(string) time.Duration
	if wire == ProviderAnthropic {
		names = [6]string{
			"anthropic-ratelimit-requests-limit", "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-requests-reset",
			"anthropic-ratelimit-tokens-limit", "anthropic-ratelimit-tokens-remaining", "anthropic-ratelimit-tokens-reset",
		}
		reset = func(v string) time.Duration {
			at, err := time.Parse(time.RFC3339, v)
			if err != nil {
				return 0
			}
			return max(at.Sub(now), 0)
		}
	} else {
		names = [6]string{
			"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
			"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens",
		}
		reset = parseResetDuration
	}
	count := func(name string) int {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			return -1
		}
		ok = true
		n, err := strconv.Atoi(v)
		if err != nil {
			return -1
		}
		return n
	}
	at := func(name string) time.Duration {
		v := strings.TrimSpace(h.Get(name))
		if v == "" {
			return 0
		}
		ok = true
		return reset(v)
	}
	rl = RateLimit{
		RequestsLimit: count(names[0]), RequestsRemaining: count(names[1]), RequestsReset: at(names[2]),
		TokensLimit: count(names[3]), TokensRemaining: count(names[4]), TokensReset: at(names[5]),
	}
	if d, hinted := retry.ParseHeaders(h, now); hinted {
		rl.RetryAfter = d
	}
	return rl, ok
}

// parseResetDuration reads OpenAI's reset values: Go-like durations
// ("6m0s", "1s", "20ms", "1h2m3.5s"), or bare seconds as some compatible
// servers send. Unreadable or negative values give 0.
func parseResetDuration(v string) time.Duration {
	if d, err := time.ParseDuration(v); err == nil {
		return max(d, 0)
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 && s < 1e9 {
		return time.Duration(s * float64(time.Second))
	}
	return 0
}
