#!/usr/bin/env bash
# Enqueue: `tenax run SPEC --workers 0` on ITEMS items, each tenax binary
# given (default: one built from this checkout) in a fresh schema, one
# after the other, ROUNDS times each (default 2), alternating, so that two
# builds are compared under the same load. Prints the load average with
# each figure, tenax's CPU time, and the CPU time of the PostgreSQL
# backends that served it (PostgreSQL on this machine; sampled every
# 0.5 s from /proc by their application_name): on a shared machine the
# CPU seconds vary less than the wall time.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=enqueue' \
#     ROUNDS=3 bench/workers/enqueue.sh [ITEMS [TENAX_BIN…]]
set -euo pipefail
items=${1:-1000000}
shift || true
source "$(dirname "$0")/common.sh"
bench_setup "$items" e
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  bench_build
  bins=("$work/tenax")
fi
cat > "$work/job.yaml" <<'YAML'
name: enqueue
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  prompt: "Say {{.word}}"
cache: {enabled: false}
YAML
app=tenax_enqueue_bench_$$
run_store="$TENAX_STORE&application_name=$app"
tck=$(getconf CLK_TCK)
# pgcpu FILE: until killed, writes to FILE the CPU seconds used so far by
# the backends whose application_name is $app.
pgcpu() {
  declare -A ticks
  while :; do
    for pid in $(psql -Atq "$psql_dsn" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'" 2>/dev/null); do
      if stat=$(cat "/proc/$pid/stat" 2>/dev/null); then
        read -r -a f <<<"${stat##*) }"
        ticks[$pid]=$(( f[11] + f[12] ))
      fi
    done
    total=0
    for v in "${ticks[@]}"; do total=$((total + v)); done
    echo "scale=2; $total / $tck" | bc >"$1"
    sleep 0.5
  done
}
cd "$work"
for round in $(seq 1 "${ROUNDS:-2}"); do
  for bin in "${bins[@]}"; do
    psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    "$bin" migrate --store "$TENAX_STORE" >/dev/null
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    echo 0 >"$work/pgcpu"
    pgcpu "$work/pgcpu" &
    sampler=$!
    start=$(date +%s.%N)
    /usr/bin/time -f '%M KB max RSS, %U s user, %S s sys' -o "$work/time" \
      "$bin" --home "$work/home" run job.yaml --store "$run_store" --workers 0 >/dev/null 2>"$work/err" || { kill "$sampler"; cat "$work/err"; exit 1; }
    end=$(date +%s.%N)
    kill "$sampler"; wait "$sampler" 2>/dev/null || true
    printf '%s round %d: %d items in %.2f s (%s; PostgreSQL backends %s s CPU; load %s)\n' "$bin" "$round" "$items" "$(echo "$end - $start" | bc)" "$(cat "$work/time")" "$(cat "$work/pgcpu")" "$load"
  done
done
psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
