package spec

import (
	"reflect"
	"strings"
	"testing"
)

func TestRoutesTakeTheTasksProviderKeysAndDefaults(t *testing.T) {
	s := parse(t, "task:\n  type: llm\n  provider: openai\n  model: gpt-4o-mini\n  api_key: sk-task-key\n  prompt: hi\n"+
		"routes:\n  - {}\n  - {provider: anthropic, model: claude-haiku-4-5, api_key: sk-ant-key, tier: 1, weight: 3}\n", nil)
	want := []Route{
		{Name: "openai/gpt-4o-mini", Provider: "openai", Model: "gpt-4o-mini", APIKey: "sk-task-key", Weight: 1},
		{Name: "anthropic/claude-haiku-4-5", Provider: "anthropic", Model: "claude-haiku-4-5", APIKey: "sk-ant-key", Tier: 1, Weight: 3},
	}
	if !reflect.DeepEqual(s.Routes, want) {
		t.Errorf("routes after defaults:\n got %+v\nwant %+v", s.Routes, want)
	}
	if s.Routing != "weighted" {
		t.Errorf("routing = %q, want the default weighted", s.Routing)
	}
	red, err := s.Redacted()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(red), "sk-ant-key") {
		t.Errorf("a route's api_key shows in the redacted spec: %s", red)
	}
}

func TestTaskWithoutProviderTakesTheFirstRoutesEndpointAndKey(t *testing.T) {
	s := parse(t, "task:\n  type: llm\n  prompt: hi\nroutes:\n  - {provider: openai, model: m, base_url: \"http://gw/v1\", api_key: sk-first-key}\n  - {provider: anthropic, model: c}\n", nil)
	if s.Task.Provider != "openai" || s.Task.BaseURL != "http://gw/v1" || s.Task.APIKey != "sk-first-key" || s.Routes[1].APIKey != "" {
		t.Errorf("task %s %s %q, routes[1].api_key %q; want the first route's provider, base_url and key, and none for the anthropic route", s.Task.Provider, s.Task.BaseURL, s.Task.APIKey, s.Routes[1].APIKey)
	}
}

func TestTaskWithoutProviderTakesTheFirstRoutes(t *testing.T) {
	s := parse(t, "task:\n  type: llm\n  prompt: hi\nroutes:\n  - {name: a, provider: mock}\n  - {name: b, provider: mock, mock: {errors: {server: 1}}}\n", nil)
	if s.Task.Provider != "mock" || s.Routes[1].Mock.Errors.Server != 1 {
		t.Errorf("task.provider = %q, routes[1].mock.errors.server = %g; want mock and 1", s.Task.Provider, s.Routes[1].Mock.Errors.Server)
	}
}

func TestBatchModeTakesRoutesWithTheOutageFallback(t *testing.T) {
	s := parse(t, llmTask+"  mode: batch\nroutes:\n  - {name: a}\n  - {name: b, provider: anthropic, model: claude-haiku-4-5}\nfallbacks: {outage: true}\n", nil)
	if s.Task.Mode != "batch" || len(s.Routes) != 2 || !s.Fallbacks.Outage || s.Batch.OnlineTail != DefaultBatch().OnlineTail {
		t.Errorf("mode %q, %d routes, outage %v, online_tail %d; want batch mode over both routes with the batch defaults", s.Task.Mode, len(s.Routes), s.Fallbacks.Outage, s.Batch.OnlineTail)
	}
}

// TestBatchModeTakesEveryFallbackKind: the fallbacks that want another
// kind of route (a context window, a content filter, escalation) send a
// wave's item online, where the engine picks that route; batch mode
// refused them as a spec error.
func TestBatchModeTakesEveryFallbackKind(t *testing.T) {
	s := parse(t, llmTask+"  mode: batch\nroutes:\n  - {name: a}\n  - {name: b, tier: 1, provider: anthropic, model: claude-haiku-4-5}\nfallbacks: {outage: true, context_window: true, content_filter: true, escalate: true}\n", nil)
	if f := s.Fallbacks; !f.Outage || !f.ContextWindow || !f.ContentFilter || !f.Escalate {
		t.Errorf("fallbacks %+v; want all four on in batch mode", f)
	}
}

func TestBadRoutesReportEveryProblemWithPosition(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "misspelt route key suggests the near miss",
			src:  llmTask + "routes:\n  - {name: a, weigth: 2}\n",
			want: []string{`job.yaml:6:15: unknown key "weigth" in routes[0] (did you mean "weight"?)`},
		},
		{
			name: "misspelt fallback kind suggests the near miss",
			src:  llmTask + "routes:\n  - {name: a}\nfallbacks: {outage: true, escalat: true}\n",
			want: []string{
				`job.yaml:7:27: unknown key "escalat" in fallbacks (did you mean "escalate"?)`,
			},
		},
		{
			name: "routing value checked",
			src:  llmTask + "routes:\n  - {name: a}\nrouting: least_loded\n",
			want: []string{`job.yaml:7:10: routing: unknown value "least_loded" (want weighted, least_loaded, cost or latency) (did you mean "least_loaded"?)`},
		},
		{
			name: "cost and latency routing spelt near",
			src:  llmTask + "routes:\n  - {name: a}\nrouting: latncy\n",
			want: []string{`job.yaml:7:10: routing: unknown value "latncy" (want weighted, least_loaded, cost or latency) (did you mean "latency"?)`},
		},
		{
			name: "duplicate names, missing model, bad numbers",
			src: llmTask + "routes:\n  - {name: a}\n  - name: a\n    provider: openai\n    weight: 0\n    context_window: -1\n" +
				"    mock: {errors: {server: 2}}\n",
			want: []string{
				`job.yaml:7:11: routes[1].name: "a" names routes[0] too: give each route its own name`,
				`job.yaml:7:11: routes[1].model: missing (a route needs a model, or the task's)`,
				`job.yaml:9:13: routes[1].weight: must be at least 1, got 0`,
				`job.yaml:10:21: routes[1].context_window: must not be negative, got -1`,
				`job.yaml:11:21: routes[1].mock.errors: the fractions add up to 2, more than 1`,
				`job.yaml:11:29: routes[1].mock.errors.server: must be a fraction between 0 and 1, got 2`,
			},
		},
		{
			name: "a rehearsed route takes no base_url",
			src:  llmTask + "routes:\n  - {name: a}\n  - {name: b, provider: bedrock, model: m, base_url: \"http://127.0.0.1:1\", mock: {}}\n",
			want: []string{`job.yaml:7:82: routes[1].mock: rehearses a bedrock route in-process, so it takes no base_url (drop one of them)`},
		},
		{
			name: "a route's region is its cloud's",
			src: llmTask + "routes:\n  - {name: a}\n  - {name: b, provider: bedrock, model: m, region: us-central1}\n" +
				"  - {name: c, provider: vertex, model: m, region: us-east-1}\n  - {name: d, provider: openai, model: m, region: anywhere}\n",
			want: []string{
				`job.yaml:7:52: routes[1].region: "us-central1" is not an AWS region (us-east-1, eu-west-3, ap-southeast-2…)`,
				`job.yaml:8:51: routes[2].region: "us-east-1" is not a Vertex AI location (us-central1, europe-west4, global…)`,
			},
		},
		{
			name: "escalation needs a higher tier",
			src:  llmTask + "routes:\n  - {name: a}\n  - {name: b}\nfallbacks: {escalate: true}\n",
			want: []string{`job.yaml:8:23: fallbacks.escalate: every route is in tier 0, so there is no stronger route to escalate to (give the stronger route a higher tier)`},
		},
		{
			name: "fallbacks without routes",
			src:  llmTask + "fallbacks: {outage: true}\n",
			want: []string{`job.yaml:5:13: fallbacks: applies only with routes (a list of two or more deployments)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("job.yaml", []byte(tt.src), "/specs", envOf(nil))
			if err == nil {
				t.Fatalf("Parse accepted the spec; want errors:\n%s", strings.Join(tt.want, "\n"))
			}
			got := strings.Split(err.Error(), "\n")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("errors differ\n got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// TestRoutesThatWriteMockAreRehearsed: a mock route without a base_url,
// and a route of a real provider that writes mock: (even an empty one) and
// no base_url, are served by a simulated deployment of their own; a route
// that writes neither, or a mock route with a base_url (a real mock
// server), is not.
func TestRoutesThatWriteMockAreRehearsed(t *testing.T) {
	src := llmTask + `routes:
  - {name: sim, provider: mock}
  - {name: real-mock, provider: mock, base_url: "http://127.0.0.1:8089/v1"}
  - {name: bedrock, provider: bedrock, model: m, mock: {}}
  - {name: gemini, provider: gemini, model: m, mock: {errors: {server: 1}}}
  - {name: live, provider: openai, model: m}
`
	s, err := Parse("job.yaml", []byte(src), "/specs", envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"sim": true, "real-mock": false, "bedrock": true, "gemini": true, "live": false}
	for _, r := range s.Routes {
		if r.Mock.Rehearsed != want[r.Name] {
			t.Errorf("route %s: Rehearsed = %v, want %v", r.Name, r.Mock.Rehearsed, want[r.Name])
		}
	}
	if s.Mock.Seed != 42 {
		t.Errorf("mock.seed = %d, want the default 42: rehearsed routes use the spec's mock", s.Mock.Seed)
	}
}
