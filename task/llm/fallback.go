package llm

import "strings"

// The kinds of failure a job with routes may fall back on (engine's
// FallbackKinder, docs/routes.md): the same words as the engine's
// FallbackContextWindow and FallbackContentFilter.
const (
	fallbackContextWindow = "context_window"
	fallbackContentFilter = "content_filter"
)

// FallbackKind says which route fallback the error calls for:
// "context_window" for a prompt past the model's context window (OpenAI's
// context_length_exceeded, Anthropic's "prompt is too long", Bedrock's
// ValidationException "Input is too long for requested model.", Gemini's
// INVALID_ARGUMENT "The input token count (N) exceeds the maximum number of
// tokens allowed (M)."),
// "content_filter" for a prompt a content filter refused (Azure's
// content_filter code or verdict); "" otherwise.
func (e *Error) FallbackKind() string {
	msg := strings.ToLower(e.Message)
	switch {
	case e.Code == "context_length_exceeded",
		e.Status == 400 && (strings.Contains(msg, "prompt is too long") || strings.Contains(msg, "input is too long") || strings.Contains(msg, "maximum context length") ||
			strings.Contains(msg, "exceeds the maximum number of tokens") ||
			strings.Contains(msg, "context window")):
		return fallbackContextWindow
	case e.Code == "content_filter" || e.ContentFilter != "":
		return fallbackContentFilter
	}
	return ""
}

// FallbackKind says that a refused or filtered answer calls for the
// content-filter fallback; a truncated or paused one calls for none.
func (e *StopError) FallbackKind() string {
	if e.Kind == stopRefused || e.Kind == stopFiltered {
		return fallbackContentFilter
	}
	return ""
}
