package retry

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"
)

func TestParseHeaders(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		headers map[string]string
		want    time.Duration
		wantOK  bool
	}{
		{"no headers", nil, 0, false},
		{"integer seconds", map[string]string{"Retry-After": "7"}, 7 * time.Second, true},
		{"decimal seconds", map[string]string{"Retry-After": "2.5"}, 2500 * time.Millisecond, true},
		{"zero seconds", map[string]string{"Retry-After": "0"}, 0, true},
		{"http date ahead", map[string]string{"Retry-After": now.Add(30 * time.Second).Format(http.TimeFormat)}, 30 * time.Second, true},
		{"http date past is zero", map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{"milliseconds", map[string]string{"retry-after-ms": "1500"}, 1500 * time.Millisecond, true},
		{"fractional milliseconds", map[string]string{"retry-after-ms": "0.5"}, 500 * time.Microsecond, true},
		{"milliseconds win", map[string]string{"retry-after-ms": "1500", "Retry-After": "7"}, 1500 * time.Millisecond, true},
		{"bad milliseconds fall through", map[string]string{"retry-after-ms": "soon", "Retry-After": "7"}, 7 * time.Second, true},
		{"negative seconds", map[string]string{"Retry-After": "-3"}, 0, false},
		{"garbage", map[string]string{"Retry-After": "tomorrow"}, 0, false},
		{"infinite seconds", map[string]string{"Retry-After": "Inf"}, 0, false},
		{"huge seconds saturate", map[string]string{"Retry-After": "1e300"}, 1<<63 - 1, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tt.headers {
				h.Set(k, v)
			}
			got, ok := ParseHeaders(h, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("ParseHeaders(%v) = %v, %v; want %v, %v", tt.headers, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestAfterCarriesHintAndKeepsChain(t *testing.T) {
	base := errors.New("429 too many requests")
	err := fmt.Errorf("call: %w", After(7*time.Second, base))
	if !errors.Is(err, base) {
		t.Errorf("errors.Is(%v, base) = false, want the wrapped error reachable", err)
	}
	if d, ok := hintOf(err); !ok || d != 7*time.Second {
		t.Errorf("hintOf(%v) = %v, %v; want 7s, true", err, d, ok)
	}
	if err.Error() != "call: 429 too many requests" {
		t.Errorf("message = %q, want the hint not to change it", err.Error())
	}
	if After(time.Second, nil) != nil {
		t.Error("After(1s, nil) != nil, want nil")
	}
	if _, ok := hintOf(After(0, base)); ok {
		t.Error("a zero hint counted as a hint")
	}
}
