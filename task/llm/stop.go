package llm

import (
	"fmt"
	"strconv"
)

// The kinds of answer a provider ended without a usable result, as
// StopError.Kind says them.
const (
	// stopRefused: the model declined (OpenAI's message.refusal,
	// Anthropic's stop_reason "refusal").
	stopRefused = "refusal"
	// stopFiltered: the provider's content filter cut the answer
	// (finish_reason "content_filter").
	stopFiltered = "content filter"
	// stopTruncated: the answer hit max_tokens, or the context window.
	stopTruncated = "truncated"
	// stopPaused: Anthropic paused the turn (stop_reason "pause_turn")
	// and it was not continued to its end.
	stopPaused = "paused"
)

// truncatedPhrase is in the message of every StopError of a cut-off
// answer, so that the re-ask it leads to can tell (from the feedback) that
// max_tokens should be raised.
const truncatedPhrase = "the answer was cut off"

// StopError reports an answer the provider ended without a usable result:
// refused by the model, stopped by a content filter, cut off at
// max_tokens, or paused. A refusal or a filter is the item's
// (classify.Item) and carries the provider's words; a cut-off answer is
// invalid output for the heal loop to re-ask, or the item's when healing
// is off; a turn still paused after it was sent back (or in a batch, where
// it cannot be) is unfinished and classify.Retryable.
type StopError struct {
	// Provider is the Config's provider.
	Provider string
	// FinishReason is the provider's finish_reason or stop_reason.
	FinishReason string
	// Kind is "refusal", "content filter", "truncated" or "paused".
	Kind string
	// Words are the provider's explanation of a refusal, "" when it gave
	// none.
	Words string
	// MaxTokens is the cap a truncated answer hit.
	MaxTokens int
	// ContentFilter is Azure's verdict on a filtered answer
	// (content_filter_results): the categories filtered, detected or
	// rated above safe, with their severities; "" when it gave none.
	ContentFilter string
}

func (e *StopError) Error() string {
	switch e.Kind {
	case stopTruncated:
		if e.FinishReason == "model_context_window_exceeded" {
			return truncatedPhrase + " by the model's context window (stop_reason model_context_window_exceeded): shorten the prompt or the answer"
		}
		return truncatedPhrase + " at max_tokens " + strconv.Itoa(e.MaxTokens) + " (finish_reason " + e.FinishReason +
			"): answer more briefly, or raise task.max_tokens (or task.max_tokens_ceiling)"
	case stopPaused:
		return "the turn was paused before its end (stop_reason " + e.FinishReason + ") and not finished: the answer so far is not the answer"
	case stopFiltered:
		why := "finish_reason " + e.FinishReason
		if e.ContentFilter != "" {
			why += "; " + e.ContentFilter
		}
		if e.Words != "" {
			return fmt.Sprintf("%s's content filter stopped the answer (%s): %s", e.Provider, why, e.Words)
		}
		return fmt.Sprintf("%s's content filter stopped the answer (%s)", e.Provider, why)
	}
	if e.Words != "" {
		return "the model refused: " + e.Words
	}
	return "the model refused (finish_reason " + e.FinishReason + ")"
}

// stopKind says whether rep ended without a usable result, and how; "" when
// it did not.
func stopKind(rep reply) string {
	switch rep.finish {
	case "refusal":
		return stopRefused
	case "content_filter", "content_filtered", "guardrail_intervened":
		// content_filtered and guardrail_intervened are Bedrock's: its
		// filter, or the guardrail the account attached.
		return stopFiltered
	case "length", "max_tokens", "model_context_window_exceeded", "MAX_TOKENS":
		// MAX_TOKENS is Gemini's.
		return stopTruncated
	case "pause_turn":
		return stopPaused
	}
	if geminiBlocked(rep.finish) {
		// Gemini's SAFETY, RECITATION, …, or a prompt it blocked.
		return stopFiltered
	}
	if rep.refusal != "" {
		return stopRefused
	}
	return ""
}
