#!/usr/bin/env bash
# The shared budget: (1) what it costs per item — one River worker, then
# four, 16 items in flight each, against the mock answering at once, with
# no budget and with a budget never reached (every call then reserves and
# settles in PostgreSQL), alternating, twice each; (2) whether it holds —
# four `tenax worker` processes on a job whose budget is a fifth of what it
# needs: the tokens and cost all its records used, against the budget.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=budget' \
#     bench/workers/budget.sh [ITEMS]
set -euo pipefail
items=${1:-2000}
source "$(dirname "$0")/common.sh"
bench_setup "$items" s
bench_build
cd "$work"
spec() { # budget YAML ("" for none)
  cat > job.yaml <<YAML
name: budget
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: http://127.0.0.1:8099/v1
  api_key: \${MOCK_KEY}
  model: mock-echo
  prompt: "Say {{.word}}"
  max_tokens: 16
concurrency: {max: 16}
cache: {enabled: false}
prices: {mock-echo: {input_per_mtok: 1000000, output_per_mtok: 1000000}}
$1
YAML
}
export MOCK_KEY=k
q() { psql "$psql_dsn" -Atc "$1"; }
onworkers() { # n → job id, once its workers stopped
  psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  ./tenax run job.yaml --workers 0 >/dev/null 2>&1
  local job; job=$(q "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
  local wp=()
  for _ in $(seq 1 "$1"); do ./tenax worker --job "$job" >/dev/null 2>&1 & wp+=($!); pids+=($!); done
  while [ "$(q "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.5; done
  for p in "${wp[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  echo "$job"
}
rate() { # job → items/s between the first and the last record
  q "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric, 1) FROM $schema.tenax_records WHERE job_id = '$1'"
}
"$work/tenax" mock --addr 127.0.0.1:8099 >/dev/null 2>&1 & pids+=($!)
sleep 1
for n in 1 4; do
  for round in 1 2; do
    spec ""; off=$(rate "$(onworkers "$n")")
    spec "budget: {max_tokens: 1000000000000, max_cost_usd: 1000000000}"; on=$(rate "$(onworkers "$n")")
    echo "$n worker(s), round $round, load $(cut -d' ' -f1 /proc/loadavg): no budget $off items/s, budget $on items/s ($(python3 -c "print(round($on/$off, 2))")x)"
  done
done
# What a job needs, then a fifth of it as the budget, on four workers.
spec ""; job=$(onworkers 1)
need=$(q "SELECT sum((record->'usage'->>'input_tokens')::bigint + (record->'usage'->>'output_tokens')::bigint) FROM $schema.tenax_records WHERE job_id = '$job'")
budget=$((need / 5))
for kind in max_tokens max_cost_usd; do
  spec "budget: {$kind: $budget}"; job=$(onworkers 4)
  read -r used cost recs dearest < <(q "SELECT sum((record->'usage'->>'input_tokens')::bigint + (record->'usage'->>'output_tokens')::bigint), round(sum((record->>'cost_usd')::numeric), 0), count(*), max((record->>'cost_usd')::numeric) FROM $schema.tenax_records WHERE job_id = '$job'" | tr '|' ' ')
  echo "4 workers, $kind $budget (the job needs $need): $used tokens, \$$cost over $recs of $items items (dearest call \$$dearest); $(q "SELECT manifest->>'stop_reason' FROM $schema.tenax_jobs WHERE id = '$job'")"
done
