#!/usr/bin/env bash
# Recovery of a route, measured at CLI level (issue 22, "A recovers halfway"):
# one job over two OpenAI-compatible HTTP routes. Route a is a python server
# that answers 503 for the first OUTAGE seconds after its first request, then
# 200 with the same chat completion `tenax mock` gives (mock-json's shape,
# after the same 20 ms); route b is `tenax mock --latency 20ms`. The job has
# fallbacks.outage and a breaker with a 2 s reset_timeout, so a's half-open
# probe finds it recovered. From the job's records (route, finished_at) the
# script prints, per strategy, a's share of the items before and after the
# recovery and how long a took to get its first success and 40% of the
# traffic back, and renders the curve (bench/routes-recover-plot.py).
#
#   bench/routes-recover.sh [ITEMS] [OUTAGE_SECONDS] [STRATEGIES] [SVG]
#
# STRATEGIES is a space-separated list of `routing:` values (default
# "weighted least_loaded"); SVG (default: none) is where the curve of the
# first strategy is written, e.g. docs/routes-recover.svg. The job runs with
# the file store in a temporary directory, whatever TENAX_STORE says.
set -euo pipefail
items=${1:-4000}
outage=${2:-9}
strategies=${3:-weighted least_loaded}
svg=${4:-}
[ -z "$svg" ] || svg=$(realpath -m "$svg")
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
pids=()
trap 'for p in "${pids[@]:-}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
unset TENAX_STORE
(cd "$root" && go build -o "$work/tenax" ./cmd/tenax)
cd "$work"
python3 - "$items" <<'PY'
import json, sys
with open("items.jsonl", "w") as f:
    for i in range(int(sys.argv[1])):
        f.write(json.dumps({"id": f"r{i}", "word": f"word{i}"}) + "\n")
PY

# free_port prints a loopback TCP port nobody listens on now.
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT waits (10 s at most) until something listens on PORT.
wait_port() {
  for _ in $(seq 100); do
    if python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),0.2)" 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "nothing listens on port $1" >&2
  return 1
}

# start_route_a PORT RECOVERED_FILE starts route a: 503 for $outage seconds
# from its first request, then mock-json answers after 20 ms. It writes the
# instant of its recovery (Unix seconds) to RECOVERED_FILE at its first
# request, so the analysis needs no clock of its own, and the instant of each
# call it refused to RECOVERED_FILE.503 (the breaker's probes show there).
start_route_a() {
  python3 - "$1" "$2" "$outage" <<'PY' >/dev/null 2>&1 &
import json, re, sys, threading, time
from http.server import ThreadingHTTPServer, BaseHTTPRequestHandler
port, recovered_file, outage = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
lock, state = threading.Lock(), {"recovery": None, "n": 0}
class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # The headers and the body are two writes: with Nagle's algorithm the
    # body waits for the client's delayed ACK (40 ms), and a would be slower
    # than b for a reason that is no part of the measurement.
    disable_nagle_algorithm = True
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
        with lock:
            if state["recovery"] is None:
                state["recovery"] = time.time() + outage
                with open(recovered_file, "w") as f:
                    f.write(repr(state["recovery"]))
            state["n"] += 1
            n = state["n"]
        if time.time() < state["recovery"]:
            with lock, open(recovered_file + ".503", "a") as f:
                f.write(f"{time.time()!r}\n")
            self.answer(503, {"error": {"message": "The engine is currently overloaded, please try again later", "type": "server_error", "param": None, "code": None}})
            return
        time.sleep(0.02)
        prompt = " ".join(m.get("content", "") if isinstance(m.get("content"), str) else "" for m in req.get("messages", []) if m.get("role") == "user")
        content = json.dumps({"text": prompt, "length": len(prompt)}, separators=(",", ":"))
        words = max(1, len(re.findall(r"\S+", prompt)))
        self.answer(200, {
            "id": f"chatcmpl-a{n:012d}", "object": "chat.completion", "created": int(time.time()),
            "model": req.get("model", "mock-json"), "system_fingerprint": "fp_a", "service_tier": "default",
            "choices": [{"index": 0, "finish_reason": "stop", "logprobs": None,
                         "message": {"role": "assistant", "content": content, "refusal": None, "annotations": []}}],
            "usage": {"prompt_tokens": words, "completion_tokens": 13, "total_tokens": words + 13},
        })
    def answer(self, code, body):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
  pids+=($!)
}

port_b=$(free_port)
"$work/tenax" mock --addr "127.0.0.1:$port_b" --latency 20ms >/dev/null 2>&1 & pids+=($!)
wait_port "$port_b"

first=1
for strategy in $strategies; do
  port_a=$(free_port)
  start_route_a "$port_a" "$work/recovered-$strategy"
  wait_port "$port_a"
  mkdir -p "run-$strategy"
  cat > "run-$strategy/job.yaml" <<YAML
name: routes-recover-$strategy
input: ../items.jsonl
task:
  type: llm
  output: json
  timeout: 5s
  prompt: "Describe the word '{{.word}}' as JSON."
routes:
  - {name: a, provider: openai, base_url: http://127.0.0.1:$port_a/v1, api_key: mock, model: mock-json}
  - {name: b, provider: openai, base_url: http://127.0.0.1:$port_b/v1, api_key: mock, model: mock-json}
routing: $strategy
fallbacks: {outage: true}
validate:
  json_schema: {type: object, required: [text, length]}
retry:
  max_attempts: 4
  backoff: {base: 10ms, max: 160ms}
breaker: {threshold: 5, reset_timeout: 2s}
concurrency: {max: 4}
cache: {enabled: false}
YAML
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  (cd "run-$strategy" && "$work/tenax" run job.yaml >run.log 2>&1) || { echo "run failed ($strategy):"; tail -20 "run-$strategy/run.log"; exit 1; }
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  kill "${pids[-1]}" 2>/dev/null || true
  results=$(ls "run-$strategy"/.tenax/jobs/*/results.jsonl)
  echo "== routing: $strategy, $items items, a down for its first ${outage}s; load average $load_before (before), $load_after (after)"
  python3 "$root/bench/routes-recover-plot.py" --strategy "$strategy" \
    --recovered "$(cat "$work/recovered-$strategy")" --refused "$work/recovered-$strategy.503" --results "$results" \
    ${svg:+$( [ $first = 1 ] && echo "--svg $svg")}
  first=0
done
