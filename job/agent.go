package job

import (
	"fmt"
	nethttp "net/http"
	"strings"

	"github.com/tenaxhq/tenax/classify"
	"github.com/tenaxhq/tenax/retry"
	"github.com/tenaxhq/tenax/spec"
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
