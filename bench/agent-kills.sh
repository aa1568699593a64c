#!/usr/bin/env bash
# agent-kills.sh [KILLS] [SEED]: run examples/agent-kills.yaml (1,000 agent
# items on the mock with faults on), kill -9 `tenax run` / `tenax resume`
# at KILLS random moments (default 20; SEED, default 1, draws them: each
# 0.3 to 2.3 s after the process printed its job line), resume until done,
# then check from the mock's request log and steps.jsonl that no recorded
# model answer was asked again (a call the mock answered in the last
# moments before a kill, whose answer died with the process before its
# fsync, is asked again: it is counted and timed, from the moment the
# mock answered, against the kill), and
# from results.jsonl that every item has exactly one final record.
# Prints the figures docs/agents.md records; exits 1 when a check fails.
#
# STORE=1 runs the same job against `tenax mock` served apart (as a
# provider is: it outlives the killed process, finishes and bills the
# calls in flight at a kill, logging them "abandoned") with task.store:
# true, so a resumed run reads back the answers of the calls in flight
# at each kill; STORE=0 runs it against that served mock with store off,
# for the comparison. Unset, the job runs on the in-process mock as
# before (which dies with the process: the calls in flight at a kill are
# not billed, so they are not counted). The wait for a stored answer is
# bounded by task.timeout, set to 5s in the served runs.
set -euo pipefail
cd "$(dirname "$0")/.."
kills=${1:-20}
seed=${2:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# TENAX_BIN, set, is a tenax binary to run instead of building one.
if [ -n "${TENAX_BIN:-}" ]; then cp "$TENAX_BIN" "$tmp/tenax"; else go build -o "$tmp/tenax" ./cmd/tenax; fi
cp examples/agent-kills.yaml examples/agent-kills.jsonl "$tmp/"
if [ -n "${STORE:-}" ]; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # The spec's mock: section, as the served mock's flags.
  "$tmp/tenax" mock --addr "127.0.0.1:$port" --seed 37 --latency 5ms --latency-max 40ms \
    --rate-limit 0.04 --server-error 0.05 --overloaded 0.03 --log-requests "$tmp/requests.jsonl" 2>"$tmp/mock.err" &
  mockpid=$!
  trap 'kill "$mockpid" 2>/dev/null; rm -rf "$tmp"' EXIT
  while ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do sleep 0.05; done
  store=false
  [ "$STORE" = 1 ] && store=true
  python3 - "$tmp/agent-kills.yaml" "$port" "$store" <<'PY'
import re, sys
path, port, store = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
s = s[:s.index("\nmock:")] + "\n"
s = s.replace("  provider: mock\n", f"  provider: openai\n  base_url: http://127.0.0.1:{port}/v1\n  api_key: mock-key\n  store: {store}\n  timeout: 5s\n")
s = s.replace("http://mock.invalid/", f"http://127.0.0.1:{port}/")
open(path, "w").write(s)
PY
else
  echo "  log_requests: requests.jsonl" >>"$tmp/agent-kills.yaml"
fi
RANDOM=$seed
id="" landed=0 rounds=0
while :; do
  rounds=$((rounds + 1))
  if [ -z "$id" ]; then args=(run agent-kills.yaml); else args=(resume "$id"); fi
  (cd "$tmp" && exec "$tmp/tenax" --home "$tmp/home" "${args[@]}" >"$tmp/out" 2>"$tmp/err") &
  pid=$!
  # The job line names the job; wait for it (or the end).
  while kill -0 "$pid" 2>/dev/null && ! grep -q '^tenax: job ' "$tmp/err" 2>/dev/null; do sleep 0.05; done
  [ -z "$id" ] && id=$(sed -n 's/^tenax: job \([^ ]*\).*/\1/p' "$tmp/err" | head -1)
  if [ "$landed" -ge "$kills" ]; then
    wait "$pid" && code=0 || code=$?
    break
  fi
  delay=$(printf "%d.%03d" $((RANDOM % 2)) $((RANDOM % 1000)))
  sleep 0.3 && sleep "$delay"
  # The moment of the kill, read without a fork: a `date` after it ran
  # late on a loaded machine, and made each duplicate look older.
  at=$EPOCHREALTIME
  if kill -9 "$pid" 2>/dev/null; then
    echo "$at" >>"$tmp/kills"
    wait "$pid" 2>/dev/null || true
    landed=$((landed + 1))
    echo "kill $landed: after 0.3+$delay s of round $rounds"
  else
    wait "$pid" && code=0 || code=$?
    echo "round $rounds ended before its kill (exit $code)"
    break
  fi
done
echo "job $id: last run exit $code, $landed kills landed, $rounds runs"
touch "$tmp/kills"
python3 - "$tmp/requests.jsonl" "$tmp/home/jobs/$id/results.jsonl" 1000 "$tmp/kills" "$tmp/home/jobs/$id/steps.jsonl" <<'PY'
import collections, datetime, json, re, sys
log, results, items = sys.argv[1], sys.argv[2], int(sys.argv[3])
kills = sorted(float(l) for l in open(sys.argv[4]) if l.strip())
def when(t):  # RFC 3339, nanoseconds cut to micro
    t = re.sub(r"(\.\d{6})\d+", r"\1", t).replace("Z", "+00:00")
    return datetime.datetime.fromisoformat(t).timestamp()
paid, faults, tools, lookups, abandoned = collections.Counter(), 0, 0, 0, 0
first = {}
for line in open(log):
    try:
        l = json.loads(line)
    except ValueError:
        continue  # a line torn by a kill
    if l.get("path") != "/v1/chat/completions":
        tools += 1
        continue
    if l.get("method") == "GET":
        lookups += 1  # a stored completions' listing: no model call
        continue
    # A served mock finishes a call whose client died ("abandoned"), as a
    # provider does: it is billed like one answered.
    if l.get("outcome") not in ("answered", "abandoned") or l.get("status") != 200 or l.get("fault"):
        faults += 1
        continue
    abandoned += l.get("outcome") == "abandoned"
    question, turns = None, 0
    for m in l["request"]["messages"]:
        if m["role"] == "user" and question is None:
            question = json.dumps(m["content"])
        elif m["role"] == "assistant" and m.get("tool_calls"):
            turns += 1
    key = (question, turns + 1)
    paid[key] += 1
    # The log's time is when the request arrived; the answer left the
    # mock duration_ms later (its latency, 5 to 40 ms here, is not part
    # of the window between an answer and its fsync).
    first.setdefault(key, when(l["time"]) + l.get("duration_ms", 0) / 1000)
dups = sum(n - 1 for n in paid.values() if n > 1)
recs = collections.Counter()
outcomes = collections.Counter()
for line in open(results):
    r = json.loads(line)
    recs[r["_idx"]] += 1
    if not r.get("error"):
        outcomes["succeeded"] += 1
    elif "not idempotent" in r["error"]:
        outcomes["failed: an interrupted tool"] += 1
    elif "max_consecutive_errors" in r["error"] or "max_steps" in r["error"]:
        outcomes["failed: an agent limit"] += 1
    else:
        outcomes["failed: " + r.get("class", "?")] += 1
# The step log: a step whose answer it holds twice was asked again after
# its answer was recorded, which the replay must never do.
answers = collections.Counter()
for line in open(sys.argv[5]):
    try:
        l = json.loads(line)
    except ValueError:
        continue
    e = l["step"]
    if e["kind"] == "answer":
        answers[(l["_idx"], e["n"], e["conv"], e["step"])] += 1
recorded_twice = sum(n - 1 for n in answers.values() if n > 1)
print(f"recorded answers asked again (two answers of one step in steps.jsonl): {recorded_twice}")
lost = sum(1 for i in range(items) if recs[i] == 0)
twice = sum(1 for i in range(items) if recs[i] > 1)
print(f"items {items}, model calls paid {sum(paid.values())} ({abandoned} logged abandoned: the client had died), faults answered {faults}, http tool calls {tools}, stored-answer lookups {lookups}")
print(f"duplicates (a step's model call paid twice): {dups}")
# A call the mock answered just before a kill, whose answer died with the
# process before its fsync, is asked again: say how close to a kill each
# duplicate's first answer was.
far = 0  # duplicates whose first answer was not in flight at a kill
for (q, step), n in [kv for kv in paid.items() if kv[1] > 1]:
    t = first[(q, step)]
    before = min((k - t for k in kills if k >= t), default=float("inf"))
    # A served mock answers a call in flight at a kill after it (the
    # process is gone, the provider is not): up to its latency, 40 ms.
    after = min((t - k for k in kills if k <= t), default=float("inf"))
    far += before > 1 and after > 0.2
    print(f"  paid {n} times: {q[:60]}… step {step}; answered {before*1000:.0f} ms before the next kill, {after*1000:.0f} ms after the last")
print(f"lost (no record): {lost}, items with more than one record: {twice}")
print("outcomes:", ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items())))
print(f"duplicates not answered within 1 s before a kill (nor 200 ms after one): {far}")
sys.exit(1 if far or recorded_twice or lost or twice else 0)
PY
