package spec

import (
	"fmt"
	"slices"
	"time"
)

// Batch configures provider batch mode: items go to the provider's batch
// API in waves, each wave one attempt of its items (see package batch).
type Batch struct {
	// OnlineTail: a later wave of at most this many items is finished with
	// online calls instead of another batch; default 20, 0 never.
	OnlineTail int `yaml:"online_tail"`
	// PollInterval is the first wait between two polls of a wave's
	// batches; it doubles up to PollMax. Defaults 5s and 1m.
	PollInterval time.Duration `yaml:"poll_interval"`
	PollMax      time.Duration `yaml:"poll_max"`
	// MaxRequests and MaxBytes cap one batch; 0 (default) is the
	// provider's limit (OpenAI 50,000 and 200 MB, Anthropic 100,000 and
	// 256 MB).
	MaxRequests int `yaml:"max_requests"`
	MaxBytes    int `yaml:"max_bytes"`
	// MaxEnqueuedTokens caps the estimated prompt tokens a wave has in
	// its batches at once: the provider's per-model queue limit (OpenAI's
	// "enqueued tokens", which fails a whole batch past it). Items past
	// the cap wait for the next wave without spending an attempt; 0
	// (default) does not count.
	MaxEnqueuedTokens int `yaml:"max_enqueued_tokens"`
	// TripShare: a wave in which at least this share of the requests (and
	// at least breaker.threshold of them) failed with one error trips the
	// breaker before the next wave; default 0.5.
	TripShare float64 `yaml:"trip_share"`
}

// MockBatch configures the simulated provider's batch APIs (see
// mock.BatchConfig).
type MockBatch struct {
	// ProcessingTime is how long a batch takes to process its requests.
	ProcessingTime time.Duration `yaml:"processing_time"`
	// Window is the completion window; default 24h.
	Window time.Duration `yaml:"window"`
	// ExpireFirst makes the first N batches outlive their window, so
	// about half their requests expire.
	ExpireFirst int `yaml:"expire_first"`
}

// The task modes, and the providers batch mode works with.
var (
	modes          = []string{"online", "batch"}
	batchProviders = []string{"openai", "azure", "anthropic", "gemini", "mock"}
)

// BatchProviders returns the providers whose batch APIs batch mode speaks.
func BatchProviders() []string { return slices.Clone(batchProviders) }

// BatchProblem says why a task cannot run in batch mode ("" when it can):
// what `tenax run --batch` and task.mode: batch both check.
func (t *Task) BatchProblem() string {
	if t.Type != "llm" {
		return "batch mode is for llm tasks, and this task is " + quote(t.Type)
	}
	if len(t.Tools) > 0 {
		return "batch mode does not take tools: a batch wave carries one call per item, and an agent needs its tools' results between its calls (docs/batch.md, \"Agents\")"
	}
	if p := providerBatchProblem(t.Provider, t.ClaudeOnVertex(t.Provider), "task"); p != "" {
		return p
	}
	return ""
}

// providerBatchProblem says why provider, the provider of whose ("task",
// "route"), has no batch API tenax speaks; "" when it has one. onVertex
// says an anthropic one is Claude on Vertex AI.
func providerBatchProblem(provider string, onVertex bool, whose string) string {
	switch {
	case onVertex:
		return "batch mode is not offered for Claude on Vertex AI (provider anthropic with task.project): Vertex AI's batch prediction reads Cloud Storage or BigQuery and writes there; Anthropic's Message Batches API is provider anthropic's without a project (" + orList(batchProviders) + " have a batch API tenax speaks)"
	case provider == "bedrock":
		return "batch mode is not offered on bedrock: Bedrock's batch inference reads its requests from S3 and writes its answers there (" + orList(batchProviders) + " have a batch API tenax speaks)"
	case provider == "vertex":
		return "batch mode is not offered on vertex: Vertex AI's batch prediction reads Cloud Storage or BigQuery and writes there; the Gemini API's batch mode is provider gemini's (" + orList(batchProviders) + " have a batch API tenax speaks)"
	case !slices.Contains(batchProviders, provider):
		return "batch mode needs a provider with a batch API (" + orList(batchProviders) + "), and this " + whose + "'s provider is " + quote(provider)
	}
	return ""
}

// BatchProblem says why the spec cannot run in batch mode ("" when it
// can): its task's problem, or the first route whose provider has no
// batch API, named with its position and name. Every route of a batch
// job gets batches, so one that cannot would fail only when a wave
// reaches it.
func (s *Spec) BatchProblem() string {
	if p := s.Task.BatchProblem(); p != "" {
		return p
	}
	if i, p := s.routeBatchProblem(); p != "" {
		return fmt.Sprintf("routes[%d] (%s): %s", i, s.Routes[i].Name, p)
	}
	return ""
}

// routeBatchProblem is the index of the first route whose provider has
// no batch API and why, or -1 and "".
func (s *Spec) routeBatchProblem() (int, string) {
	for i, r := range s.Routes {
		if p := providerBatchProblem(r.Provider, s.Task.ClaudeOnVertex(r.Provider), "route"); p != "" {
			return i, p + "; every route of a batch mode job is sent batches (docs/batch.md#routes): drop the route, or run the job online"
		}
	}
	return -1, ""
}

// DefaultBatch is the batch section of a spec that writes none, for
// `tenax run --batch`.
func DefaultBatch() Batch {
	return Batch{OnlineTail: 20, PollInterval: 5 * time.Second, PollMax: time.Minute, TripShare: 0.5}
}

// checkBatch checks task.mode and the batch section. Like the mock's, the
// batch section's defaults are applied only when batch mode is asked for
// or the section is written, so online specs stay as they were.
func (d *decoder) checkBatch(s *Spec) {
	t := &s.Task
	d.oneOf("task.mode", t.Mode, modes)
	if t.Mode == "batch" && t.Type == "llm" { // other types: "does not apply"
		if p := t.BatchProblem(); p != "" {
			d.problem("task.mode", nil, "%s", p)
		} else if i, p := s.routeBatchProblem(); p != "" {
			at := fmt.Sprintf("routes[%d]", i)
			d.errorf(d.at(at+".provider", at+".name", "routes"), "", "%s.provider (route %s): %s (task.mode is batch)", at, s.Routes[i].Name, p)
		}
	}
	if t.Mode != "batch" && !d.isSet("batch") {
		return
	}
	b := &s.Batch
	def := DefaultBatch()
	if !d.isSet("batch.online_tail") {
		b.OnlineTail = def.OnlineTail
	}
	if !d.isSet("batch.poll_interval") {
		b.PollInterval = def.PollInterval
	}
	if !d.isSet("batch.poll_max") {
		b.PollMax = max(def.PollMax, b.PollInterval)
	}
	if !d.isSet("batch.trip_share") {
		b.TripShare = def.TripShare
	}
	for key, v := range map[string]int{"online_tail": b.OnlineTail, "max_requests": b.MaxRequests, "max_bytes": b.MaxBytes, "max_enqueued_tokens": b.MaxEnqueuedTokens} {
		if v < 0 {
			d.problem("batch."+key, nil, "must not be negative, got %d", v)
		}
	}
	if b.PollInterval <= 0 {
		d.problem("batch.poll_interval", nil, "must be positive, got %s", b.PollInterval)
	}
	if b.PollMax < b.PollInterval {
		d.problem("batch.poll_max", nil, "%s is less than batch.poll_interval (%s)", b.PollMax, b.PollInterval)
	}
	mb := s.Mock.Batch
	if mb.ProcessingTime < 0 || mb.Window < 0 || mb.ExpireFirst < 0 {
		d.problem("mock.batch", nil, "processing_time, window and expire_first must not be negative")
	}
	if b.TripShare <= 0 || b.TripShare > 1 {
		d.problem("batch.trip_share", nil, "must be more than 0 and at most 1, got %g", b.TripShare)
	}
}
