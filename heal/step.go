package heal

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tenaxhq/tenax/classify"
)

// Reask is one step of the heal loop for an item whose output failed
// validation with verr: it records the error on t, spends the budget of
// the error it selects, and returns the feedback for the re-ask. When
// healing must end, stop says why (the budget is spent, or the answer
// repeats itself) and StopReason names it for a record. The engine's
// online loop and batch mode's waves both take this step, so an item is
// healed the same way whichever path it runs on.
func Reask(t *Tracker, name, output string, verr error, hints []Hint) (feedback string, stop error) {
	t.Observe([]Observed{{Name: name, Message: verr.Error()}})
	if next, ok := t.Next(); ok {
		stop = t.Spend(next.Fingerprint, output)
	} else if stop = t.Err(); stop == nil {
		stop = fmt.Errorf("heal budget exhausted: %w", ErrBudget)
	}
	if stop != nil {
		return "", stop
	}
	var stderr string
	var sc classify.StderrCarrier
	if errors.As(verr, &sc) {
		stderr = sc.Stderr()
	}
	return FormatFeedback(FeedbackInput{PreviousOutput: output, Err: verr, Stderr: stderr, Hints: hints}), nil
}

// StopReason is a record's reason for a heal loop that ended with stop.
func StopReason(stop error) string {
	var se *StopError
	if errors.As(stop, &se) {
		return "heal: " + se.Reason
	}
	return "heal budget"
}

// OutputText is an output as a model or a command should see it again in
// a re-ask: the string itself for a JSON string, the JSON text otherwise.
func OutputText(out json.RawMessage) string {
	var s string
	if len(out) > 0 && out[0] == '"' && json.Unmarshal(out, &s) == nil {
		return s
	}
	return string(out)
}

// ValidationCheck is the check name under which an output's validation
// errors are tracked and fingerprinted, online and in batch mode alike.
const ValidationCheck = "validate"

// FailureFingerprint is the fingerprint of an item's final error err of
// class c: validation errors under ValidationCheck, as the heal loop
// tracks them, the others under their class's name.
func FailureFingerprint(c classify.Class, err error) string {
	name := c.String()
	if c == classify.Invalid {
		name = ValidationCheck
	}
	return Fingerprint(name, err.Error())
}

// TrackedJSON is t's tracked errors as a record keeps them, nil for a nil
// tracker (no output of the item was invalid).
func TrackedJSON(t *Tracker) json.RawMessage {
	if t == nil {
		return nil
	}
	b, err := json.Marshal(t.Errors())
	if err != nil {
		return nil
	}
	return b
}
