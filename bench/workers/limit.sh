#!/usr/bin/env bash
# Shared rate limit: 4 `tenax worker` processes against `tenax mock --rpm 6000`
# (a hidden limit of 100 requests/s answered with 429 past it). Run twice:
# every worker told the limit (rate_limit.requests_per_minute: 6000, one
# shared GCRA schedule in PostgreSQL), and no worker told (only the shared
# 429 cooldowns hold them back).
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=limit' \
#     bench/workers/limit.sh [ITEMS]
set -euo pipefail
items=${1:-3000}
source "$(dirname "$0")/common.sh"
bench_setup "$items" l
bench_build
cd "$work"
"$work/tenax" mock --addr 127.0.0.1:8097 --rpm 6000 --latency 20ms >/dev/null 2>&1 & pids+=($!)
sleep 1
for told in yes no; do
  psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  limit=""
  [ "$told" = yes ] && limit="rate_limit: {requests_per_minute: 6000}"
  cat > job.yaml <<YAML
name: limit
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: http://127.0.0.1:8097/v1
  api_key: \${MOCK_KEY}
  model: mock-echo
  prompt: "Say {{.word}}"
retry:
  max_attempts: 20
  backoff: {base: 100ms, max: 2s}
concurrency: {max: 16}
cache: {enabled: false}
$limit
YAML
  MOCK_KEY=k ./tenax run job.yaml --workers 0 >/dev/null 2>&1
  job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
  wpids=()
  for i in 1 2 3 4; do MOCK_KEY=k ./tenax worker --job "$job" >/dev/null 2>&1 & wpids+=($!); pids+=($!); done
  while [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 1; done
  for p in "${wpids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  psql "$psql_dsn" -At <<SQL
WITH r AS (SELECT (record->>'attempts')::int AS calls, (record->>'finished_at')::timestamptz AS at FROM $schema.tenax_records WHERE job_id = '$job'),
     s AS (SELECT count(*) AS items, sum(calls) AS calls, extract(epoch FROM max(at) - min(at)) AS secs FROM r)
SELECT 'told the limit: $told | items ' || items || ' | calls ' || calls || ' | 429s ' || (calls - items)
  || ' (' || round(100.0 * (calls - items) / calls, 2) || '% of calls) | ' || round(items / secs, 1) || ' items/s = '
  || round(100.0 * items / secs / 100.0, 1) || '% of the 100/s limit' FROM s;
SQL
done
