// Package bench measures tenax's retry and breaker packages against the
// Go libraries people use for the same job: failsafe-go,
// cenkalti/backoff/v5, avast/retry-go/v5 and sony/gobreaker/v2.
//
// It is a module of its own so that the peers never become dependencies
// of tenax. Its library benchmarks are in library_test.go; run them with
//
//	cd bench && go test -run '^$' -bench . -benchmem -count 5 -cpu 1,2 ./...
//
// Each comparison runs every library through the same scenario, built
// once outside the timed loop the way a program would hold a policy or a
// breaker, with the same limits (5 attempts, no delay between retries,
// 5 consecutive failures to open a breaker, 60s open timeout), so that
// the figures are the cost of each library's own bookkeeping.
//
// The package's tests also hold TestBatchBarrierAgainstContinuousPipeline,
// a system-level figure: the engine paced in batches as older tools pace
// calls, against its continuous pipeline, in fake time. The other system
// figures come from exec.sh, pacing.sh and cmd/llmbench.
//
// docs/benchmarks.md in the main module records a run and what it means.
package bench
