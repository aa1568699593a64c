#!/usr/bin/env bash
# Crash torture across workers: 4 `tenax worker` processes on a 5,000-item
# mock-LLM job with faults on; kill -9 a random worker 30 times, restarting
# it; then check that every item has exactly one final record.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=torture' \
#     bench/workers/torture.sh [ITEMS] [KILLS]
#
# Prints the figures docs/reliability.md quotes. Needs psql.
set -euo pipefail
items=${1:-5000}
kills=${2:-30}
source "$(dirname "$0")/common.sh"
bench_setup "$items" t
bench_build
psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
cat > "$work/job.yaml" <<'YAML'
name: torture
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
mock:
  latency: {min: 5ms, max: 60ms}
  errors: {server: 0.1, reset: 0.05, overloaded: 0.05, invalid_output: 0.1}
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  max_attempts: 10
  backoff: {base: 5ms, max: 100ms}
breaker: {threshold: 1000}
concurrency: {max: 16}
cache: {enabled: false}
YAML
cd "$work"
./tenax run job.yaml --workers 0 2>&1 | tail -1
job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")

start_worker() { ./tenax worker --job "$job" --rescue-after 6s >>"$work/worker$1.log" 2>&1 & pids[$1]=$!; }
pids=()
for i in 0 1 2 3; do start_worker "$i"; done
start=$(date +%s)
for k in $(seq 1 "$kills"); do
  sleep "0.$((RANDOM % 9 + 1))"
  sleep $((RANDOM % 2))
  i=$((RANDOM % 4))
  kill -9 "${pids[$i]}" 2>/dev/null || true
  wait "${pids[$i]}" 2>/dev/null || true
  start_worker "$i"
done
echo "killed $kills times in $(( $(date +%s) - start ))s; waiting for the job to finish"
while [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 2; done
end=$(date +%s)
psql "$psql_dsn" -At <<SQL
SELECT 'items: ' || $items;
SELECT 'idx with a record: ' || count(DISTINCT idx) FROM $schema.tenax_records WHERE job_id = '$job';
SELECT 'lost (no record): ' || ($items - count(DISTINCT idx)) FROM $schema.tenax_records WHERE job_id = '$job';
SELECT 'duplicate final records: ' || count(*) FROM (SELECT idx FROM $schema.tenax_records WHERE job_id = '$job' GROUP BY idx HAVING count(*) > 1) d;
SELECT 'succeeded: ' || count(*) FILTER (WHERE NOT failed) || ', failed: ' || count(*) FILTER (WHERE failed) FROM $schema.tenax_records WHERE job_id = '$job';
SELECT 'river executions rescued: ' || count(*) FROM $schema.river_job WHERE queue = '$job' AND errors::text LIKE '%rescued%';
SELECT 'river jobs discarded: ' || count(*) FROM $schema.river_job WHERE queue = '$job' AND state = 'discarded';
SELECT 'job state: ' || (manifest->>'state') FROM $schema.tenax_jobs WHERE id = '$job';
SQL
echo "wall time: $((end - start))s"
