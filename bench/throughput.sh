#!/usr/bin/env bash
# throughput.sh OLD NEW [ITEMS] [ROUNDS]: end-to-end throughput of the
# three ways a job runs, by two tenax binaries alternated in one run
# (round r runs OLD first when r is odd, NEW first when even), ROUNDS
# times (default 3):
#   - local: `tenax run` of ITEMS (default 5000) llm items against the
#     in-process mock, on the default configuration (the cache on, the
#     default concurrency), the one setting changed being mock.latency 0,
#     so that tenax, not the mock's 20 ms sleep, is what is measured;
#   - worker: the same spec enqueued in PostgreSQL (`run --workers 0`),
#     then one `tenax worker` until the job is done; items/s between the
#     first and the last record's finished_at, wall time to the job's end
#     as polled every 0.5 s, CPU from /proc before the worker is stopped;
#   - batch: examples/batch.yaml as shipped (2,000 items through the mock's
#     batch API, 3 s a wave, 5% errors and 10% invalid answers re-asked by
#     later waves, an online tail).
# Prints one line per run: mode, round, binary, load average, wall time,
# CPU (user + sys of the tenax process, /usr/bin/time), items/s.
#
#   TENAX_PG=postgres://postgres@127.0.0.1:5432 bench/throughput.sh /tmp/tenax-old /tmp/tenax-new 5000 3
#
# It creates (and drops at the end) the database tenax_bench_throughput.
set -euo pipefail
old=$1 new=$2 items=${3:-5000} rounds=${4:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
pg=${TENAX_PG:-postgres://postgres@127.0.0.1:5432}
db=tenax_bench_throughput
admin="$pg/postgres?sslmode=disable"
dsn="$pg/$db?sslmode=disable"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db" >/dev/null
cd "$work"
for ((i = 0; i < items; i++)); do printf '{"word":"w%d"}\n' "$i"; done >items.jsonl
cat >job.yaml <<'YAML'
name: throughput
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the word '{{.word}}' as JSON."
mock:
  latency: {min: 0s}
YAML
cp "$root/examples/batch.yaml" "$root/examples/batch.jsonl" .
q() { psql -Atq "$dsn" -c "$1"; }
cpu() { read -r user sys wall <time.out; echo "$(echo "$user + $sys" | bc) $wall"; }
local_run() { # BIN → "cpu wall items/s"
	rm -rf home
	TENAX_STORE= /usr/bin/time -f '%U %S %e' -o time.out "$1" --home home run -q job.yaml >/dev/null 2>&1 || true
	read -r c w <<<"$(cpu)"
	echo "$c $w $(python3 -c "print(round($items / $w))")"
}
batch_run() { # BIN → "cpu wall items/s"
	rm -rf home
	TENAX_STORE= /usr/bin/time -f '%U %S %e' -o time.out "$1" --home home run -q batch.yaml >/dev/null 2>&1 || true
	read -r c w <<<"$(cpu)"
	echo "$c $w $(python3 -c "print(round(2000 / $w))")"
}
worker_run() { # BIN → "cpu wall items/s"
	local schema=tp$RANDOM
	export TENAX_STORE="$dsn&search_path=$schema"
	rm -rf home
	"$1" --home home run job.yaml --workers 0 >/dev/null 2>&1
	local job; job=$(q "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
	local start; start=$(date +%s.%N)
	"$1" --home home worker --job "$job" >/dev/null 2>&1 &
	local wp=$!; pids+=($wp)
	while [ "$(q "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.5; done
	# The worker's CPU so far (utime + stime, in clock ticks), read before it is stopped.
	local ticks; ticks=$(awk '{print $14 + $15}' "/proc/$wp/stat")
	local w; w=$(python3 -c "print(round($(date +%s.%N) - $start, 2))")
	kill "$wp" 2>/dev/null || true
	wait "$wp" 2>/dev/null || true
	local rate; rate=$(q "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric) FROM $schema.tenax_records WHERE job_id = '$job'")
	local c; c=$(python3 -c "print(round($ticks / $(getconf CLK_TCK), 2))")
	q "DROP SCHEMA $schema CASCADE" >/dev/null 2>&1 || true
	unset TENAX_STORE
	echo "$c $w $rate"
}
printf 'mode round binary load1 cpu_s wall_s items_s\n'
for ((r = 1; r <= rounds; r++)); do
	order="old new"
	[ $((r % 2)) = 0 ] && order="new old"
	for mode in local worker batch; do
		for b in $order; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			printf '%s %d %s %s %s\n' "$mode" "$r" "$b" "$load" "$("${mode}_run" "${!b}")"
		done
	done
done
