package worker_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/engine/enginetest"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	"github.com/tenaxhq/tenax/worker"
)

// scenarioSpec is a job over the shared scenarios' items under their
// retry policy (enginetest.Policy) and heal budget (enginetest.Budget),
// validated as enginetest.Validator validates: only {"answer":"valid"}
// passes. The breaker's threshold is out of reach, as the local run's
// breaker counts nothing: the breaker is not what the scenarios are about.
const scenarioSpec = `name: scenarios
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Answer as scenario {{.scenario}}"
validate:
  json_schema:
    type: object
    required: [answer]
    properties:
      answer: {const: valid}
heal:
  max_attempts: 2
retry:
  max_attempts: 3
  backoff: {base: 10ms, max: 10ms, jitter: none}
breaker:
  threshold: 1000
cache: {enabled: false}
`

// writeScenarioJob writes spec's job over the scenarios' items, item idx
// for names[idx], and returns the spec's path.
func writeScenarioJob(t *testing.T, spec string, names ...string) string {
	t.Helper()
	var in strings.Builder
	for _, name := range names {
		fmt.Fprintf(&in, "{\"id\": %q, \"scenario\": %q}\n", name, name)
	}
	_, path := writeJobDir(t, spec, map[string]string{"items.jsonl": in.String()})
	return path
}

// scenarioNames returns the names of scenarios, in order.
func scenarioNames[S any](scenarios []S, name func(S) string) []string {
	out := make([]string, len(scenarios))
	for i, sc := range scenarios {
		out[i] = name(sc)
	}
	return out
}

// TestSharedScenariosOnWorkers runs the per-item core's shared scenarios
// (enginetest) through River's workers on PostgreSQL, each item's calls
// answered by its scenario's script: the same records as the local run
// and batch waves.
func TestSharedScenariosOnWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	scenarios := enginetest.Scenarios()
	e := enqueue(t, c, writeScenarioJob(t, scenarioSpec,
		scenarioNames(scenarios, func(sc enginetest.Scenario) string { return sc.Name })...))
	script := &enginetest.Script{Scenarios: scenarios}
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(task.Task) task.Task { return script })
	// The scenarios' own validator, so that the records' errors and
	// tracked errors can be compared with the local engine's, whole.
	worker.SetValidator(&cfg, enginetest.Validator{})
	startWorkers(t, c, 1, cfg)
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	// Seven scenarios end in a failure: the job finishes failed, not
	// aborted (the breaker kept out of it) nor interrupted.
	if st := jobState(t, c, e.JobID); st != store.StateFailed {
		t.Errorf("the job ended %s, want %s: every scenario ends its item, some failed", st, store.StateFailed)
	}
	oneRecordEach(t, dsn, e.JobID, len(scenarios), "after the scenarios ran")
	recs := latestRecords(t, c, e.JobID)
	enginetest.Check(t, "workers", scenarios, recs)
	enginetest.Same(t, "workers", scenarios, enginetest.Local(t, scenarios), recs)
}

// routedScenarioSpec is scenarioSpec over two routes, with every fallback
// on; the test runs it over enginetest.Routes (WrapRoutes), whose scripts
// answer each route's calls.
const routedScenarioSpec = `name: routed-scenarios
input: items.jsonl
task:
  type: llm
  output: json
  prompt: "Answer as scenario {{.scenario}}"
routes:
  - {name: a, provider: mock, model: mock-json}
  - {name: b, provider: mock, model: mock-json, tier: 1}
fallbacks: {outage: true, context_window: true, content_filter: true, escalate: true}
validate:
  json_schema:
    type: object
    required: [answer]
    properties:
      answer: {const: valid}
heal:
  max_attempts: 2
retry:
  max_attempts: 3
  backoff: {base: 10ms, max: 10ms, jitter: none}
breaker:
  threshold: 1000
cache: {enabled: false}
`

// TestRoutedScenariosOnWorkers runs the routed scenarios, one per
// fallback kind, through River's workers: the same records, tries and
// fallbacks included, as the local engine's over the same two routes.
func TestRoutedScenariosOnWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	scenarios := enginetest.RoutedScenarios()
	e := enqueue(t, c, writeScenarioJob(t, routedScenarioSpec,
		scenarioNames(scenarios, func(sc enginetest.Scenario) string { return sc.Name })...))
	a, b := enginetest.RouteScripts(scenarios)
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapRoutes(&cfg, func([]engine.Route) []engine.Route { return enginetest.Routes(a, b) })
	worker.SetValidator(&cfg, enginetest.Validator{})
	startWorkers(t, c, 1, cfg)
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, len(scenarios), "after the routed scenarios ran")
	recs := latestRecords(t, c, e.JobID)
	enginetest.Check(t, "workers routed", scenarios, recs)
	enginetest.Same(t, "workers routed", scenarios, enginetest.LocalRouted(t, scenarios), recs)
}

// agentScenarioSpec is scenarioSpec's job with a tool: an agent job. The
// test runs enginetest's scripted agent in place of its task (WrapTask);
// the worker makes that agent keep its steps in tenax_notes, as it does
// the spec's own.
const agentScenarioSpec = `name: agent-scenarios
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-agent
  output: json
  prompt: "Answer as scenario {{.scenario}}"
  max_steps: 8
  max_consecutive_errors: 3
  tools:
    - name: lookup
      parameters: {type: object, required: [text], properties: {text: {type: string}}}
      exec: {argv: [cat], stdin: "{{.args.text}}"}
      idempotent: true
validate:
  json_schema:
    type: object
    required: [answer]
    properties:
      answer: {const: valid}
heal:
  max_attempts: 2
retry:
  max_attempts: 3
  backoff: {base: 10ms, max: 10ms, jitter: none}
breaker:
  threshold: 1000
cache: {enabled: false}
`

// TestAgentScenariosOnWorkers runs the shared agent scenarios
// (enginetest.AgentScenarios) through River's workers, their steps in
// tenax_notes: the same whole records as the local engine's with its
// steps in memory — agent stats, usage, cost, attempts and heals — and
// no model question more than the local run asked.
func TestAgentScenariosOnWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	scenarios := enginetest.AgentScenarios()
	e := enqueue(t, c, writeScenarioJob(t, agentScenarioSpec,
		scenarioNames(scenarios, func(sc enginetest.AgentScenario) string { return sc.Name })...))
	a, script, err := enginetest.NewAgent(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(task.Task) task.Task { return a })
	worker.SetValidator(&cfg, enginetest.Validator{})
	startWorkers(t, c, 1, cfg)
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, len(scenarios), "after the agent scenarios ran")
	recs := latestRecords(t, c, e.JobID)
	enginetest.CheckAgents(t, "workers", scenarios, recs)
	enginetest.SameAgents(t, "workers", scenarios, enginetest.LocalAgents(t, scenarios), recs)
	for idx, sc := range scenarios {
		if r := recs[idx]; r.Agent != nil && r.Agent.Transcript != nil && r.Agent.Transcript.Log != "tenax_notes" {
			t.Errorf("%s: the transcript is in %q, want tenax_notes", sc.Name, r.Agent.Transcript.Log)
		}
		if got, want := script.Asked(idx), len(sc.Moves); got != want {
			t.Errorf("%s: the model was asked %d times, want the script's %d: a recorded step was asked again, or one was skipped", sc.Name, got, want)
		}
	}
}

// routedAgentScenarioSpec is agentScenarioSpec over two routes with
// fallbacks on; the test runs enginetest's scripted agent in place of its
// task (WrapTask) and each route's task asking that route's script
// (WrapRoutes), the steps kept in tenax_notes as the worker keeps them.
var routedAgentScenarioSpec = strings.Replace(strings.Replace(agentScenarioSpec,
	"  provider: mock\n  model: mock-agent\n", "", 1),
	"validate:", "routes:\n  - {name: a, provider: mock, model: mock-agent}\n  - {name: b, provider: mock, model: mock-agent, tier: 1}\nfallbacks: {outage: true}\nvalidate:", 1)

// TestRoutedAgentScenariosOnWorkers runs the routed agent scenarios
// (enginetest.RoutedAgentScenarios) through River's workers: an agent's
// conversation moved from route a to route b at an outage gives the same
// whole records as the local engine's, and no model question more than
// the scripts hold.
func TestRoutedAgentScenariosOnWorkers(t *testing.T) {
	dsn := testDSN(t)
	c := open(t, dsn)
	scenarios := enginetest.RoutedAgentScenarios()
	e := enqueue(t, c, writeScenarioJob(t, routedAgentScenarioSpec,
		scenarioNames(scenarios, func(sc enginetest.AgentScenario) string { return sc.Name })...))
	a, _, err := enginetest.NewAgent(scenarios)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := enginetest.RoutedAgentScripts(scenarios)
	cfg := worker.Config{Jobs: []string{e.JobID}, Concurrency: 4}
	worker.WrapTask(&cfg, func(task.Task) task.Task { return a })
	worker.WrapRoutes(&cfg, func(routes []engine.Route) []engine.Route {
		// Each route's task is the worker's durable agent asking the
		// spec's route model: ask the route's script instead.
		d, ok := routes[0].Task.(*agent.Task)
		if !ok {
			t.Errorf("route a's task is a %T, not the job's agent", routes[0].Task)
			return routes
		}
		return enginetest.Routes(d.WithModel(sa), d.WithModel(sb))
	})
	worker.SetValidator(&cfg, enginetest.Validator{})
	startWorkers(t, c, 2, cfg)
	waitFor(t, "the job to finish", func() (bool, error) {
		return jobState(t, c, e.JobID) != store.StateRunning, nil
	})
	oneRecordEach(t, dsn, e.JobID, len(scenarios), "after the routed agent scenarios ran")
	recs := latestRecords(t, c, e.JobID)
	enginetest.CheckAgents(t, "workers routed", scenarios, recs)
	enginetest.SameAgents(t, "workers routed", scenarios, enginetest.LocalRoutedAgents(t, scenarios), recs)
	for idx, sc := range scenarios {
		if got, want := sa.Asked(idx)+sb.Asked(idx), len(sc.Moves)+len(sc.OnB); got != want {
			t.Errorf("%s: the routes' models were asked %d times, want the scripts' %d: a recorded step was asked again", sc.Name, got, want)
		}
	}
}
