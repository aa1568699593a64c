#!/usr/bin/env bash
# Routes on four workers (issue 22): 4 `tenax worker` processes run one job
# over two routes (examples/routes.yaml's, on HTTP): route a answers 503 to
# every call for the whole run, route b is `tenax mock`. Each worker has its
# own API key, so route a's server counts the calls of each worker; the
# job's records and tenax_routes say the rest.
#
#   TENAX_STORE='postgres://postgres@127.0.0.1:5432/test?sslmode=disable&search_path=routes' \
#     bench/workers/routes.sh [ITEMS]
set -euo pipefail
items=${1:-2000}
source "$(dirname "$0")/common.sh"
bench_setup "$items" r
bench_build
cd "$work"
psql "$psql_dsn" -qc "DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
# Route a: down, counting its calls by the caller's key.
python3 - 8099 "$work/a_calls.txt" <<'PY' >/dev/null 2>&1 & pids+=($!)
import sys, threading
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
counts, lock = {}, threading.Lock()
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        key = self.headers.get("Authorization", "").removeprefix("Bearer ")
        with lock:
            counts[key] = counts.get(key, 0) + 1
            with open(sys.argv[2], "w") as f:
                for k, n in sorted(counts.items()):
                    f.write(f"{k} {n}\n")
        body = b'{"error":{"message":"The engine is currently overloaded","type":"server_error","code":null}}'
        self.send_response(503)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
"$work/tenax" mock --addr 127.0.0.1:8098 --latency 20ms >/dev/null 2>&1 & pids+=($!)
sleep 1
cat > job.yaml <<'YAML'
name: routes-workers
input: items.jsonl
task:
  type: llm
  output: json
  timeout: 5s
  prompt: "Describe the word '{{.word}}' as JSON."
routes:
  - {name: a, provider: openai, base_url: http://127.0.0.1:8099/v1, api_key: "${MOCK_KEY}", model: mock-json}
  - {name: b, provider: openai, base_url: http://127.0.0.1:8098/v1, api_key: "${MOCK_KEY}", model: mock-json}
routing: weighted
fallbacks: {outage: true}
retry:
  max_attempts: 4
  backoff: {base: 10ms, max: 160ms}
breaker: {threshold: 5, reset_timeout: 10m}
concurrency: {max: 8}
cache: {enabled: false}
YAML
MOCK_KEY=creator ./tenax run job.yaml --workers 0 >/dev/null 2>&1
job=$(psql "$psql_dsn" -Atc "SELECT id FROM $schema.tenax_jobs ORDER BY created DESC LIMIT 1")
start=$(date +%s.%N)
wpids=()
for i in 1 2 3 4; do MOCK_KEY="worker$i" ./tenax worker --job "$job" >"worker$i.log" 2>&1 & wpids+=($!); pids+=($!); done
while [ "$(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'")" = running ]; do sleep 1; done
end=$(date +%s.%N)
for p in "${wpids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
echo "job $job: $(psql "$psql_dsn" -Atc "SELECT manifest->>'state' FROM $schema.tenax_jobs WHERE id = '$job'") in $(python3 -c "print(round($end - $start, 1))")s"
echo "calls to route a by worker (key calls):"
sed 's/^/  /' a_calls.txt
psql "$psql_dsn" -At <<SQL
WITH latest AS (SELECT DISTINCT ON (idx) idx, failed, record FROM $schema.tenax_records WHERE job_id = '$job' ORDER BY idx, seq DESC)
SELECT 'items ' || $items || ' | recorded ' || (SELECT count(DISTINCT idx) FROM $schema.tenax_records WHERE job_id = '$job')
  || ' | lost ' || ($items - (SELECT count(DISTINCT idx) FROM $schema.tenax_records WHERE job_id = '$job'))
  || ' | duplicates ' || ((SELECT count(*) FROM $schema.tenax_records WHERE job_id = '$job') - (SELECT count(DISTINCT idx) FROM $schema.tenax_records WHERE job_id = '$job'))
  || ' | succeeded on b ' || (SELECT count(*) FROM latest WHERE NOT failed AND record->>'route' = 'b')
  || ' | failed ' || (SELECT count(*) FROM latest WHERE failed)
  || ' | items with a in their tries ' || (SELECT count(*) FROM latest WHERE record::jsonb ? 'tries');
SELECT 'route ' || route || ': ' || state || ', opened ' || trips || ' time(s) for the job' FROM $schema.tenax_routes WHERE job_id = '$job' ORDER BY route;
SELECT 'run breaker: ' || state || ', ' || trips || ' trip(s) (the operator is asked only on a trip)' FROM $schema.tenax_breakers WHERE job_id = '$job';
SQL
