package engine_test

import (
	"testing"
	"testing/synctest"

	"github.com/tenaxhq/tenax/engine/enginetest"
)

// TestAgentScenariosLocally runs the shared agent scenarios (enginetest)
// through the local engine, steps kept in the in-memory step log: the
// reference River's workers compare their records with, whole.
func TestAgentScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.AgentScenarios()
		enginetest.CheckAgents(t, "local", scenarios, enginetest.LocalAgents(t, scenarios))
	})
}

// TestRoutedAgentScenariosLocally runs the routed agent scenarios
// through the local engine over two routes: the reference of the
// workers' (worker.TestRoutedAgentScenariosOnWorkers).
func TestRoutedAgentScenariosLocally(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		scenarios := enginetest.RoutedAgentScenarios()
		enginetest.CheckAgents(t, "local routed", scenarios, enginetest.LocalRoutedAgents(t, scenarios))
	})
}
