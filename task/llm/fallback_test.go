package llm

import "testing"

func TestFallbackKindNamesTheRefusalsARouteMayFallBackOn(t *testing.T) {
	tests := []struct {
		name string
		err  interface{ FallbackKind() string }
		want string
	}{
		{"openai context length", &Error{Status: 400, Code: "context_length_exceeded"}, "context_window"},
		{"anthropic prompt too long", &Error{Status: 400, Type: "invalid_request_error", Message: "prompt is too long: 210000 tokens > 200000 maximum"}, "context_window"},
		{"azure filtered prompt", &Error{Status: 400, Code: "content_filter", ContentFilter: "violence: severity medium, filtered"}, "content_filter"},
		{"any other 400", &Error{Status: 400, Type: "invalid_request_error", Message: "messages: field required"}, ""},
		{"an outage", &Error{Status: 503, Message: "the maximum context length of our patience"}, ""},
		{"refused answer", &StopError{Kind: stopRefused}, "content_filter"},
		{"filtered answer", &StopError{Kind: stopFiltered}, "content_filter"},
		{"truncated answer", &StopError{Kind: stopTruncated}, ""},
	}
	for _, tt := range tests {
		if got := tt.err.FallbackKind(); got != tt.want {
			t.Errorf("%s: FallbackKind() = %q, want %q", tt.name, got, tt.want)
		}
	}
}
