package exitcode_test

import (
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/exitcode"
)

// TestForMapsHowARunStoppedToItsCode: a stop outranks failures, and
// pending items alone are not failures.
func TestForMapsHowARunStoppedToItsCode(t *testing.T) {
	cases := []struct {
		name   string
		stop   engine.StopReason
		failed int
		want   int
	}{
		{"every item succeeded", engine.StopNone, 0, exitcode.OK},
		{"finished with failures", engine.StopNone, 2, exitcode.Failures},
		{"breaker abort outranks failures", engine.StopBreaker, 2, exitcode.Aborted},
		{"budget reached", engine.StopBudget, 0, exitcode.Aborted},
		{"operator abort", engine.StopOperator, 0, exitcode.Aborted},
		{"signal", engine.StopSignal, 1, exitcode.Interrupted},
		{"storage failed, resumable", engine.StopStorage, 1, exitcode.Storage},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := exitcode.For(engine.Summary{Stop: c.stop}, c.failed); got != c.want {
				t.Errorf("For(stop %v, %d failed) = %d, want %d", c.stop, c.failed, got, c.want)
			}
		})
	}
}
