#!/usr/bin/env bash
# Scaling: 1, 2, 4 and 8 `tenax worker` processes against the mock provider
# answering in 50 ms (no hidden limit), each worker 16 items in flight; then
# the per-item overhead of River against the JSONL single process, with a
# mock that answers at once. Writes docs/workers-scaling.svg.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=scaling' \
#     bench/workers/scaling.sh [ITEMS]
set -euo pipefail
items=${1:-4000}
source "$(dirname "$0")/common.sh"
bench_setup "$items" s
bench_build
cd "$work"
spec() { # latency
  bench_mock_spec scaling 8098
}
rate() { # job → items/s between the first and the last record
  psql "$psql_dsn" -Atc "SELECT round(count(*) / extract(epoch FROM max((record->>'finished_at')::timestamptz) - min((record->>'finished_at')::timestamptz))::numeric, 1) FROM $schema.tenax_records WHERE job_id = '$1'"
}
onworkers() { # n → items/s
  psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
  ./tenax run job.yaml --workers 0 >/dev/null 2>&1
  local job; job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
  local wp=()
  for _ in $(seq 1 "$1"); do ./tenax worker --job "$job" >/dev/null 2>&1 & wp+=($!); pids+=($!); done
  while [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 0.5; done
  for p in "${wp[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rate "$job"
}
"$work/tenax" mock --addr 127.0.0.1:8098 --latency 50ms >/dev/null 2>&1 & mockpid=$!; pids+=($mockpid)
sleep 1
spec
declare -A r
for n in 1 2 4 8; do r[$n]=$(onworkers "$n"); echo "workers $n: ${r[$n]} items/s ($(python3 -c "print(round(${r[$n]}/${r[1]}, 2))")x)"; done
kill -9 "$mockpid"; wait "$mockpid" 2>/dev/null || true
"$work/tenax" mock --addr 127.0.0.1:8098 >/dev/null 2>&1 & pids+=($!)
sleep 1
start=$(date +%s.%N); TENAX_STORE= ./tenax run job.yaml --home "$work/home" -q >/dev/null 2>&1 || true; end=$(date +%s.%N)
jsonl=$(python3 -c "print(round($items/($end-$start), 1))")
river=$(onworkers 1)
echo "no latency, 16 in flight: JSONL single process $jsonl items/s ($(python3 -c "print(round(1e6/$jsonl))") µs/item); one River worker $river items/s ($(python3 -c "print(round(1e6/$river))") µs/item)"
python3 - "$root/docs/workers-scaling.svg" "${r[1]}" "${r[2]}" "${r[4]}" "${r[8]}" <<'PY'
import sys
out, rates = sys.argv[1], [float(x) for x in sys.argv[2:]]
ns = [1, 2, 4, 8]
W, H, L, B = 480, 300, 60, 40
top = max(max(rates), rates[0] * 8) * 1.1
x = lambda n: L + (W - L - 20) * (ns.index(n)) / 3
y = lambda v: H - B - (H - B - 20) * v / top
pts = " ".join(f"{x(n):.0f},{y(v):.0f}" for n, v in zip(ns, rates))
ideal = " ".join(f"{x(n):.0f},{y(rates[0]*n):.0f}" for n in ns)
svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<line x1="{L}" y1="{H-B}" x2="{W-20}" y2="{H-B}" stroke="black"/><line x1="{L}" y1="20" x2="{L}" y2="{H-B}" stroke="black"/>',
       f'<polyline points="{ideal}" fill="none" stroke="#bbb" stroke-dasharray="4"/>',
       f'<polyline points="{pts}" fill="none" stroke="#1f77b4" stroke-width="2"/>']
for n, v in zip(ns, rates):
    svg.append(f'<circle cx="{x(n):.0f}" cy="{y(v):.0f}" r="3" fill="#1f77b4"/><text x="{x(n):.0f}" y="{y(v)-8:.0f}" text-anchor="middle">{v:.0f}</text>')
    svg.append(f'<text x="{x(n):.0f}" y="{H-B+16}" text-anchor="middle">{n}</text>')
svg.append(f'<text x="{(W+L)/2:.0f}" y="{H-6}" text-anchor="middle">worker processes (16 in flight each, mock at 50 ms)</text>')
svg.append(f'<text x="14" y="{H/2:.0f}" transform="rotate(-90 14 {H/2:.0f})" text-anchor="middle">items/s</text>')
svg.append(f'<text x="{W-24}" y="34" text-anchor="end" fill="#999">dashed: linear from 1 worker</text></svg>')
open(out, "w").write("\n".join(svg) + "\n")
PY
echo "wrote docs/workers-scaling.svg"
