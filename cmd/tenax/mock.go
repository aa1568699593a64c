package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tenaxhq/tenax/mock"
)

// newMockCmd is `tenax mock`: the simulated LLM provider as a server, to
// rehearse a job's fault handling before spending money. SIGINT or
// SIGTERM stops it gracefully: the answers in flight finish, exit 0.
func newMockCmd(g *globals) *cobra.Command {
	var (
		addr string
		cfg  mock.Config
	)
	cmd := &cobra.Command{
		Use:   "mock",
		Short: "Serve a simulated LLM provider that fails on purpose",
		Long: `tenax mock serves a simulated LLM provider speaking OpenAI's chat completions
(POST /v1/chat/completions) and Anthropic's messages (POST /v1/messages) APIs, with
the real providers' error bodies and headers. Point a job at it with
provider: openai (base_url http://ADDR/v1) or provider: anthropic (base_url http://ADDR)
and any api_key, to rehearse how the job handles faults before spending money.

Models: mock-echo answers the prompt; mock-json answers {"text": prompt, "length": n}.
Fault flags are fractions of requests (0 to 1, summing to at most 1), drawn from --seed,
so the same seed and request order meet the same faults.

Ctrl-C (SIGINT) or SIGTERM stops the server: it accepts no new connection, lets the
answers in flight finish, and exits 0.`,
		Example: `  tenax mock --rate-limit 0.05 --server-error 0.02 --invalid-output 0.1 --latency 200ms --latency-max 2s
  tenax mock --rpm 60 --tpm 20000`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := cfg.Validate(); err != nil {
				return usageErr(err)
			}
			ctx, cancel := context.WithCancel(cmd.Context())
			defer cancel()
			if g.interrupts != nil {
				go func() {
					select {
					case <-ctx.Done():
					case <-g.interrupts:
						fmt.Fprintln(g.stderr, "tenax mock: stopping: finishing the answers in flight")
						cancel()
					}
				}()
			}
			return mock.ListenAndServe(ctx, addr, cfg, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:8089", "address to listen on")
	f.DurationVar(&cfg.Latency, "latency", 0, "time each answer takes")
	f.DurationVar(&cfg.LatencyMax, "latency-max", 0, "when above --latency, answers take a uniform time between the two")
	f.Int64Var(&cfg.Seed, "seed", 0, "seed of the fault and latency draws")
	f.IntVar(&cfg.RPM, "rpm", 0, "hidden limit of requests per minute, answered with 429 past it (0: none)")
	f.IntVar(&cfg.TPM, "tpm", 0, "hidden limit of tokens per minute, answered with 429 past it (0: none)")
	f.Float64Var(&cfg.Faults.RateLimit, "rate-limit", 0, "fraction of requests answered 429 with Retry-After")
	f.Float64Var(&cfg.Faults.Server, "server-error", 0, "fraction of requests answered 500")
	f.Float64Var(&cfg.Faults.Overloaded, "overloaded", 0, "fraction of requests answered 529 (Anthropic) or 503 (OpenAI)")
	f.Float64Var(&cfg.Faults.Timeout, "timeout", 0, "fraction of requests never answered")
	f.Float64Var(&cfg.Faults.Reset, "reset", 0, "fraction of connections reset before the answer")
	f.Float64Var(&cfg.Faults.Malformed, "malformed", 0, "fraction of requests answered 200 with a truncated body")
	f.Float64Var(&cfg.Faults.InvalidOutput, "invalid-output", 0, "fraction of answers that are plausible but wrong")
	f.Float64Var(&cfg.Faults.Auth, "auth", 0, "fraction of requests answered 401")
	return cmd
}
