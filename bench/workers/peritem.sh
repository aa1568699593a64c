#!/usr/bin/env bash
# Per item on a worker: ITEMS items enqueued, then one `tenax worker` with 16
# in flight against `tenax mock` answering at once, for each tenax binary
# given, in a fresh schema, alternating, ROUNDS times each (default 3), so
# that two builds are compared under the same load. Prints items/s
# between the first and the last record, with the load average.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=peritem' \
#     ROUNDS=3 bench/workers/peritem.sh ITEMS TENAX_BIN…
set -euo pipefail
items=${1:?ITEMS}
shift
bins=("$@")
source "$(dirname "$0")/common.sh"
bench_setup "$items" p
cd "$work"
bench_mock_spec peritem 8099
"${bins[0]}" mock --addr 127.0.0.1:8099 >/dev/null 2>&1 & pids+=($!)
sleep 1
for round in $(seq 1 "${ROUNDS:-3}"); do
  for bin in "${bins[@]}"; do
    psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    "$bin" --home "$work/home" run job.yaml --workers 0 >/dev/null 2>&1
    job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    "$bin" --home "$work/home" worker --job "$job" >/dev/null 2>&1 & wp=$!; pids+=($wp)
    while [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.5; done
    kill "$wp" 2>/dev/null || true; wait "$wp" 2>/dev/null || true
    rate=$(psql "$psql_dsn" -Atc "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric, 1) FROM $schema.tenax_records WHERE job_id = '$job'")
    echo "$bin round $round: $rate items/s (load $load)"
  done
done
psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
