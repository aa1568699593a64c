#!/usr/bin/env bash
# throughput.sh OLD [ITEMS] [ROUNDS]: end-to-end throughput of the three
# ways a job runs, by tenax built at commit OLD and at HEAD, alternated in
# one run (round r runs old first when r is odd, new first when even),
# ROUNDS times (default 3). Both are built from `git archive` of the
# commit (the work tree's uncommitted changes are not HEAD's).
#   - local: `tenax run` of ITEMS (default 2000) llm items against the
#     in-process mock, on the default configuration (the mock's default
#     latency, the cache on, the default concurrency); MOCK_LATENCY=0s
#     sets mock.latency to measure tenax rather than the mock's sleep;
#   - worker: the same spec enqueued in PostgreSQL (`run --workers 0`),
#     then one `tenax worker` until the job is done; items/s between the
#     first and the last record's finished_at, wall time to the job's end
#     as polled every 0.5 s, CPU from /proc before the worker is stopped;
#   - batch: examples/batch.yaml as shipped (2,000 items through the mock's
#     batch API, 3 s a wave, 5% errors and 10% invalid answers re-asked by
#     later waves, an online tail).
# Prints one line per run (mode, round, binary, load average, CPU seconds
# of the tenax process, wall seconds, items/s), then each mode's median
# items/s per binary and new ÷ old.
#
#   TENAX_PG=postgres://postgres@127.0.0.1:5432 bench/throughput.sh ef9c6ef~10 2000 3
#
# It creates (and drops at the end) the database tenax_bench_throughput.
set -euo pipefail
oldrev=$1 items=${2:-2000} rounds=${3:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
pg=${TENAX_PG:-postgres://postgres@127.0.0.1:5432}
db=tenax_bench_throughput
admin="$pg/postgres?sslmode=disable"
dsn="$pg/$db?sslmode=disable"
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; psql -q "$admin" -c "DROP DATABASE IF EXISTS $db" >/dev/null 2>&1 || true' EXIT
build() { # REV DIR: tenax built at REV into DIR/tenax
	mkdir -p "$2/src"
	git -C "$root" archive "$1" | tar -x -C "$2/src"
	(cd "$2/src" && go build -o "$2/tenax" ./cmd/tenax)
}
build "$oldrev" "$work/old"
build HEAD "$work/new"
old=$work/old/tenax new=$work/new/tenax
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
YAML
if [ -n "${MOCK_LATENCY:-}" ]; then printf 'mock:\n  latency: {min: %s}\n' "$MOCK_LATENCY" >>job.yaml; fi
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
printf 'mode round binary load1 cpu_s wall_s items_s\n' | tee results.txt
for ((r = 1; r <= rounds; r++)); do
	order="old new"
	[ $((r % 2)) = 0 ] && order="new old"
	for mode in local worker batch; do
		for b in $order; do
			load=$(cut -d' ' -f1 /proc/loadavg)
			printf '%s %d %s %s %s\n' "$mode" "$r" "$b" "$load" "$("${mode}_run" "${!b}")" | tee -a results.txt
		done
	done
done
python3 - results.txt <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1]).read().splitlines()[1:]]
for mode in ("local", "worker", "batch"):
    med = {b: statistics.median(float(r[6]) for r in rows if r[0] == mode and r[2] == b) for b in ("old", "new")}
    ratios = [float(n[6]) / float(o[6]) for o in rows for n in rows
              if o[0] == n[0] == mode and o[1] == n[1] and o[2] == "old" and n[2] == "new" and float(o[6]) > 0]
    print(f"{mode}: median items/s old {med['old']:.0f}, new {med['new']:.0f}, new/old {med['new'] / med['old']:.2f} "
          f"(per round {', '.join(f'{x:.2f}' for x in ratios)})")
PY
