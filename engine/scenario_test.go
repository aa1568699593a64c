package engine_test

import (
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/engine/enginetest"
)

// TestSharedScenariosLocally runs the per-item core's shared scenarios
// (enginetest) through the local engine, as enginetest.Local runs them for
// the other modes to compare their records with; batch waves and workers
// run the same table.
func TestSharedScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.Scenarios()
		enginetest.Check(t, "local", scenarios, enginetest.Local(t, scenarios))
	})
}

// TestRoutedScenariosLocally runs the routed scenarios, one per fallback
// kind, through the local engine over two routes: each record is b's, a
// in its tries with the fallback that moved the item.
func TestRoutedScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.RoutedScenarios()
		enginetest.Check(t, "local routed", scenarios, enginetest.LocalRouted(t, scenarios))
	})
}
