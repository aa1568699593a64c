#!/usr/bin/env bash
# Enqueue: `tenax run SPEC --workers 0` on ITEMS items, each tenax binary
# given (default: one built from this checkout) in a fresh schema, one
# after the other, twice each, alternating, so that two builds are
# compared under the same load. Prints the load average with each figure.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=enqueue' \
#     bench/workers/enqueue.sh [ITEMS [TENAX_BIN…]]
set -euo pipefail
items=${1:-1000000}
shift || true
: "${TENAX_STORE:?set TENAX_STORE to a postgres:// DSN with a search_path of its own}"
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bins=("$@")
if [ ${#bins[@]} -eq 0 ]; then
  go build -o "$work/tenax" "$root/cmd/tenax"
  bins=("$work/tenax")
fi
schema=$(sed -n 's/.*search_path=\([^&]*\).*/\1/p' <<<"$TENAX_STORE")
psql_dsn=$(sed 's/[?&]search_path=[^&]*//' <<<"$TENAX_STORE")
python3 - "$work/items.jsonl" "$items" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"e{i}", "word": f"word{i}"}) + "\n")
PY
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
cd "$work"
for round in 1 2; do
  for bin in "${bins[@]}"; do
    psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
    "$bin" migrate --store "$TENAX_STORE" >/dev/null
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    start=$(date +%s.%N)
    /usr/bin/time -f '%M KB max RSS, %U s user, %S s sys' -o "$work/time" \
      "$bin" --home "$work/home" run job.yaml --store "$TENAX_STORE" --workers 0 >/dev/null 2>"$work/err" || { cat "$work/err"; exit 1; }
    end=$(date +%s.%N)
    printf '%s round %d: %d items in %.2f s (%s; load %s)\n' "$bin" "$round" "$items" "$(echo "$end - $start" | bc)" "$(cat "$work/time")" "$load"
  done
done
psql -q "$psql_dsn" -c "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
