#!/usr/bin/env bash
# Per-item cost of a worker against the JSONL single process, and what it
# commits: for each tenax binary given (default: one built from this
# checkout), alternating, ROUNDS times (default 3):
#   - the JSONL single process (`tenax run`, no store) on ITEMS items, 16 in
#     flight, against `tenax mock` answering at once, before and after the
#     worker below, the ratio taken against the mean of the two (the single
#     process alone varies by 20-30% from one run to the next);
#   - one `tenax worker` on the same items enqueued in PostgreSQL, same mock;
#     the transactions PostgreSQL committed meanwhile (pg_stat_database's
#     xact_commit of a database of the script's own, every statement of
#     every session counted, reads too) and the WAL flushes (pg_stat_wal's
#     wal_sync: the whole server's, so other users of it count too);
# then, unless SCALING=0, 1, 2 and 4 workers against a mock answering in
# 50 ms. Rates are items/s between the first and the last record's
# finished_at, for either store alike.
#
#   TENAX_PG=postgres://postgres@127.0.0.1:5432 ROUNDS=3 \
#     bench/workers/batch.sh [ITEMS [TENAX_BIN…]]
#
# It creates (and drops at the end) the database tenax_bench_batch.
set -euo pipefail
items=${1:-3000}
shift || true
pg=${TENAX_PG:-postgres://postgres@127.0.0.1:5432}
db=tenax_bench_batch
admin="$pg/postgres?sslmode=disable"
psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
export TENAX_STORE="$pg/$db?sslmode=disable&search_path=batch"
source "$(dirname "$0")/common.sh"
bench_setup "$items" b
trap 'for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  bench_build
  bins=("$work/tenax")
fi
cd "$work"
spec() { # port
  bench_mock_spec batch "$1"
}
q() { psql -Atq "$psql_dsn" -c "$1"; }
rate_pg() { # job
  q "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric, 1) FROM $schema.tenax_records WHERE job_id = '$1'"
}
rate_jsonl() { # results.jsonl
  python3 - "$1" <<'PY'
import json, sys
from datetime import datetime
ts = [datetime.fromisoformat(json.loads(l)["finished_at"].replace("Z", "+00:00")) for l in open(sys.argv[1]) if l.strip()]
print(round(len(ts) / (max(ts) - min(ts)).total_seconds(), 1))
PY
}
# single BIN → items/s of the JSONL single process on the items
single() {
  rm -rf "$work/jhome"
  TENAX_STORE= "$1" --home "$work/jhome" run job.yaml >/dev/null 2>&1 || true
  rate_jsonl "$(ls "$work"/jhome/jobs/*/results.jsonl)"
}
counters() { q "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()) || ' ' || (SELECT wal_sync FROM pg_stat_wal)"; }
# workers BIN N → "items/s commits wal_syncs" for N workers on a fresh job
workers() {
  local bin=$1 n=$2
  q "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  "$bin" --home "$work/home" run job.yaml --workers 0 >/dev/null 2>&1
  local job; job=$(q "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
  local before after wp=()
  before=$(counters)
  for _ in $(seq 1 "$n"); do "$bin" --home "$work/home" worker --job "$job" >/dev/null 2>&1 & wp+=($!); pids+=($!); done
  while [ "$(q "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.5; done
  for p in "${wp[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  after=$(counters)
  read -r c0 s0 <<<"$before"; read -r c1 s1 <<<"$after"
  echo "$(rate_pg "$job") $((c1 - c0)) $((s1 - s0))"
}
"${bins[0]}" mock --addr 127.0.0.1:8097 >/dev/null 2>&1 & pids+=($!)
sleep 1
spec 8097
for round in $(seq 1 "${ROUNDS:-3}"); do
  for bin in "${bins[@]}"; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    before=$(single "$bin")
    read -r river commits syncs <<<"$(workers "$bin" 1)"
    after=$(single "$bin")
    jsonl=$(python3 -c "print(round(($before + $after) / 2, 1))")
    printf '%s round %d (load %s): JSONL %s items/s (%s before, %s after), one worker %s items/s (%sx); %s commits (%s per item), %s WAL syncs (%s per item)\n' \
      "$bin" "$round" "$load" "$jsonl" "$before" "$after" "$river" "$(python3 -c "print(round($river/$jsonl, 2))")" \
      "$commits" "$(python3 -c "print(round($commits/$items, 3))")" "$syncs" "$(python3 -c "print(round($syncs/$items, 3))")"
  done
done
[ "${SCALING:-1}" = 0 ] && exit 0
"${bins[0]}" mock --addr 127.0.0.1:8096 --latency 50ms >/dev/null 2>&1 & pids+=($!)
sleep 1
spec 8096
for bin in "${bins[@]}"; do
  declare -A r=()
  for n in 1 2 4; do
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    read -r r[$n] commits _ <<<"$(workers "$bin" "$n")"
    echo "$bin at 50 ms: $n workers ${r[$n]} items/s ($(python3 -c "print(round(${r[$n]}/(${r[1]}*$n), 2))") of $n× one worker; $(python3 -c "print(round($commits/$items, 3))") commits per item; load $load)"
  done
done
