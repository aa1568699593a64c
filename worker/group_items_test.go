package worker_test

import (
	"testing"

	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/worker"
)

// TestARiverJobHoldsSixteenItemsOrTheConcurrency: River's work is paid
// per River job (its row's updates at fetch and completion, an execution,
// a read of inputs), so a River job holds up to sixteen items — at eight,
// one worker used up to 1.25× the CPU and PostgreSQL 1.37× per item — but never
// more than the job runs at once, and one for a job with check-ins.
func TestARiverJobHoldsSixteenItemsOrTheConcurrency(t *testing.T) {
	cases := []struct {
		name string
		s    spec.Spec
		want int
	}{
		{"concurrency above the group", spec.Spec{Concurrency: spec.Concurrency{Max: 64}}, 16},
		{"concurrency of the group", spec.Spec{Concurrency: spec.Concurrency{Max: 16}}, 16},
		{"concurrency below the group", spec.Spec{Concurrency: spec.Concurrency{Max: 4}}, 4},
		{"no concurrency named", spec.Spec{}, 1},
		{"check-ins", spec.Spec{Concurrency: spec.Concurrency{Max: 64}, CheckinEvery: 100}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := worker.GroupItems(&c.s); got != c.want {
				t.Errorf("GroupItems = %d items a River job, want %d", got, c.want)
			}
		})
	}
}
