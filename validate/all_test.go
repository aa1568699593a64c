package validate

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
)

// recorder is a Validator that records its calls and returns err.
type recorder struct {
	name  string
	err   error
	calls *[]string
}

func (r recorder) Validate(context.Context, json.RawMessage) error {
	*r.calls = append(*r.calls, r.name)
	return r.err
}

func TestAllStopsAtTheFirstError(t *testing.T) {
	first := &Error{Validator: KindRegex, Message: "first"}
	second := &Error{Validator: KindCommand, Message: "second"}
	var calls []string
	v := All(
		recorder{"pass", nil, &calls},
		nil,
		recorder{"first", first, &calls},
		recorder{"second", second, &calls},
	)
	err := v.Validate(context.Background(), textOutput("x"))
	if !errors.Is(err, first) {
		t.Errorf("All returned %v, want the first error", err)
	}
	if want := []string{"pass", "first"}; len(calls) != len(want) || calls[0] != want[0] || calls[1] != want[1] {
		t.Errorf("validators called: %q, want %q", calls, want)
	}
}

func TestAllOfNothingAcceptsEverything(t *testing.T) {
	if err := All().Validate(context.Background(), json.RawMessage(`"anything"`)); err != nil {
		t.Errorf("All().Validate = %v, want nil", err)
	}
}
