package classify

import (
	"encoding/json"
	"testing"
)

func TestClassTextRoundTrip(t *testing.T) {
	for _, c := range []Class{Unknown, Retryable, Fatal, Item, Invalid, Canceled} {
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("marshal %v: %v", c, err)
		}
		var back Class
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("unmarshal %s: %v", b, err)
		}
		if back != c {
			t.Errorf("%v marshaled as %s came back as %v", c, b, back)
		}
	}
}

func TestClassOutOfRange(t *testing.T) {
	c := Class(42)
	if got := c.String(); got != "class(42)" {
		t.Errorf("String() = %q, want %q", got, "class(42)")
	}
	if _, err := c.MarshalText(); err == nil {
		t.Error("MarshalText of an out-of-range class succeeded")
	}
	if _, err := ParseClass("transient"); err == nil {
		t.Error(`ParseClass("transient") succeeded`)
	}
}

func TestDecisionString(t *testing.T) {
	tests := []struct {
		d    Decision
		want string
	}{
		{Decision{Retryable, "status 429"}, "retryable (status 429)"},
		{Decision{Class: Fatal}, "fatal"},
		{Decision{}, "unknown"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestWithClassNil(t *testing.T) {
	if err := WithClass(nil, Fatal, "x"); err != nil {
		t.Errorf("WithClass(nil) = %v, want nil", err)
	}
}
