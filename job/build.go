package job

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	nethttp "net/http"
	"os"
	"path/filepath"
	"strings"

	"cloud.google.com/go/auth"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/tenaxhq/tenax/breaker"
	"github.com/tenaxhq/tenax/cache"
	pgcache "github.com/tenaxhq/tenax/cache/postgres"
	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/postgres"
	"github.com/tenaxhq/tenax/task"
	execTask "github.com/tenaxhq/tenax/task/exec"
	httpTask "github.com/tenaxhq/tenax/task/http"
	"github.com/tenaxhq/tenax/task/llm"
	"github.com/tenaxhq/tenax/task/llm/bedrock"
	"github.com/tenaxhq/tenax/task/llm/gemini"
	"github.com/tenaxhq/tenax/validate"
)

// built is what a spec turns into before a run.
type built struct {
	task      task.Task
	validator engine.Validator
	cache     responseCache
	mock      *mock.Server
	// routes are the spec's routes, each with its own llm task (and, for
	// a mock route, its own simulated deployment); nil without routes.
	routes []engine.Route
}

// responseCache is the llm task's response cache as a run holds it: the
// file cache of package cache or the shared one of package cache/postgres.
type responseCache interface {
	llm.Cache
	engine.ResponseCache
	Close() error
}

// buildTask makes the task, the validator and the cache that a spec names.
// home is where the default cache lives; with st a PostgreSQL store, the
// default cache is in its database instead (openCache). conns is the most calls this
// process makes at once, which an llm task holds its connections to; 0
// when that is not the spec's to say (a worker's --concurrency may exceed
// concurrency.max), which keeps idle connections without a cap.
func buildTask(s *spec.Spec, home string, conns int, st store.Store) (*built, error) {
	b := &built{}
	t := s.Task
	switch t.Type {
	case "exec":
		dir := t.Dir
		if dir == "" {
			dir = s.Dir()
		}
		et, err := execTask.New(execTask.Config{
			Argv: t.Argv, Stdin: t.Stdin, Env: t.Env, Dir: dir, Timeout: t.Timeout, AllowOptionValues: t.AllowOptionValues,
			MaxAnswerBytes: t.MaxAnswerBytes,
			ExitCodes:      execTask.ExitCodes{Retryable: t.ExitCodes.Retryable, Fatal: t.ExitCodes.Fatal, Item: t.ExitCodes.Item},
			Output:         t.Output,
		})
		if err != nil {
			return nil, fmt.Errorf("task: %w", err)
		}
		b.task = et
	case "http":
		ht, err := httpTask.New(httpTask.Config{
			Method: t.Method, URL: t.URL, Headers: t.Headers, Body: t.Body, Timeout: t.Timeout, Output: t.Output,
			MaxAnswerBytes: t.MaxAnswerBytes,
		})
		if err != nil {
			return nil, fmt.Errorf("task: %w", err)
		}
		b.task = ht
	case "llm":
		if err := b.buildLLM(s, home, conns, st); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("task: unknown type %q (want llm, exec or http)", t.Type)
	}
	v, err := buildValidator(s)
	if err != nil {
		return nil, err
	}
	b.validator = v
	return b, nil
}

// buildLLM builds the llm task of s and its routes: the in-process mock
// for provider mock, the response cache (openCache), Bedrock's client.
func (b *built) buildLLM(s *spec.Spec, home string, conns int, st store.Store) error {
	t := s.Task
	cfg, err := llmConfig(s)
	if err != nil {
		return err
	}
	cfg.Connections = conns
	if t.Provider == "mock" && t.BaseURL == "" {
		mc := mockConfig(s.Mock)
		if path := s.Mock.LogRequests; path != "" {
			if !filepath.IsAbs(path) {
				path = filepath.Join(s.Dir(), path)
			}
			mc.LogRequests = appendFile(path)
		}
		b.mock = mock.New(mc)
		cfg.HTTPClient = b.mock.Client()
	}
	if s.Cache.Enabled {
		c, err := openCache(s, home, st)
		if err != nil {
			return fmt.Errorf("cache: %w", err)
		}
		b.cache = c
		cfg.Cache = c
	}
	switch {
	case len(s.Routes) > 0 && s.Routes[0].Mock.Rehearsed && t.Provider != llm.ProviderMock && t.Provider == s.Routes[0].Provider && t.BaseURL == "":
		// The task is the first route's (a dry run calls it): rehearsed
		// as that route is.
		if err := routeClients(s, s.Routes[0], &cfg); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	case cfg.Provider == llm.ProviderBedrock:
		if cfg.Bedrock, err = bedrock.New(context.Background(), bedrock.Options{Region: t.Region, Endpoint: cfg.BaseURL}); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	default:
		if cfg.Gemini, err = geminiClient(&cfg, t, false); err != nil {
			return fmt.Errorf("task: %w", err)
		}
		if cfg.Vertex, err = claudeOnVertex(cfg, t, false); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	}
	lt, err := llm.New(cfg)
	if err != nil {
		return fmt.Errorf("task: %w", err)
	}
	b.task = lt
	if b.routes, err = buildRoutes(s, cfg); err != nil {
		return err
	}
	if len(t.Tools) > 0 {
		var mockClient *nethttp.Client
		if b.mock != nil {
			mockClient = b.mock.Client()
		}
		if b.task, err = buildAgent(s, lt, mockClient); err != nil {
			return fmt.Errorf("task: %w", err)
		}
	}
	return nil
}

// openCache opens the response cache of s: with st a PostgreSQL store
// and no cache.dir, the cache in st's database, shared by every worker
// and run on it; else the file cache in cache.dir, by default
// home/cache. cache.max_bytes bounds either.
func openCache(s *spec.Spec, home string, st store.Store) (responseCache, error) {
	if pg, ok := st.(*postgres.Store); ok && s.Cache.Dir == "" {
		// The pool's context is the store's; the cache's statements
		// each have their own timeout.
		return pgcache.Open(context.Background(), pg.Pool(), pgcache.Options{MaxBytes: s.Cache.MaxBytes})
	}
	dir := s.Cache.Dir
	if dir == "" {
		dir = filepath.Join(home, "cache")
	}
	return cache.Open(dir, cache.Options{MaxBytes: s.Cache.MaxBytes})
}

// Close releases what buildTask opened: the cache, its last entries
// written.
func (b *built) Close() error {
	if b.cache == nil {
		return nil
	}
	return b.cache.Close()
}

// llmConfig maps the spec's llm task onto llm.Config, without the hooks
// (rate limits, cache, mock) a run adds.
func llmConfig(s *spec.Spec) (llm.Config, error) {
	t := s.Task
	cfg := llm.Config{
		Provider: t.Provider, BaseURL: t.BaseURL, APIKey: t.APIKey, AzureADToken: t.AzureADToken, APIVersion: t.APIVersion,
		Model: t.Model, System: t.System, Prompt: t.Prompt,
		MaxTokens: t.MaxTokens, MaxTokensCeiling: t.MaxTokensCeiling,
		Temperature: t.Temperature, TopP: t.TopP, Stop: t.Stop, Seed: t.Seed,
		ReasoningEffort: t.ReasoningEffort, ThinkingBudget: t.ThinkingBudget, CachePrompt: t.CachePrompt,
		Headers: t.Headers, Output: t.Output, Timeout: t.Timeout, MaxAnswerBytes: t.MaxAnswerBytes,
		NoHeal: s.Heal.MaxAttempts == 0, Store: t.Store,
		// The tokenizer's exact count costs as much CPU as the rest of a
		// call; only token limits read it.
		ExactTokens: s.RateLimit.TokensPerMinute > 0 || s.Budget.MaxTokens > 0 || s.Batch.MaxEnqueuedTokens > 0,
	}
	if len(t.ExtraBody.JSON) > 0 {
		if err := json.Unmarshal(t.ExtraBody.JSON, &cfg.ExtraBody); err != nil {
			return cfg, fmt.Errorf("task.extra_body: %w", err)
		}
	}
	if sch := s.Validate.JSONSchema; sch.IsSet() {
		cfg.Schema = sch.Inline
		if sch.Path != "" {
			b, err := os.ReadFile(sch.Path)
			if err != nil {
				return cfg, fmt.Errorf("validate.json_schema: %w", err)
			}
			cfg.Schema = b
		}
	}
	if len(s.Prices) > 0 {
		cfg.Prices = map[string]llm.Price{}
		for model, p := range s.Prices {
			cfg.Prices[model] = llm.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok,
				CachedInputPerMTok: p.CachedInputPerMTok, CacheWritePerMTok: p.CacheWritePerMTok}
		}
	}
	return cfg, nil
}

// geminiClient builds the genai client of a task or route on provider
// gemini (its API key: cfg's, else $GOOGLE_API_KEY or $GEMINI_API_KEY,
// kept in cfg so that errors redact it) or vertex (the task's project and
// region, the application default credentials); nil for another provider.
func geminiClient(cfg *llm.Config, t spec.Task, rehearsed bool) (llm.Generator, error) {
	var opts gemini.Options
	switch cfg.Provider {
	case llm.ProviderGemini:
		cfg.APIKey = cmp.Or(cfg.APIKey, os.Getenv("GOOGLE_API_KEY"), os.Getenv("GEMINI_API_KEY"))
		opts = gemini.Options{APIKey: cfg.APIKey, Endpoint: cfg.BaseURL}
	case llm.ProviderVertex:
		opts = gemini.Options{Vertex: true, Project: t.Project, Location: t.Region, Endpoint: cfg.BaseURL}
		if rehearsed {
			opts.Credentials = auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: rehearsalToken{}})
		}
	default:
		return nil, nil
	}
	c, err := gemini.New(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// claudeOnVertex is the Vertex AI backend of a task or route on provider
// anthropic whose task names a Google Cloud project (Claude on Vertex
// AI): the task's project, its region (else $GOOGLE_CLOUD_LOCATION or
// $CLOUD_ML_REGION) and the application default credentials, found as
// provider vertex finds them; nil for Anthropic's API and the other
// providers. A rehearsed route sends a placeholder token.
func claudeOnVertex(cfg llm.Config, t spec.Task, rehearsed bool) (*llm.AnthropicVertex, error) {
	if !t.ClaudeOnVertex(cfg.Provider) {
		return nil, nil
	}
	location := t.Region
	for _, name := range spec.VertexLocationEnv {
		location = cmp.Or(location, os.Getenv(name))
	}
	var creds *auth.Credentials
	if rehearsed {
		creds = auth.NewCredentials(&auth.CredentialsOptions{TokenProvider: rehearsalToken{}})
	} else {
		var err error
		if creds, err = gemini.DefaultCredentials(); err != nil {
			return nil, fmt.Errorf("claude on vertex: %w", err)
		}
	}
	return &llm.AnthropicVertex{Project: t.Project, Location: location, Authorize: gemini.Authorizer(creds)}, nil
}

// buildRoutes makes one llm task per route of the spec, from the task's
// configuration with the route's provider, model, endpoint, key, region
// and price; a rehearsed route (a mock route without a base_url, or a
// route of another provider that writes mock:) gets a simulated
// deployment of its own, with its faults, limits and context window.
func buildRoutes(s *spec.Spec, base llm.Config) ([]engine.Route, error) {
	var routes []engine.Route
	for i, r := range s.Routes {
		cfg := base
		cfg.Provider, cfg.Model, cfg.BaseURL, cfg.APIKey = r.Provider, r.Model, r.BaseURL, r.APIKey
		cfg.HTTPClient, cfg.Bedrock, cfg.Gemini, cfg.Vertex = nil, nil, nil, nil
		// task.store stores the calls of the routes whose provider keeps
		// stored completions; the others ask plainly.
		cfg.Store = base.Store && (r.Provider == llm.ProviderOpenAI || r.Provider == llm.ProviderAzure)
		if err := routeClients(s, r, &cfg); err != nil {
			return nil, fmt.Errorf("routes[%d] (%s): %w", i, r.Name, err)
		}
		if r.ContextWindow > 0 {
			// The pre-check compares the estimate with the window: count
			// with the model's tokenizer, not the rough scale.
			cfg.ExactTokens = true
		}
		cfg.Prices = routePrices(r, cfg.Prices)
		if _, priced := llm.LookupPrice(cfg.Prices, r.Model); !priced && s.Routing == "cost" {
			return nil, unpricedRoute(i, r)
		}
		t, err := llm.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("routes[%d] (%s): %w", i, r.Name, err)
		}
		provider := r.Provider
		if r.Provider == "mock" && r.BaseURL == "" {
			// Each built-in mock route is a deployment of its own, so that
			// a rehearsal can show a content-filter fallback between two.
			provider = "mock:" + r.Name
		}
		routes = append(routes, engine.Route{Name: r.Name, Provider: provider, Model: r.Model, Task: t, Tier: r.Tier, Weight: r.Weight,
			ContextWindow: r.ContextWindow, RequestsPerMinute: r.RateLimit.RequestsPerMinute, TokensPerMinute: r.RateLimit.TokensPerMinute})
	}
	return routes, nil
}

// The placeholders a rehearsed route of a real provider calls its
// simulated deployment with: an endpoint only the in-process transport
// reaches, and credentials the mock takes (it checks the SigV4 signature
// made with the AWS ones).
const (
	rehearsalURL       = "http://mock.invalid"
	rehearsalKey       = "mock-key"
	rehearsalAWSKeyID  = "AKIAMOCKREHEARSAL000"
	rehearsalAWSSecret = "mock-rehearsal-secret"
	rehearsalProject   = "mock-project"
)

// routeClients gives route r's configuration what its provider calls
// through: Bedrock's client for its region, genai's for Gemini or Vertex
// AI (its location), and for a rehearsed route the simulated deployment
// and the placeholders that reach it.
func routeClients(s *spec.Spec, r spec.Route, cfg *llm.Config) error {
	t := s.Task
	t.Region = cmp.Or(r.Region, t.Region)
	var awsCreds aws.CredentialsProvider
	if r.Mock.Rehearsed {
		if r.Provider == llm.ProviderBedrock || r.Provider == llm.ProviderVertex || t.ClaudeOnVertex(r.Provider) {
			t.Region = cmp.Or(t.Region, map[string]string{llm.ProviderBedrock: "us-east-1", llm.ProviderVertex: "us-central1", llm.ProviderAnthropic: "us-east5"}[r.Provider])
		}
		cfg.HTTPClient = rehearsalMock(s, r, t.Region).Client()
		switch r.Provider {
		case llm.ProviderOpenAI:
			cfg.BaseURL, cfg.APIKey = rehearsalURL+"/v1", rehearsalKey
		case llm.ProviderAnthropic, llm.ProviderAzure, llm.ProviderGemini:
			cfg.BaseURL, cfg.APIKey = rehearsalURL, rehearsalKey
		case llm.ProviderBedrock:
			cfg.BaseURL, cfg.APIKey = rehearsalURL, ""
			awsCreds = credentials.NewStaticCredentialsProvider(rehearsalAWSKeyID, rehearsalAWSSecret, "")
		case llm.ProviderVertex:
			cfg.BaseURL, cfg.APIKey = rehearsalURL, ""
			t.Project = cmp.Or(t.Project, rehearsalProject)
		}
		if t.ClaudeOnVertex(r.Provider) {
			cfg.APIKey = ""
		}
	}
	vertex, err := claudeOnVertex(*cfg, t, r.Mock.Rehearsed)
	if err != nil {
		return err
	}
	cfg.Vertex = vertex
	if r.Provider == llm.ProviderBedrock {
		c, err := bedrock.New(context.Background(), bedrock.Options{Region: t.Region, Endpoint: cfg.BaseURL, Credentials: awsCreds})
		if err != nil {
			return err
		}
		cfg.Bedrock = c
	}
	gc, err := geminiClient(cfg, t, r.Mock.Rehearsed)
	if err != nil {
		return err
	}
	cfg.Gemini = gc
	return nil
}

// rehearsalMock is the simulated deployment of rehearsed route r: the
// spec's mock (latency, seed, request log) with the route's faults,
// limits and context window; a Bedrock route's mock checks the SigV4
// signature made with the placeholder credentials, for the route's region.
func rehearsalMock(s *spec.Spec, r spec.Route, region string) *mock.Server {
	mc := mockConfig(s.Mock)
	mc.RPM, mc.TPM, mc.ContextWindow = r.Mock.RPM, r.Mock.TPM, r.Mock.ContextWindow
	mc.Faults = mockFaults(r.Mock.Errors)
	if r.Provider == llm.ProviderBedrock {
		mc.AWSCredentials, mc.AWSRegion = map[string]string{rehearsalAWSKeyID: rehearsalAWSSecret}, region
	}
	if path := s.Mock.LogRequests; path != "" {
		if !filepath.IsAbs(path) {
			path = filepath.Join(s.Dir(), path)
		}
		mc.LogRequests = appendFile(path)
	}
	return mock.New(mc)
}

// rehearsalToken is the access token a rehearsed Vertex AI route sends
// its simulated deployment: no Google login is looked for.
type rehearsalToken struct{}

func (rehearsalToken) Token(context.Context) (*auth.Token, error) {
	return &auth.Token{Value: "ya29.mock-rehearsal", Type: "Bearer"}, nil
}

// routePrices is the price table of route r: the task's, with the route's
// own price for its model when the spec gives one.
func routePrices(r spec.Route, prices map[string]llm.Price) map[string]llm.Price {
	p := r.Price
	if p == (spec.Price{}) {
		return prices
	}
	prices = maps.Clone(prices)
	if prices == nil {
		prices = map[string]llm.Price{}
	}
	prices[r.Model] = llm.Price{InputPerMTok: p.InputPerMTok, OutputPerMTok: p.OutputPerMTok,
		CachedInputPerMTok: p.CachedInputPerMTok, CacheWritePerMTok: p.CacheWritePerMTok}
	return prices
}

// unpricedRoute is routing: cost over a route it cannot price: it would
// rank last whatever it costs, which is not what the spec asked for.
func unpricedRoute(i int, r spec.Route) error {
	return fmt.Errorf("routing: cost: routes[%d] (%s) has no price: tenax knows none for model %s; set routes[%d].price.{input_per_mtok, output_per_mtok}", i, r.Name, r.Model, i)
}

// checkRoutePrices refuses routing: cost over a route without a price, for
// tenax validate, which builds no route.
func checkRoutePrices(s *spec.Spec, base llm.Config) error {
	if s.Routing != "cost" {
		return nil
	}
	for i, r := range s.Routes {
		if _, priced := llm.LookupPrice(routePrices(r, base.Prices), r.Model); !priced {
			return unpricedRoute(i, r)
		}
	}
	return nil
}

func mockFaults(e spec.MockErrors) mock.Faults {
	return mock.Faults{
		RateLimit: e.RateLimit, Server: e.Server, Overloaded: e.Overloaded,
		Timeout: e.Timeout, Reset: e.Reset, Malformed: e.Malformed,
		InvalidOutput: e.InvalidOutput, Auth: e.Auth,
		Quota: e.Quota, SpendLimit: e.SpendLimit, PaymentRequired: e.PaymentRequired,
		Forbidden: e.Forbidden, TooLarge: e.TooLarge, ContextLength: e.ContextLength,
		ContentFilter: e.ContentFilter, Refusal: e.Refusal, Truncated: e.Truncated,
	}
}

func mockConfig(m spec.Mock) mock.Config {
	return mock.Config{
		Latency: m.Latency.Min, LatencyMax: m.Latency.Max, Seed: m.Seed, RPM: m.RPM, TPM: m.TPM,
		Faults: mockFaults(m.Errors),
		Batch:  mock.BatchConfig{ProcessingTime: m.Batch.ProcessingTime, Window: m.Batch.Window, ExpireFirst: m.Batch.ExpireFirst},
	}
}

// appendFile is a writer that appends each write to the file at its path,
// opening and closing it every time: the built-in mock's request log
// (mock.log_requests), written only while someone debugs a job, so it
// holds no descriptor between writes and needs no closing.
type appendFile string

func (p appendFile) Write(b []byte) (int, error) {
	f, err := os.OpenFile(string(p), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, err
	}
	n, err := f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

func buildValidator(s *spec.Spec) (engine.Validator, error) {
	var vs []validate.Validator
	v := s.Validate
	if v.JSONSchema.IsSet() {
		var (
			sch *validate.Schema
			err error
		)
		name := "validate.json_schema (inline)"
		if v.JSONSchema.Path != "" {
			sch, err = validate.JSONSchemaFile(v.JSONSchema.Path)
			name = specRelative(s, v.JSONSchema.Path)
		} else {
			sch, err = validate.JSONSchema(v.JSONSchema.Inline, filepath.Join(s.Dir(), "inline-schema.json"))
		}
		if err != nil {
			return nil, fmt.Errorf("validate.json_schema: %w", err)
		}
		vs = append(vs, sch.Named(name))
	}
	if v.Regex != "" {
		re, err := validate.Regex(v.Regex)
		if err != nil {
			return nil, fmt.Errorf("validate.regex: %w", err)
		}
		vs = append(vs, re)
	}
	if len(v.Command) > 0 {
		c, err := validate.Command(v.Command, v.Timeout, s.Dir())
		if err != nil {
			return nil, fmt.Errorf("validate.command: %w", err)
		}
		vs = append(vs, c.Named(specRelative(s, v.Command[0])))
	}
	switch len(vs) {
	case 0:
		return nil, nil
	case 1:
		return vs[0], nil
	}
	return validate.All(vs...), nil
}

// specRelative names a path the spec resolved as the spec wrote it:
// relative to the spec's directory ("./check.sh", "schemas/out.json"), so
// that what tenax tells a provider never shows a local directory. A bare
// program name stays as it is; a path outside the spec's directory keeps
// only its base name.
func specRelative(s *spec.Spec, p string) string {
	if !filepath.IsAbs(p) {
		return p
	}
	rel, err := filepath.Rel(s.Dir(), p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return filepath.Base(p)
	}
	if !strings.Contains(rel, string(filepath.Separator)) {
		return "." + string(filepath.Separator) + rel
	}
	return rel
}

// engineConfig maps the spec's policies onto the engine's.
func engineConfig(s *spec.Spec, interactive bool) (engine.Config, error) {
	policy, err := retryPolicy(s)
	if err != nil {
		return engine.Config{}, err
	}
	hints := make([]heal.Hint, 0, len(s.Heal.Hints))
	for _, h := range s.Heal.Hints {
		hints = append(hints, heal.Hint{Match: h.Regexp, Text: h.Hint})
	}
	cfg := engine.Config{
		Concurrency:        s.Concurrency.Max,
		Adaptive:           s.Concurrency.Adaptive,
		InitialConcurrency: s.Concurrency.Initial,
		Retry:              policy,
		Breaker: breaker.Settings{
			Threshold: s.Breaker.Threshold, FailureRate: s.Breaker.FailureRate, Window: s.Breaker.Window,
			ResetTimeout: s.Breaker.ResetTimeout, Probes: s.Breaker.Probes,
		},
		Heal:              heal.Budget{MaxAttempts: s.Heal.MaxAttempts, MaxErrorAttempts: s.Heal.MaxErrorAttempts, MaxSameOutput: sameOutput(s.Heal.MaxSameOutput)},
		NoHeal:            s.Heal.MaxAttempts == 0,
		Hints:             hints,
		RequestsPerMinute: s.RateLimit.RequestsPerMinute,
		TokensPerMinute:   s.RateLimit.TokensPerMinute,
		Pacing:            engine.Pacing{BatchSize: s.Pacing.BatchSize, BatchDelay: s.Pacing.BatchDelay, ItemDelay: s.Pacing.ItemDelay},
		Budget:            engine.Budget{MaxCostUSD: s.Budget.MaxCostUSD, MaxTokens: s.Budget.MaxTokens},
		Fallbacks: engine.Fallbacks{Outage: s.Fallbacks.Outage, ContextWindow: s.Fallbacks.ContextWindow,
			ContentFilter: s.Fallbacks.ContentFilter, Escalate: s.Fallbacks.Escalate},
	}
	switch s.Routing {
	case "least_loaded":
		cfg.Routing = engine.RoutingLeastLoaded
	case "cost":
		cfg.Routing = engine.RoutingCost
	case "latency":
		cfg.Routing = engine.RoutingLatency
	}
	for _, name := range s.Breaker.Count {
		c, err := classify.ParseClass(name)
		if err != nil {
			return engine.Config{}, fmt.Errorf("breaker.count: %w", err)
		}
		cfg.BreakerCount = append(cfg.BreakerCount, c)
	}
	if cfg.OnTrip, err = onTrip(s.Breaker.OnTrip, interactive); err != nil {
		return engine.Config{}, err
	}
	if interactive {
		cfg.CheckinEvery = s.CheckinEvery
	}
	return cfg, nil
}

// onTrip is what a tripped breaker does, from the spec's breaker.on_trip
// and whether a terminal can answer.
func onTrip(action string, interactive bool) (engine.TripAction, error) {
	var a engine.TripAction
	switch action {
	case "prompt":
		a = engine.TripPrompt
	case "wait":
		a = engine.TripWait
	case "abort":
		a = engine.TripAbort
	case "":
		// docs/spec.md, "breaker": prompt on a terminal, abort without one.
		if interactive {
			a = engine.TripPrompt
		}
	default:
		return a, fmt.Errorf("breaker.on_trip: unknown action %q", action)
	}
	if a == engine.TripPrompt && !interactive {
		// Nobody can answer: a run without a terminal never waits forever
		// for an answer, it saves everything and stops.
		a = engine.TripAbort
	}
	return a, nil
}

// UsageError is a problem with the command line, the spec or the input,
// found before any call: exit code 2.
type UsageError struct {
	Err error
}

func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying problem.
func (e *UsageError) Unwrap() error { return e.Err }

func usage(err error) error {
	if err == nil {
		return nil
	}
	var ue *UsageError
	if errors.As(err, &ue) {
		return err
	}
	return &UsageError{Err: err}
}

// sameOutput is heal.max_same_output as heal.Budget's MaxSameOutput: the
// spec's 0 turns the rule off, heal's 0 is its default.
func sameOutput(n int) int {
	if n == 0 {
		return -1
	}
	return n
}
