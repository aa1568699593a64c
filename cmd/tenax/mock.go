package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/mock"
)

// newMockCmd is `tenax mock`: the simulated LLM provider as a server, to
// rehearse a job's fault handling before spending money. SIGINT or
// SIGTERM stops it gracefully: the answers in flight finish, exit 0.
func newMockCmd(g *globals) *cobra.Command {
	var (
		addr    string
		logPath string
		cfg     mock.Config
	)
	cmd := &cobra.Command{
		Use:   "mock",
		Short: "Serve a simulated LLM provider that fails on purpose",
		Long:  mockLong,
		Example: `  tenax mock --rate-limit 0.05 --server-error 0.02 --invalid-output 0.1 --latency 200ms --latency-max 2s
  tenax mock --rpm 60 --tpm 20000 --log-requests requests.jsonl
  tenax mock --quota 0.01 --context-length 0.02 --truncated 0.05`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return serveMock(cmd.Context(), g, addr, logPath, cfg, cmd.OutOrStdout())
		},
	}
	addMockFlags(cmd, &addr, &logPath, &cfg)
	return cmd
}

// serveMock serves the mock until ctx ends or a signal comes, logging
// requests to logPath when set.
func serveMock(ctx context.Context, g *globals, addr, logPath string, cfg mock.Config, out io.Writer) error {
	if err := cfg.Validate(); err != nil {
		return usageErr(err)
	}
	if logPath != "" {
		f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return usageErr(fmt.Errorf("--log-requests: %w", err))
		}
		defer f.Close()
		cfg.LogRequests = f
	}
	ctx, cancel := g.cancelOnInterrupt(ctx, "tenax mock: stopping: finishing the answers in flight")
	defer cancel()
	return mock.ListenAndServe(ctx, addr, cfg, out)
}

// addMockFlags defines tenax mock's flags: where to listen, the limits and
// the fault fractions.
func addMockFlags(cmd *cobra.Command, addr, logPath *string, cfg *mock.Config) {
	f := cmd.Flags()
	f.StringVar(addr, "addr", "127.0.0.1:8089", "address to listen on")
	f.DurationVar(&cfg.Latency, "latency", 0, "time each answer takes")
	f.DurationVar(&cfg.LatencyMax, "latency-max", 0, "when above --latency, answers take a uniform time between the two")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed of the fault and latency draws")
	f.IntVar(&cfg.RPM, "rpm", 0, "requests per minute per model and dialect, refilled continuously; 429 past it (0: unlimited)")
	f.IntVar(&cfg.TPM, "tpm", 0, "tokens per minute per model and dialect, refilled continuously; 429 past it (0: unlimited)")
	f.IntVar(&cfg.ContextWindow, "context-window", 0, "every model's context window in tokens; a prompt and max_tokens past it get the context-length 400 (0: 128000 OpenAI, 200000 Anthropic)")
	f.Float64Var(&cfg.Faults.RateLimit, "rate-limit", 0, "fraction of requests answered 429 with Retry-After")
	f.Float64Var(&cfg.Faults.Server, "server-error", 0, "fraction of requests answered 500 (on a stream: an error event halfway)")
	f.Float64Var(&cfg.Faults.Overloaded, "overloaded", 0, "fraction of requests answered 529 (Anthropic) or 503 (OpenAI) (on a stream: an error event halfway)")
	f.Float64Var(&cfg.Faults.Timeout, "timeout", 0, "fraction of requests never answered")
	f.Float64Var(&cfg.Faults.Reset, "reset", 0, "fraction of connections reset before the answer")
	f.Float64Var(&cfg.Faults.Malformed, "malformed", 0, "fraction of answers whose connection is cut halfway through the body or stream")
	f.Float64Var(&cfg.Faults.InvalidOutput, "invalid-output", 0, "fraction of answers that are plausible but wrong")
	f.Float64Var(&cfg.Faults.Auth, "auth", 0, "fraction of requests answered 401")
	f.Float64Var(&cfg.Faults.Quota, "quota", 0, "fraction answered as out of credit (OpenAI 429 insufficient_quota, Anthropic 400 invalid_request_error \"credit balance is too low\", Bedrock 429 ThrottlingException \"too many tokens per day\")")
	f.Float64Var(&cfg.Faults.SpendLimit, "spend-limit", 0, "fraction answered 429 as past the organization's spend limit")
	f.Float64Var(&cfg.Faults.PaymentRequired, "payment-required", 0, "fraction answered 402")
	f.Float64Var(&cfg.Faults.Forbidden, "forbidden", 0, "fraction answered 403")
	f.Float64Var(&cfg.Faults.TooLarge, "too-large", 0, "fraction answered 413 request_too_large")
	f.Float64Var(&cfg.Faults.ContextLength, "context-length", 0, "fraction answered 400 as past the context window (context_length_exceeded)")
	f.Float64Var(&cfg.Faults.ContentFilter, "content-filter", 0, "fraction of answers stopped by the content filter (finish_reason content_filter)")
	f.Float64Var(&cfg.Faults.Refusal, "refusal", 0, "fraction of answers that are refusals (message.refusal; stop_reason refusal)")
	f.Float64Var(&cfg.Faults.Truncated, "truncated", 0, "fraction of answers cut at max_tokens (finish_reason length)")
	f.Float64Var(&cfg.Faults.ModelNotReady, "model-not-ready", 0, "fraction answered as a model still loading (Bedrock's 429 ModelNotReadyException; elsewhere as --overloaded)")
	f.Float64Var(&cfg.Faults.ModelTimeout, "model-timeout", 0, "fraction answered as a model that timed out (Bedrock's 408 ModelTimeoutException; elsewhere as --server-error)")
	f.Var(awsCredentials{&cfg.AWSCredentials}, "aws-credentials", "Bedrock: check each Converse request's SigV4 signature against `ID:SECRET` (an access key id and its secret; repeat for more); unset, any signed request is taken")
	f.StringVar(&cfg.AWSRegion, "aws-region", "", "Bedrock, with --aws-credentials: the region served; a signature scoped to another is 403 InvalidSignatureException")
	f.StringVar(logPath, "log-requests", "", "append every request and answer to `FILE` as JSON lines, credentials and custom header values redacted")
	f.DurationVar(&cfg.Batch.ProcessingTime, "batch-processing", 0, "batch APIs: time a batch takes to process all its requests")
	f.DurationVar(&cfg.Batch.Window, "batch-window", 0, "batch APIs: completion window; a batch still processing then expires the rest (default 24h)")
	f.IntVar(&cfg.Batch.ExpireFirst, "batch-expire-first", 0, "batch APIs: the first N batches outlive their window and half their requests expire")
}

// awsCredentials is --aws-credentials: ID:SECRET pairs into a map.
type awsCredentials struct{ m *map[string]string }

func (a awsCredentials) Set(v string) error {
	id, secret, ok := strings.Cut(v, ":")
	if !ok || id == "" || secret == "" {
		return fmt.Errorf("want ACCESS_KEY_ID:SECRET_ACCESS_KEY, got %q", v)
	}
	if *a.m == nil {
		*a.m = map[string]string{}
	}
	(*a.m)[id] = secret
	return nil
}

func (a awsCredentials) String() string {
	if a.m == nil || len(*a.m) == 0 {
		return ""
	}
	return fmt.Sprintf("%d key(s)", len(*a.m))
}

func (awsCredentials) Type() string { return "ID:SECRET" }

const mockLong = `tenax mock serves a simulated LLM provider speaking OpenAI's chat completions
(POST /v1/chat/completions) and Anthropic's messages (POST /v1/messages) APIs, with
the real providers' error bodies and headers. Point a job at it with
provider: openai (base_url http://ADDR/v1) or provider: anthropic (base_url http://ADDR)
and any api_key, to rehearse how the job handles faults before spending money.

Also served: streaming (stream: true) in both dialects, tools and json_schema structured
outputs (answers that conform to the schema, filled from the prompt), GET /v1/models,
POST /v1/messages/count_tokens, and stored chat completions (store: true with metadata,
listed by GET /v1/chat/completions?metadata[k]=v; a call whose client left is answered
all the same, as a provider bills it, and logged "abandoned"). Requests are validated as the real APIs validate them
(json_object without "json" in the messages, temperature out of range, a missing
anthropic-version header... are 400s with the providers' bodies).

Models: mock-echo answers the prompt; mock-json answers {"text": prompt, "length": n}.
Fault flags are fractions of requests (0 to 1, summing to at most 1), drawn from --seed,
so the same seed and request order meet the same faults.

--rpm and --tpm are limits per model and dialect that refill continuously, as the
providers' do: the rate-limit headers are on every answer, and a 429's retry-after is
the time the refill takes to make room. --log-requests FILE appends one JSON line per
request and answer (API keys redacted): what a job really sent, re-asks included.

Ctrl-C (SIGINT) or SIGTERM stops the server: it accepts no new connection, lets the
answers in flight finish, and exits 0.

It also serves both batch APIs (OpenAI /v1/files and /v1/batches, Anthropic
/v1/messages/batches), for task.mode: batch: each request of a batch meets the same
faults, as an errored request or an invalid answer, over --batch-processing.`
