package heal_test

import (
	"errors"
	"testing"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/heal"
)

func TestFailureFingerprintTracksValidationErrorsUnderTheCheck(t *testing.T) {
	err := errors.New(`missing property "length"`)
	if got, want := heal.FailureFingerprint(classify.Invalid, err), heal.Fingerprint(heal.ValidationCheck, err.Error()); got != want {
		t.Errorf("an invalid output's fingerprint %s, want %s: the heal loop's own, under %q", got, want, heal.ValidationCheck)
	}
	if got, want := heal.FailureFingerprint(classify.Fatal, err), heal.Fingerprint("fatal", err.Error()); got != want {
		t.Errorf("a fatal error's fingerprint %s, want %s: under its class's name", got, want)
	}
}

func TestTrackedJSONIsNilWithoutATracker(t *testing.T) {
	if b := heal.TrackedJSON(nil); b != nil {
		t.Errorf("TrackedJSON(nil) = %s, want nil: an item never invalid records no tracked errors", b)
	}
	tr := heal.NewTracker(heal.Budget{})
	tr.Observe([]heal.Observed{{Name: heal.ValidationCheck, Message: "missing property"}})
	if b := heal.TrackedJSON(tr); len(b) == 0 || b[0] != '[' {
		t.Errorf("TrackedJSON = %s, want the tracked errors as a JSON array", b)
	}
}
