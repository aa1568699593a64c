package batch

import (
	"errors"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/task/llm"
)

func TestCustomIDsRoundTripAndStrangersAreRefused(t *testing.T) {
	for _, c := range []struct{ idx, wave int }{{0, 1}, {7, 2}, {1999, 4}, {123456789, 99}} {
		id := CustomID(c.idx, c.wave)
		idx, wave, err := ParseCustomID(id)
		if err != nil || idx != c.idx || wave != c.wave {
			t.Errorf("ParseCustomID(%q) = %d, %d, %v; want %d, %d", id, idx, wave, err, c.idx, c.wave)
		}
		if !validAnthropicID(id) {
			t.Errorf("%q breaks Anthropic's custom id rule", id)
		}
	}
	for _, id := range []string{"", "i", "i1", "i1-w", "i-1-w2", "i01-w2", "i1-w0", "x1-w1", "i1-w1-", "i1-w+1"} {
		if _, _, err := ParseCustomID(id); err == nil {
			t.Errorf("ParseCustomID(%q) accepted a custom id tenax never writes", id)
		}
	}
}

// validAnthropicID is Anthropic's rule: ^[a-zA-Z0-9_-]{1,64}$.
func validAnthropicID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func FuzzParseCustomID(f *testing.F) {
	for _, seed := range []string{"i0-w1", "i1999-w4", "i1-w", "i-1-w2", "i01-w2", "i9999999999999999999999-w1", "ı1-w1"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, id string) {
		idx, wave, err := ParseCustomID(id)
		if err != nil {
			return
		}
		if CustomID(idx, wave) != id {
			t.Fatalf("ParseCustomID(%q) = %d, %d, which CustomID writes as %q", id, idx, wave, CustomID(idx, wave))
		}
	})
}

func TestRequestErrorsClassifyAsTheSameErrorOnlineWould(t *testing.T) {
	tests := []struct {
		name               string
		status             int
		typ, code, message string
		want               classify.Class
	}{
		{"anthropic overloaded", 0, "overloaded_error", "", "Overloaded", classify.Retryable},
		{"anthropic api error", 0, "api_error", "", "Internal server error", classify.Retryable},
		{"anthropic invalid request", 0, "invalid_request_error", "", "prompt is too long", classify.Item},
		{"anthropic authentication", 0, "authentication_error", "", "invalid x-api-key", classify.Fatal},
		{"openai server error", 500, "server_error", "", "The server had an error", classify.Retryable},
		{"openai quota", 429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota", classify.Fatal},
		{"openai context length", 400, "invalid_request_error", "context_length_exceeded", "maximum context length", classify.Item},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := requestError("p", tt.status, tt.typ, tt.code, tt.message, "req_1")
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("requestError gave %T, want *llm.Error", err)
			}
			if d := classify.Classify(err); d.Class != tt.want {
				t.Errorf("classified %s (%s), want %s", d.Class, d.Reason, tt.want)
			}
		})
	}
}
