package llm

import (
	"strings"

	"github.com/tenaxhq/tenax/task"
)

// Price is a model's price in US dollars per million tokens.
type Price struct {
	InputPerMTok, OutputPerMTok float64
	// CachedInputPerMTok prices input tokens read from the provider's
	// prompt cache; 0 means InputPerMTok.
	CachedInputPerMTok float64
	// CacheWritePerMTok prices input tokens written to Anthropic's prompt
	// cache; 0 means InputPerMTok.
	CacheWritePerMTok float64
}

// Cost returns the price of u: uncached input at InputPerMTok, cached
// input at CachedInputPerMTok, cache writes at CacheWritePerMTok, output
// (reasoning and thinking included) at OutputPerMTok.
func (p Price) Cost(u task.Usage) float64 {
	cached, write := p.CachedInputPerMTok, p.CacheWritePerMTok
	if cached == 0 {
		cached = p.InputPerMTok
	}
	if write == 0 {
		write = p.InputPerMTok
	}
	plain := max(u.InputTokens-u.CachedInputTokens-u.CacheWriteTokens, 0)
	return (float64(plain)*p.InputPerMTok + float64(u.CachedInputTokens)*cached +
		float64(u.CacheWriteTokens)*write + float64(u.OutputTokens)*p.OutputPerMTok) / 1e6
}

// DefaultPrices returns a fresh copy of the built-in price table: list
// prices of common OpenAI, Anthropic, Bedrock and Gemini models (with their cached-input
// and cache-write prices), and 0 for the mock's. Keys are model names and
// also match dated snapshots ("gpt-4o-mini-2024-07-18" is priced as
// "gpt-4o-mini").
func DefaultPrices() map[string]Price {
	return map[string]Price{
		"gpt-4o":            {2.50, 10.00, 1.25, 0},
		"gpt-4o-mini":       {0.15, 0.60, 0.075, 0},
		"gpt-4.1":           {2.00, 8.00, 0.50, 0},
		"gpt-4.1-mini":      {0.40, 1.60, 0.10, 0},
		"gpt-4.1-nano":      {0.10, 0.40, 0.025, 0},
		"gpt-5":             {1.25, 10.00, 0.125, 0},
		"gpt-5-mini":        {0.25, 2.00, 0.025, 0},
		"gpt-5-nano":        {0.05, 0.40, 0.005, 0},
		"o3":                {2.00, 8.00, 0.50, 0},
		"o3-mini":           {1.10, 4.40, 0.55, 0},
		"o4-mini":           {1.10, 4.40, 0.275, 0},
		"claude-3-5-haiku":  {0.80, 4.00, 0.08, 1.00},
		"claude-haiku-4-5":  {1.00, 5.00, 0.10, 1.25},
		"claude-sonnet-4":   {3.00, 15.00, 0.30, 3.75},
		"claude-sonnet-4-5": {3.00, 15.00, 0.30, 3.75},
		"claude-opus-4":     {15.00, 75.00, 1.50, 18.75},
		"claude-opus-4-1":   {15.00, 75.00, 1.50, 18.75},
		// Bedrock's on-demand prices (us-east-1), by model id.
		"anthropic.claude-3-5-haiku":  {0.80, 4.00, 0.08, 1.00},
		"anthropic.claude-haiku-4-5":  {1.00, 5.00, 0.10, 1.25},
		"anthropic.claude-sonnet-4":   {3.00, 15.00, 0.30, 3.75},
		"anthropic.claude-sonnet-4-5": {3.00, 15.00, 0.30, 3.75},
		"amazon.nova-micro":           {0.035, 0.14, 0.00875, 0},
		"amazon.nova-lite":            {0.06, 0.24, 0.015, 0},
		"amazon.nova-pro":             {0.80, 3.20, 0.20, 0},
		// Gemini's list prices (the Gemini API's paid tier, prompts up to
		// 200k tokens; Vertex AI's are the same), cached input at its
		// context-caching price.
		"gemini-2.5-pro":        {1.25, 10.00, 0.31, 0},
		"gemini-2.5-flash":      {0.30, 2.50, 0.075, 0},
		"gemini-2.5-flash-lite": {0.10, 0.40, 0.025, 0},
		"gemini-2.0-flash":      {0.10, 0.40, 0.025, 0},
		"gemini-2.0-flash-lite": {0.075, 0.30, 0.01875, 0},
		"mock-echo":             {0, 0, 0, 0},
		"mock-json":             {0, 0, 0, 0},
	}
}

// LookupPrice returns the price of model from extra, then from the
// built-in table. A key matches the model itself or the model followed by
// "-" and more (a dated snapshot); the longest matching key wins, and an
// extra entry beats a built-in one of the same length. ok is false for an
// unknown model. A Bedrock inference profile ("us.amazon.nova-lite-v1:0")
// not named itself is priced as its model.
func LookupPrice(extra map[string]Price, model string) (Price, bool) {
	p, n := longestMatch(extra, model)
	if q, m := longestMatch(DefaultPrices(), model); m > n {
		p, n = q, m
	}
	if n < 0 {
		for _, geo := range []string{"us.", "eu.", "apac.", "us-gov.", "global."} {
			if rest, ok := strings.CutPrefix(model, geo); ok {
				return LookupPrice(extra, rest)
			}
		}
	}
	return p, n >= 0
}

// longestMatch returns the price of the longest key of table matching
// model, and that key's length; -1 when none does. A key matches the
// model of its name, a dated one (-20250929), and Vertex AI's id of a
// Claude model (claude-sonnet-4-5@20250929).
func longestMatch(table map[string]Price, model string) (Price, int) {
	var p Price
	best := -1
	for k, v := range table {
		if len(k) > best && (model == k || strings.HasPrefix(model, k+"-") || strings.HasPrefix(model, k+"@")) {
			p, best = v, len(k)
		}
	}
	return p, best
}
