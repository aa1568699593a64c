package engine_test

import (
	"context"
	"io"
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/engine/enginetest"
	"github.com/tenaxhq/tenax/task"
)

// TestSharedScenariosLocally runs the per-item core's shared scenarios
// (enginetest) through the local engine; batch waves and workers run the
// same table.
func TestSharedScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.Scenarios()
		script := &enginetest.Script{Scenarios: scenarios}
		job := newMemJob()
		cfg := engine.Config{
			Concurrency:  4,
			Retry:        enginetest.Policy(),
			Heal:         enginetest.Budget(),
			Validator:    enginetest.Validator{},
			BreakerCount: []classify.Class{}, // the breaker is not what the scenarios are about
		}
		items := enginetest.Items(scenarios)
		i := 0
		src := engine.SourceFunc(func() (task.Item, error) {
			if i == len(items) {
				return task.Item{}, io.EOF
			}
			i++
			return items[i-1], nil
		})
		if _, err := engine.New(cfg, script, job).Run(context.Background(), src); err != nil {
			t.Fatal(err)
		}
		enginetest.Check(t, "local", scenarios, job.byIdx())
	})
}
