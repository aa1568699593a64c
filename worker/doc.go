// Package worker runs tenax jobs on many machines, on River
// (github.com/riverqueue/river) and PostgreSQL: an existing distributed
// engine, not a home-made queue.
//
// A job's items are River jobs (kind tenax_items) in the job's own queue,
// a group of up to sixteen consecutive items to a River job (GroupItems),
// whose arguments say only which job, round and items; each item's input
// is a row of tenax_inputs. Both are inserted in bulk through COPY, a
// batch of items and their inputs in one transaction (Client.Enqueue).
// One River job per group instead of per item divides River's own work
// per item — its row, its fetch, its completion — by the group's size. A
// Worker is a River client: each execution reads its group's inputs in
// one query and calls engine.Engine.Do for each item not yet recorded
// this round, side by side, under River's context, on an engine built
// from the job's stored spec source with the worker's own environment for
// secrets, so tenax's whole per-item logic (the gate, retries with
// backoff, the heal loop, classification) runs inside one River
// execution. River's own retries are only a safety net for executions
// that died.
//
// Exactly one final record per item per round: the engine's checkpoint
// writes each record and claims (job, idx, round) in tenax_finals in one
// transaction, shared by a group of the job's records on the worker so
// that they pay one commit (commit.go); the River job is completed in the
// transaction of its last item's record, once its other items' records
// are committed (items.go). An execution that stops with items left
// unrecorded (the worker or the job stopping) is snoozed, and its next
// execution, on any worker, runs only those. A duplicate execution — River
// rescued a job whose first worker was alive after all — finds the claims
// taken and adds no record. River runs enough executions for sixteen items
// per place of concurrency, at most concurrency of them in the engine, so
// that items waiting for their group's commit do not keep others from
// their calls. River jobs of one item (ItemKind, LegacyItemKind), which
// older versions enqueued, still run.
//
// Takeover: a worker's heartbeat (every RescueAfter/6) refreshes the
// attempted_at of the River jobs whose executions are under way on it (a
// River job its completer could not finish during a database outage ages
// into a rescue), so River's rescuer, configured
// with RescueStuckJobsAfter = RescueAfter, takes only a dead worker's jobs:
// within RescueAfter plus the rescuer's 30-second period plus a second.
//
// Shared by all the workers of a job, through tables, and asked by the
// engine's own gate (engine.Config's SharedBreaker, SharedLimiter and
// Ledger; shared.go): the circuit breaker
// (tenax_breakers, and River's queue pause so no worker takes new items),
// the provider's 429 cooldowns, and the rate_limit's requests and tokens
// per minute as one GCRA schedule taken with UPDATE … RETURNING
// (tenax_limits), so N workers together stay under one provider limit;
// and the budget, one account per job checked and held in one UPDATE per
// call (tenax_budgets; budget.go), so N workers together spend it once.
//
// Its tests need a database: TENAX_TEST_POSTGRES=postgres://postgres@127.0.0.1:5432/test?sslmode=disable go test ./worker
// Each test works in a schema of its own, dropped at the end.
package worker
