#!/usr/bin/env bash
# A real PostgreSQL restart under two `tenax worker` processes: a 2,000-item
# mock-LLM job (150–250 ms a call, concurrency 8 a worker); once 300 records
# are in, `pg_ctlcluster VERSION main restart`; then check that both workers
# stayed up and every item has exactly one final record.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=pgrestart' \
#     bench/workers/pgrestart.sh [ITEMS]
#
# Restarts the local cluster: run it on a machine of your own, as root, with
# nothing else using PostgreSQL. Prints the figures docs/reliability.md quotes.
set -euo pipefail
items=${1:-2000}
source "$(dirname "$0")/common.sh"
bench_setup "$items" r
bench_build
psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null
cat > "$work/job.yaml" <<'YAML'
name: pgrestart
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
mock:
  latency: {min: 150ms, max: 250ms}
  errors: {server: 0.03, reset: 0.01, invalid_output: 0.05}
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  backoff: {base: 10ms, max: 160ms}
concurrency: {max: 8}
cache: {enabled: false}
YAML
cd "$work"
./tenax run job.yaml --workers 0 2>&1 | tail -1
job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
./tenax worker --job "$job" >worker0.log 2>&1 & w0=$!
./tenax worker --job "$job" >worker1.log 2>&1 & w1=$!
start=$(date +%s.%N)
until [ "$(psql "$psql_dsn" -Atc "SELECT count(*) FROM $schema.tenax_records" 2>/dev/null || echo 0)" -ge 300 ]; do sleep 0.2; done
r0=$(date +%s.%N)
pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main restart
echo "restart took $(echo "$(date +%s.%N) - $r0" | bc) s"
until [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'" 2>/dev/null)" != running ]; do sleep 1; done
echo "job ended after $(echo "$(date +%s.%N) - $start" | bc) s"
for p in $w0 $w1; do kill -0 "$p" 2>/dev/null && echo "worker $p: up" || echo "worker $p: EXITED"; done
kill $w0 $w1; wait $w0 $w1 || true
grep -h "connection lost\|connection back" worker0.log worker1.log || true
psql "$psql_dsn" -At <<SQL
SELECT 'items: ' || $items;
SELECT 'lost (no record): ' || ($items - count(DISTINCT idx)) FROM $schema.tenax_records WHERE job_id = '$job';
SELECT 'duplicate final records: ' || count(*) FROM (SELECT idx FROM $schema.tenax_records WHERE job_id = '$job' GROUP BY idx HAVING count(*) > 1) d;
SELECT 'succeeded: ' || count(*) FILTER (WHERE NOT failed) || ', failed: ' || count(*) FILTER (WHERE failed) FROM $schema.tenax_records WHERE job_id = '$job';
SELECT 'job state: ' || (manifest->>'state') FROM $schema.tenax_jobs WHERE id = '$job';
SQL
