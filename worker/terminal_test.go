package worker_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/worker"
)

// TestTheTerminalIsToldTheTruthAboutASettledTrip: a terminal whose answer
// came after a new trip said the breaker closed without an answer; it
// says the trip was answered elsewhere and the breaker tripped again. One
// whose read of the breaker failed said it closed without an answer; it
// says the read failed, and why.
func TestTheTerminalIsToldTheTruthAboutASettledTrip(t *testing.T) {
	q := worker.Question{JobID: "job_1", Trip: 1}
	for _, tc := range []struct {
		answer worker.Answer
		want   string
	}{
		{worker.Answer{Decision: worker.Abort, By: "tenax breaker on h (pid 1)"}, "answered elsewhere: abort, by tenax breaker on h (pid 1)"},
		{worker.Answer{}, "closed before an answer came from here"},
		{worker.Answer{TrippedAgain: 2}, "trip 1 of the circuit breaker was answered elsewhere (or closed by itself), and it has tripped again since (trip 2)"},
		{worker.Answer{ReadErr: errors.New("worker: reading the breaker of job job_1: connection refused")},
			"trip 1 of the circuit breaker was answered elsewhere or closed by itself, but reading how failed: worker: reading the breaker of job job_1: connection refused"},
	} {
		var out strings.Builder
		worker.NewTerminalOperator(nil, &out).Settled(q, tc.answer)
		if !strings.Contains(out.String(), tc.want) {
			t.Errorf("Settled(%+v) printed %q, want %q", tc.answer, out.String(), tc.want)
		}
	}
}
