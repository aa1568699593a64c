package spec

import (
	"fmt"
	"slices"
)

// Route is one deployment a job may call: a provider, a model and where
// to reach it. A spec with routes runs every item on one of them, chosen
// per call (docs/routes.md); the task's own provider keys are the first
// route's defaults. Empty fields take the task's value.
type Route struct {
	// Name names the route in records, status and export; default the
	// provider and model ("openai/gpt-4o-mini"), or "route-N".
	Name string `yaml:"name"`
	// Provider, Model, BaseURL and APIKey are as the task's keys of the
	// same names; empty takes the task's.
	Provider string `yaml:"provider"`
	Model    string `yaml:"model"`
	BaseURL  string `yaml:"base_url"`
	APIKey   string `yaml:"api_key"`
	// Region is where the cloud serves the route's model: Bedrock's AWS
	// region, Vertex AI's location; empty takes the task's. For the other
	// providers it is a label for reports (and a reason to keep two routes
	// of one provider apart), and tenax sends nothing for it.
	Region string `yaml:"region"`
	// Price is the route's price per million tokens, for its cost; unset
	// takes the model's known price or the spec's prices.
	Price Price `yaml:"price"`
	// RateLimit are the route's told limits; unset, they are learned
	// from the provider's headers like the task's.
	RateLimit RateLimit `yaml:"rate_limit"`
	// Tier orders routes: every call goes to the lowest tier that has a
	// route with headroom. Default 0.
	Tier int `yaml:"tier"`
	// Weight shares a tier's calls among its routes (routing: weighted);
	// default 1.
	Weight int `yaml:"weight"`
	// ContextWindow is the model's context window in tokens: a prompt
	// estimated larger is never sent to it. 0 is unknown (no pre-check).
	ContextWindow int `yaml:"context_window"`
	// Mock configures this route's simulated provider (provider: mock):
	// its own faults, limits and context window. On a route of another
	// provider without a base_url it rehearses the route: the route's
	// calls go, through the provider's own SDK, to a simulated deployment
	// of its own in that provider's wire format, with placeholder
	// credentials (docs/routes.md, "Rehearsing it").
	Mock RouteMock `yaml:"mock"`
}

// RouteMock is one mock route's own simulated deployment; its latency and
// seed are the spec's mock keys.
type RouteMock struct {
	RPM    int        `yaml:"rpm"`
	TPM    int        `yaml:"tpm"`
	Errors MockErrors `yaml:"errors"`
	// ContextWindow is the simulated model's context window in tokens;
	// 0 is the mock's default.
	ContextWindow int `yaml:"context_window"`
	// Rehearsed says the route is served by a simulated deployment of
	// its own: a mock route without a base_url, or a route of another
	// provider that writes mock: and no base_url. Set by Load.
	Rehearsed bool `yaml:"-"`
}

// Fallbacks says, per kind of failure, whether an item moves to another
// route instead of retrying on, or failing on, the one it met it on. Each
// is off unless the spec turns it on.
type Fallbacks struct {
	// Outage moves an item after a retryable failure (5xx, overload,
	// timeout, a dropped connection) to another route, and gives an item
	// whose retries on a route are spent a fresh streak on the next.
	Outage bool `yaml:"outage"`
	// ContextWindow moves an item whose prompt the provider refused as
	// longer than its context window to a route with a larger one.
	ContextWindow bool `yaml:"context_window"`
	// ContentFilter moves an item the provider's content filter stopped,
	// or the model refused, to a route on another provider.
	ContentFilter bool `yaml:"content_filter"`
	// Escalate moves an item whose heal budget is spent to the next tier,
	// with the feedback so far.
	Escalate bool `yaml:"escalate"`
}

// routings are the strategies that choose among a tier's routes.
var routings = []string{"weighted", "least_loaded", "cost", "latency"}

// routeDefaults names routes, weights them and takes the task's provider
// keys for what a route leaves empty; a task that names no provider takes
// the first route's, so that the task checks see a complete llm task.
func routeDefaults(s *Spec, def defaulter) {
	if len(s.Routes) == 0 {
		return
	}
	t := &s.Task
	if t.Provider == "" {
		// The task is the first route's: its endpoint and key too, so that
		// what is built from the task alone (a dry run) can call it.
		first := s.Routes[0]
		t.Provider = first.Provider
		if t.BaseURL == "" {
			t.BaseURL = first.BaseURL
		}
		if t.APIKey == "" {
			t.APIKey = first.APIKey
		}
		if t.Region == "" {
			t.Region = first.Region
		}
	}
	if t.Model == "" {
		t.Model = s.Routes[0].Model
	}
	def("routing", func() { s.Routing = "weighted" })
	for i := range s.Routes {
		r := &s.Routes[i]
		if r.Provider == "" {
			r.Provider = t.Provider
		}
		if r.Model == "" {
			r.Model = t.Model
		}
		if r.BaseURL == "" && r.Provider == t.Provider {
			r.BaseURL = t.BaseURL
		}
		if r.APIKey == "" && r.Provider == t.Provider {
			r.APIKey = t.APIKey
		}
		def(fmt.Sprintf("routes[%d].weight", i), func() { r.Weight = 1 })
		if r.Name == "" {
			r.Name = fmt.Sprintf("route-%d", i+1)
			if r.Model != "" {
				r.Name = r.Provider + "/" + r.Model
			}
		}
	}
}

// markRehearsed marks the routes a simulated deployment of their own
// serves: mock routes without a base_url, and routes of another provider
// that write mock: and no base_url.
func (d *decoder) markRehearsed(s *Spec) {
	for i := range s.Routes {
		r := &s.Routes[i]
		r.Mock.Rehearsed = r.BaseURL == "" && (r.Provider == "mock" || d.isSet(fmt.Sprintf("routes[%d].mock", i)))
	}
}

// checkRoutes checks each route, and that their names tell them apart.
func (d *decoder) checkRoutes(s *Spec) {
	if len(s.Routes) == 0 {
		for _, k := range []string{"routing", "fallbacks"} {
			if d.isSet(k) {
				d.errorf(d.at(k), "", "%s: applies only with routes (a list of two or more deployments)", k)
			}
		}
		return
	}
	if s.Task.Type != "llm" {
		d.errorf(d.at("routes"), "", "routes: apply only to llm tasks, not %s", s.Task.Type)
		return
	}
	d.oneOf("routing", s.Routing, routings)
	seen := map[string]int{}
	for i, r := range s.Routes {
		p := fmt.Sprintf("routes[%d]", i)
		if j, dup := seen[r.Name]; dup {
			d.problem(p+".name", nil, "%s names routes[%d] too: give each route its own name", quote(r.Name), j)
		}
		seen[r.Name] = i
		d.oneOf(p+".provider", r.Provider, providers)
		if len(s.Task.Tools) > 0 && !slices.Contains(toolProviders, r.Provider) && slices.Contains(providers, r.Provider) {
			d.problem(p+".provider", nil, "%s does not take tools yet, and an agent's conversation may move to any route: use %s", quote(r.Provider), orList(toolProviders))
		}
		if r.Model == "" && r.Provider != "mock" {
			d.errorf(d.at(p+".model", p+".name", p+".provider", "routes"), "", "%s.model: missing (a route needs a model, or the task's)", p)
		}
		if d.isSet(p + ".base_url") {
			d.checkBaseURL(p+".base_url", r.BaseURL)
		}
		if r.Provider == "azure" && r.BaseURL == "" && !r.Mock.Rehearsed {
			d.errorf(d.at(p+".base_url", p+".name", p+".provider", "routes"), "", "%s.base_url: missing for an azure route (the resource's endpoint)", p)
		}
		for key, v := range map[string]int{"tier": r.Tier, "context_window": r.ContextWindow,
			"rate_limit.requests_per_minute": r.RateLimit.RequestsPerMinute, "rate_limit.tokens_per_minute": r.RateLimit.TokensPerMinute,
			"mock.rpm": r.Mock.RPM, "mock.tpm": r.Mock.TPM, "mock.context_window": r.Mock.ContextWindow} {
			if v < 0 {
				d.problem(p+"."+key, nil, "must not be negative, got %d", v)
			}
		}
		if r.Weight < 1 {
			d.problem(p+".weight", nil, "must be at least 1, got %d", r.Weight)
		}
		for key, v := range map[string]float64{"input_per_mtok": r.Price.InputPerMTok, "output_per_mtok": r.Price.OutputPerMTok,
			"cached_input_per_mtok": r.Price.CachedInputPerMTok, "cache_write_per_mtok": r.Price.CacheWritePerMTok} {
			if v < 0 {
				d.problem(p+".price."+key, nil, "must not be negative, got %g", v)
			}
		}
		if d.isSet(p + ".region") {
			d.checkRegion(p+".region", s.Task.cloud(r.Provider), r.Region)
		}
		if s.Task.ClaudeOnVertex(r.Provider) {
			d.checkClaudeOnVertexRoute(p, s, r)
		}
		if d.isSet(p+".mock") && r.Provider != "mock" && d.isSet(p+".base_url") {
			d.errorf(d.at(p+".mock"), "", "%s.mock: rehearses a %s route in-process, so it takes no base_url (drop one of them)", p, r.Provider)
		}
		d.checkMockErrors(p+".mock.errors", r.Mock.Errors)
	}
	if s.Fallbacks.Escalate && allOneTier(s.Routes) {
		d.errorf(d.at("fallbacks.escalate"), "", "fallbacks.escalate: every route is in tier %d, so there is no stronger route to escalate to (give the stronger route a higher tier)", s.Routes[0].Tier)
	}
}

// allOneTier reports whether every route has the same tier.
func allOneTier(rs []Route) bool {
	return !slices.ContainsFunc(rs, func(r Route) bool { return r.Tier != rs[0].Tier })
}

// checkClaudeOnVertexRoute checks route r, at p, of provider anthropic in
// a task with a project: Claude on Vertex AI, which takes no api_key and
// needs a location (the route's, the task's or the environment's; a
// rehearsed route has a placeholder of its own).
func (d *decoder) checkClaudeOnVertexRoute(p string, s *Spec, r Route) {
	if d.isSet(p + ".api_key") {
		d.problem(p+".api_key", nil, "Claude on Vertex AI (provider anthropic with task.project) authenticates with Google credentials, not an api_key")
	}
	if r.Region == "" && s.Task.Region == "" && d.vertexLocationFromEnv() == "" && !r.Mock.Rehearsed && !s.Task.ClaudeOnVertex(s.Task.Provider) {
		d.errorf(d.at(p+".region", p+".name", p+".provider", "routes"), "", "%s.region: missing: Claude on Vertex AI needs a location (us-east5, europe-west1, global…), or task.region, or $GOOGLE_CLOUD_LOCATION", p)
	}
}
