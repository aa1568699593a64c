package llm

import (
	"strconv"

	"github.com/tenaxhq/tenax/task"
)

// maxCallTokens is the most tokens one count of one call's usage can
// hold: no context window comes near it, and a paused Anthropic turn sent
// back 8 times stays far below. A count past it (2^64-1, which int64 reads
// as -9.2e18) is a provider's or a proxy's error.
const maxCallTokens = 1 << 30

// usageCounts reads a response's token counts, noting those no call can
// have spent.
type usageCounts struct {
	impossible string // the impossible counts as reported: "prompt_tokens=-1e+06"
}

// count returns the count f reported under name, or -1 (noted) when it is
// impossible: negative, not a number, or past maxCallTokens. A fraction
// is cut, as the SDKs' integer fields would.
func (n *usageCounts) count(name string, f float64) int64 {
	if f >= 0 && f <= maxCallTokens {
		return int64(f)
	}
	if n.impossible != "" {
		n.impossible += ", "
	}
	n.impossible += name + "=" + strconv.FormatFloat(f, 'g', -1, 64)
	return -1
}

// possibleUsage returns u with each count that was impossible (-1) replaced
// by the call's estimate: input by the prompt's estimated tokens, output
// by max_tokens, so that a token budget counts at least what the call
// could have spent; the cache and reasoning details by 0. u.Impossible
// says which counts were replaced.
func possibleUsage(u task.Usage, promptEstimate, maxTokens int64) task.Usage {
	if u.Impossible == "" {
		return u
	}
	if u.InputTokens < 0 {
		u.InputTokens = promptEstimate
	}
	if u.OutputTokens < 0 {
		u.OutputTokens = maxTokens
	}
	u.CachedInputTokens = min(max(u.CachedInputTokens, 0), u.InputTokens)
	u.CacheWriteTokens = min(max(u.CacheWriteTokens, 0), u.InputTokens)
	u.ReasoningTokens = min(max(u.ReasoningTokens, 0), u.OutputTokens)
	return u
}
