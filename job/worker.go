package job

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/input"
	"github.com/tenaxhq/tenax/redact"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	execTask "github.com/tenaxhq/tenax/task/exec"
)

// Created is a job made for workers on other machines: its manifest is
// stored and its input checked, and nothing has run.
type Created struct {
	// Job is the new job, open for writing; the caller closes it.
	Job store.Job
	// Spec is the spec as loaded here.
	Spec *spec.Spec
	// SpecSource is the spec file as written, ${VAR}s unexpanded: each
	// worker parses it again (NewPlan) with its own environment, so that no
	// secret is ever stored.
	SpecSource []byte
	// InputPath and Format say where the items are.
	InputPath string
	Format    input.Format
	// Scanned is the scan of the input the job hashed: an enqueue reads
	// the input checked against it (input.OpenScanned), so an input
	// changed meanwhile is never enqueued in part.
	Scanned input.Summary
}

// ErrLiteralSecret is returned by Create for a spec that writes a secret
// (an api_key) as a value instead of a ${VAR}: workers read the spec from
// the database, where a secret must never be.
var ErrLiteralSecret = errors.New("the spec writes a secret as a literal value")

// Create starts a job in st from the spec at specPath without running it:
// the spec and the input are checked as Run checks them and the manifest
// is created, holding the input's first opts.Limit items when that is set. Workers run its items (package worker).
func Create(ctx context.Context, specPath string, st store.Store, opts Options) (*Created, error) {
	s, err := LoadSpec(specPath, opts.env())
	if err != nil {
		return nil, err
	}
	src, err := os.ReadFile(s.Path())
	if err != nil {
		return nil, usage(fmt.Errorf("spec: %w", err))
	}
	if redacted := s.Redact(string(src)); redacted != string(src) {
		return nil, usage(fmt.Errorf("%s: %w; workers read the spec from the database, so write the secret as ${VAR} and set VAR in each worker's environment", s.Path(), ErrLiteralSecret))
	}
	// A --limit run's job holds the input's first opts.Limit items, as on
	// one machine: its hash is of that prefix, which a resume checks.
	inPath, absSpec, format, sum, err := newInput(ctx, s, opts, input.ScanOptions{MaxItems: opts.Limit})
	if err != nil {
		return nil, err
	}
	// The task is built once here so that a spec a worker could not build
	// fails now, at the terminal, rather than on every worker.
	b, err := buildTask(s, opts.Home, 0, st)
	if err != nil {
		return nil, usage(err)
	}
	b.Close()
	redacted, err := s.Redacted()
	if err != nil {
		return nil, fmt.Errorf("recording the spec: %w", err)
	}
	j, err := st.Create(ctx, store.Manifest{
		Name:        s.Name,
		Created:     time.Now(),
		Version:     opts.Version,
		SpecPath:    absSpec,
		Spec:        redacted,
		InputPath:   inPath,
		InputSHA256: sum.SHA256,
		InputBytes:  inputBytes(sum),
		Items:       sum.Items,
		State:       store.StateRunning,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the job: %w", err)
	}
	return &Created{Job: j, Spec: s, SpecSource: src, InputPath: inPath, Format: format, Scanned: sum}, nil
}

// Plan is a job's run as a worker builds it from the job's spec source:
// the task, the validator and the engine's configuration, with secrets
// from the worker's own environment.
type Plan struct {
	// Spec is the spec as this worker resolved it.
	Spec *spec.Spec
	// Task is the spec's task.
	Task task.Task
	// Config is the engine configuration the spec asks for; the worker
	// adjusts what it shares with other workers (rate limits) before
	// engine.New.
	Config engine.Config
	built  *built
}

// NewPlan parses a job's spec source (Created.SpecSource) as if it were
// the file path, relative paths resolved against its directory, expanding
// ${VAR}s from opts.Env, and builds its task. With opts.Store the job's
// PostgreSQL store, an llm task's response cache is the one in its
// database, shared by every worker (unless the spec names a cache.dir).
// Close releases it.
func NewPlan(path string, source []byte, opts Options) (*Plan, error) {
	s, err := spec.Parse(path, source, filepath.Dir(path), opts.env())
	if err != nil {
		return nil, usage(err)
	}
	b, err := buildTask(s, opts.Home, 0, opts.Store)
	if err != nil {
		return nil, usage(err)
	}
	// A worker has no terminal: on_trip prompt waits for the operator's
	// decision through the worker's Operator. Unset, as on one machine, it
	// asks when a terminal attends the job (an attached tenax run) and
	// aborts when none does: the worker's Operator decides at the trip.
	cfg, err := engineConfig(s, true)
	if err != nil {
		b.Close()
		return nil, usage(err)
	}
	cfg.CheckinEvery = 0
	if b.cache != nil {
		cfg.Cache = b.cache
	}
	cfg.Validator = b.validator
	// The spec's routes, none for a spec without: the engine runs that
	// one as its implicit route. The worker shares each named route's
	// breaker, cooldown and told limits through PostgreSQL.
	cfg.Routes = b.routes
	cfg.OnEvent = newEventLog(opts.logger()).log
	return &Plan{Spec: s, Task: b.task, Config: cfg, built: b}, nil
}

// Close releases what the plan opened: its response cache, the entries
// put last written. Call it once the engine that ran the plan's task has
// ended.
func (p *Plan) Close() error {
	return p.built.Close()
}

// Checkpoint returns what the engine should append records to: cp, with
// the spec's secrets redacted from every record when it has any.
func (p *Plan) Checkpoint(cp engine.Checkpoint) engine.Checkpoint {
	if len(p.Spec.Secrets()) == 0 {
		return cp
	}
	return &redact.Checkpoint{Writer: cp, Redact: p.Spec.Redact}
}

// Durable returns tk, the task a worker runs the job's items with, keeping
// an agent's steps in j's step log as a run on one machine does: with
// PostgreSQL, j's notes (kind agent-steps:<idx>), which every worker of
// the job reads. So an item whose worker died mid-loop, taken up by
// another worker, replays the steps recorded and asks the model only for
// the ones after them (docs/agents.md). Another task is returned as it
// is.
func (p *Plan) Durable(ctx context.Context, tk task.Task, j store.Job) (task.Task, error) {
	var redactSteps func(string) string
	if len(p.Spec.Secrets()) > 0 {
		redactSteps = p.Spec.Redact
	}
	return durableAgent(ctx, tk, j, redactSteps)
}

// WithProcessGroups returns tk with its commands (an exec task's, an
// agent's exec tools') recording their process groups in g, and true; a
// task that starts no commands is returned as it is, with false. Apply it
// before Durable.
func WithProcessGroups(tk task.Task, g *execTask.GroupFile) (task.Task, bool) {
	if !runsCommands(tk) {
		return tk, false
	}
	return withGroups(tk, g), true
}

// Routes returns routes, the plan's routes as a worker runs them with tk
// (the task Durable returned): for an agent, each route's task is tk
// asking that route's model, so that an item moved to another route goes
// on at its last recorded step.
func (p *Plan) Routes(tk task.Task, routes []engine.Route) []engine.Route {
	return agentRoutes(tk, routes)
}
