#!/usr/bin/env bash
# heapfloor.sh [ITEMS] [ROUNDS] [TENAX]: what the heap's floor saves a run.
# A job of ITEMS LLM items (default 10,000), 16 in flight, against a
# separate `tenax mock` answering at once, run by the same binary with its
# heap floor (the default) and with GOGC=100 (Go's own 4 MB floor: what
# every tenax did before the floor), alternated ROUNDS times (default 5).
# Prints, per run, wall seconds, the process's user+system CPU seconds,
# its peak RSS and the garbage collections it ran (GODEBUG=gctrace=1),
# then the medians and the ratio floor / GOGC=100.
set -euo pipefail
cd "$(dirname "$0")"
items=${1:-10000}
rounds=${2:-5}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapfloor.XXXXXX")
mock=
trap '[ -n "$mock" ] && kill "$mock" 2>/dev/null; rm -rf "$tmp"' EXIT
tenax=${3:-}
if [ -z "$tenax" ]; then
  (cd "$(git rev-parse --show-toplevel)" && CGO_ENABLED=0 go build -trimpath -o "$tmp/tenax" ./cmd/tenax)
  tenax=$tmp/tenax
fi
port=8099
"$tenax" mock --addr 127.0.0.1:$port >/dev/null 2>&1 &
mock=$!
python3 -c "
import json
with open('$tmp/items.jsonl', 'w') as f:
    for i in range($items): f.write(json.dumps({'word': 'w%d' % i}) + '\n')
"
source workers/common.sh # bench_mock_spec: the workers scripts' job, the same spec
(cd "$tmp" && bench_mock_spec heapfloor $port)
export MOCK_KEY=k
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$port/v1/models" -H 'Authorization: Bearer k' && break; sleep 0.1; done
one() { # label env… → "label wall cpu rss_kb gcs"
  local label=$1; shift
  rm -rf "$tmp/h"
  (cd "$tmp" && env "$@" GODEBUG=gctrace=1 /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
    "$tenax" --home h run job.yaml >/dev/null 2>"$tmp/gc")
  read -r wall user sys rss <"$tmp/time"
  echo "$label $wall $(echo "$user + $sys" | bc) $rss $(grep -c '^gc ' "$tmp/gc" || true)"
}
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in $(seq "$rounds"); do
  one floor X=1
  one gogc100 GOGC=100
done | tee "$tmp/runs"
echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$tmp/runs" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    label, *v = line.split()
    runs.setdefault(label, []).append([float(x) for x in v])
med = {k: [statistics.median(c) for c in zip(*v)] for k, v in runs.items()}
for k, (wall, cpu, rss, gcs) in med.items():
    print(f"median {k:8} wall {wall:.2f} s  cpu {cpu:.2f} s  rss {rss/1024:.0f} MB  gcs {gcs:.0f}")
f, g = med["floor"], med["gogc100"]
print(f"floor / GOGC=100: wall {f[0]/g[0]:.2f}x  cpu {f[1]/g[1]:.2f}x  rss {f[2]/g[2]:.2f}x")
PY
