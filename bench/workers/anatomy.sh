#!/usr/bin/env bash
# Where one worker's items go, on ITEMS items (default 10,000) of the
# batch.sh spec (16 in flight, `tenax mock` answering at once), for each
# tenax binary given (default: one built from this checkout), one after the
# other:
#   - items/s between the first and the last record;
#   - CPU of the run, from /proc: the worker's process, the mock's, and the
#     whole machine's busy and idle time (PostgreSQL is the rest);
#   - the CPU of PostgreSQL's processes (every postgres process's, with
#     the children the postmaster reaped meanwhile: the polling's
#     connections, autovacuum);
#   - with STATEMENTS=1, the statements PostgreSQL ran for the worker's
#     database while it worked (log_statement, read from LOG, default
#     PostgreSQL 15's log on Debian), counted by their first line; with
#     DURATIONS=1, the time PostgreSQL spent in them instead
#     (log_min_duration_statement = 0), summed by their first line.
#     Logging slows PostgreSQL: the items/s of those runs are not
#     comparable.
#
#   TENAX_PG=postgres://postgres@127.0.0.1:5432 STATEMENTS=1 \
#     bench/workers/anatomy.sh [ITEMS [TENAX_BIN…]]
#
# It creates (and drops at the end) the database tenax_bench_anatomy.
set -euo pipefail
items=${1:-10000}
shift || true
pg=${TENAX_PG:-postgres://postgres@127.0.0.1:5432}
db=tenax_bench_anatomy
admin="$pg/postgres?sslmode=disable"
log=${LOG:-/var/log/postgresql/postgresql-15-main.log}
export TENAX_STORE="$pg/$db?sslmode=disable&search_path=anatomy"
source "$(dirname "$0")/common.sh"
bench_setup "$items" a
trap 'for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  bench_build
  bins=("$work/tenax")
fi
cd "$work"
bench_mock_spec anatomy 8094
q() { psql -Atq "$pg/$db?sslmode=disable" -c "$1"; }
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; } # user + system, in 10 ms ticks
machine() { awk '/^cpu /{print $2 + $3 + $4 + $7 + $8, $5 + $6}' /proc/stat; }
postgres() { # ticks of every postgres process, and of those the postmaster reaped
  local t=0 p pm
  pm=$(pgrep -o -x postgres || pgrep -o postgres)
  for p in $(pgrep postgres); do t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat" 2>/dev/null || echo 0))); done
  echo $((t + $(awk '{print $16 + $17}' "/proc/$pm/stat")))
}
for bin in "${bins[@]}"; do
  psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null 2>&1
  "$bin" mock --addr 127.0.0.1:8094 >/dev/null 2>&1 & mock=$!; pids+=("$mock")
  sleep 0.5
  "$bin" --home "$work/home" run job.yaml --workers 0 >/dev/null 2>&1
  job=$(q "SELECT id FROM anatomy.tenax_jobs LIMIT 1")
  if [ "${STATEMENTS:-0}" = 1 ]; then
    psql -q "$admin" -c "ALTER DATABASE $db SET log_statement = 'all'" >/dev/null
  fi
  if [ "${DURATIONS:-0}" = 1 ]; then
    psql -q "$admin" -c "ALTER DATABASE $db SET log_min_duration_statement = 0" >/dev/null
  fi
  from=$(($(wc -l <"$log") + 1))
  m0=$(ticks "$mock"); p0=$(postgres); read -r busy0 idle0 <<<"$(machine)"
  "$bin" --home "$work/home" worker --job "$job" >/dev/null 2>&1 & worker=$!; pids+=("$worker")
  while [ "$(q "SELECT manifest->>'state' FROM anatomy.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.2; done
  w1=$(ticks "$worker"); m1=$(ticks "$mock"); p1=$(postgres); read -r busy1 idle1 <<<"$(machine)"
  kill "$worker" "$mock"; wait "$worker" "$mock" 2>/dev/null || true
  rate=$(q "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric, 1) FROM anatomy.tenax_records")
  echo "$bin: $rate items/s; CPU for $items items: worker $((w1 * 10)) ms, mock $(((m1 - m0) * 10)) ms, postgres $(((p1 - p0) * 10)) ms, machine busy $(((busy1 - busy0) * 10)) ms, idle $(((idle1 - idle0) * 10)) ms; load $(cut -d' ' -f1-3 /proc/loadavg)"
  if [ "${STATEMENTS:-0}" = 1 ]; then
    echo "statements while the worker ran (count, first line):"
    tail -n "+$from" "$log" | grep -E 'LOG: +(statement|execute [^:]*):' | sed -E 's/.*LOG: +(statement|execute [^:]*): *//' |
      cut -c1-60 | sed 's/^$/(a statement starting with a newline: the group statement)/' | sort | uniq -c | sort -rn | head -12
  fi
  if [ "${DURATIONS:-0}" = 1 ]; then
    echo "time in statements while the worker ran (ms, count, first line):"
    tail -n "+$from" "$log" | python3 -c '
import collections, re, sys
ms, n = collections.Counter(), collections.Counter()
lines = sys.stdin.read().split("\n")
for i, l in enumerate(lines):
    m = re.search(r"duration: ([\d.]+) ms +(statement|execute [^:]*): *(.*)", l)
    if m:
        text = (m.group(3).strip() or (lines[i + 1].strip() if i + 1 < len(lines) else ""))[:60]
        ms[text] += float(m.group(1)); n[text] += 1
print("%8.0f %6d (all)" % (sum(ms.values()), sum(n.values())))
for text, t in ms.most_common(8):
    print("%8.0f %6d %s" % (t, n[text], text))
'
  fi
done
