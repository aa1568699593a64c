package job

import (
	"context"
	"fmt"
	nethttp "net/http"
	"slices"
	"strings"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/engine"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/spec"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/task"
	"github.com/tenaxhq/tenax/task/agent"
	execTask "github.com/tenaxhq/tenax/task/exec"
	httpTask "github.com/tenaxhq/tenax/task/http"
	"github.com/tenaxhq/tenax/task/llm"
)

// buildAgent makes the agent an llm task with tools runs as: model, each
// tool's runner (an exec or http task), the limits, and the job's retry
// policy for the runners' transient failures.
//
// mockClient, when the job's provider is the in-process mock, is also the
// client of an http tool whose url is the mock's (http://mock.invalid/…),
// so that an example can call an http tool with no server running.
func buildAgent(s *spec.Spec, model *llm.Task, mockClient *nethttp.Client) (*agent.Task, error) {
	policy, err := retryPolicy(s)
	if err != nil {
		return nil, err
	}
	tools := make([]*agent.Tool, 0, len(s.Task.Tools))
	for i, st := range s.Task.Tools {
		runner, err := toolRunner(s, st, mockClient)
		if err != nil {
			return nil, fmt.Errorf("tools[%d] %s: %w", i, st.Name, err)
		}
		tool, err := agent.NewTool(agent.Def{Name: st.Name, Description: st.Description, Parameters: st.Parameters.JSON}, runner, st.Idempotent)
		if err != nil {
			return nil, err
		}
		tools = append(tools, tool)
	}
	return agent.New(agent.Config{
		Model: model, Tools: tools, MaxSteps: s.Task.MaxSteps, MaxConsecutiveErrors: s.Task.MaxConsecutiveErrors, Retry: policy,
		MaxResultBytes: s.Task.MaxToolResultBytes, KeepWholeSteps: s.Task.KeepWholeSteps, OldResultBytes: s.Task.OldToolResultBytes,
	})
}

// toolRunner is the exec or http task that runs the tool st; its output
// is text, which the model reads.
func toolRunner(s *spec.Spec, st spec.Tool, mockClient *nethttp.Client) (task.Task, error) {
	if e := st.Exec; e != nil {
		dir := e.Dir
		if dir == "" {
			dir = s.Dir()
		}
		return execTask.New(execTask.Config{Argv: e.Argv, Stdin: e.Stdin, Env: e.Env, Dir: dir, Timeout: e.Timeout})
	}
	h := st.HTTP
	var client *nethttp.Client
	if strings.HasPrefix(h.URL, mockOrigin) {
		client = mockClient
	}
	return httpTask.New(httpTask.Config{Method: h.Method, URL: h.URL, Headers: h.Headers, Body: h.Body, Timeout: h.Timeout, Client: client})
}

// mockOrigin is where the in-process mock answers (llm.MockBaseURL's
// origin).
const mockOrigin = "http://mock.invalid/"

// retryPolicy is the job's retry policy (retry:, classify:): the engine's
// for calls, an agent's for its tools' runs.
func retryPolicy(s *spec.Spec) (retry.Policy, error) {
	jitter, err := retry.ParseJitter(s.Retry.Backoff.Jitter)
	if err != nil {
		return retry.Policy{}, fmt.Errorf("retry.backoff.jitter: %w", err)
	}
	var rules []classify.Rule
	for _, r := range s.Classify {
		rules = append(rules, r.Rule)
	}
	return retry.Policy{
		MaxAttempts: s.Retry.MaxAttempts,
		MaxElapsed:  s.Retry.MaxElapsed,
		MaxHint:     s.Retry.MaxHint,
		Backoff: retry.Backoff{
			Base: s.Retry.Backoff.Base, Multiplier: s.Retry.Backoff.Multiplier,
			Min: s.Retry.Backoff.Min, Max: s.Retry.Backoff.Max, Jitter: jitter,
		},
		Classifier: classify.Classifier{Rules: rules},
	}, nil
}

// durableAgent makes an agent task keep its items' steps in the job's
// step log (store.StepLog), so that a resumed run replays them rather
// than paying for them again; other tasks, and a job whose store keeps
// no steps, run as they are. An item whose latest record failed starts
// a new transcript when this run takes it again (--retry-failures): the
// record's transcript is spent. Secrets are scrubbed from what the log
// keeps, as from records.
func durableAgent(ctx context.Context, t task.Task, j store.Job, redact func(string) string) (task.Task, error) {
	a, ok := t.(*agent.Task)
	if !ok {
		return t, nil
	}
	log, ok := store.StepsOf(j)
	if !ok {
		return t, nil
	}
	spent := map[int]int{}
	err := j.Failures(ctx, func(r store.Record) error {
		if r.Agent != nil && r.Agent.Transcript != nil {
			spent[r.Idx] = r.Agent.Transcript.N
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading the failures: %w", err)
	}
	if redact != nil {
		log = redactedSteps{StepLog: log, redact: redact}
	}
	return a.Durable(log, func(idx int) int { return spent[idx] }).InJob(storedJobTag(j.Manifest())), nil
}

// storedJobTag names the job in its stored model calls' tags
// (task.store): its id and the moment it was created, in nanoseconds.
// An id alone names a second ("job_20261203_164902"), which two tenax
// homes sharing an OpenAI project could both give a job.
func storedJobTag(m store.Manifest) string {
	return fmt.Sprintf("%s.%d", m.ID, m.Created.UnixNano())
}

// redactedSteps scrubs the spec's secrets from the entries it keeps (a
// tool's output may echo a header it was given).
type redactedSteps struct {
	store.StepLog
	redact func(string) string
}

func (r redactedSteps) AppendSteps(ctx context.Context, idx int, entries ...[]byte) error {
	clean := make([][]byte, len(entries))
	for i, e := range entries {
		clean[i] = []byte(r.redact(string(e)))
	}
	return r.StepLog.AppendSteps(ctx, idx, clean...)
}

// agentRoutes makes each route's task, when t is an agent, the agent t
// asking that route's model, with t's tools, limits and step log: the
// engine picks a route for each attempt, and an item moved to another
// route (fallbacks.outage) goes on there at its next recorded step,
// replayed in that provider's format. Routes of any other task are
// returned as they are.
func agentRoutes(t task.Task, routes []engine.Route) []engine.Route {
	a, ok := t.(*agent.Task)
	if !ok || len(routes) == 0 {
		return routes
	}
	out := slices.Clone(routes)
	for i := range out {
		if m, ok := out[i].Task.(agent.Model); ok {
			out[i].Task = a.WithModel(m)
		}
	}
	return out
}
