// Command tenax is the CLI of the tenax library. It only wires packages;
// what each command means lives in them.
//
// Commands:
//   - run, resume: run a job's items, or carry a stopped job on (package
//     job; --workers N or a postgres:// store hands the items to workers,
//     package worker).
//   - status, export: a job's counts and error groups (package report), and
//     its latest record per item as JSONL or CSV (package store).
//   - validate: check a spec and, with --input, its templates (job).
//   - import: another tool's config turned into a spec, key by key (spec).
//   - fix: the fix loop, an agent edits code until a check passes (fix).
//   - mock: the built-in mock LLM server (mock).
//   - cache: the response cache's stats, prune and clear, and copy of a
//     local cache into a PostgreSQL store's (cache, cache/postgres).
//   - ui: the web view of a job (web).
//   - pause, continue, stop: an operator's levers on a running job from
//     another terminal, audited with who and when: through the job
//     directory's control file for a run on one machine (job), through
//     the database for a job on workers (worker).
//   - migrate, worker, breaker: workers on PostgreSQL: create the schema,
//     run a worker, answer a job's shared circuit breaker (worker).
//   - version: print the version.
//
// Package console draws the progress line and asks the operator; this
// command adds flags, signals and exit codes (package exitcode).
//
// Exit codes: 0 all items succeeded; 1 finished with failures; 2 usage or
// spec error, or a job another process holds (its pid is named); 3
// aborted by the breaker, a budget or the operator; 4 tenax's own storage
// or input failed (the job stays resumable); 130 interrupted.
package main
