# Sourced by the bench/workers scripts: what each of them sets up first.
#
# bench_setup ITEMS PREFIX checks that TENAX_STORE is a DSN, makes $work (a
# temporary directory removed on exit, when every pid in $pids is killed
# too), sets $root (this checkout), $schema (the DSN's search_path) and
# $psql_dsn (the DSN without it, for psql), and writes $work/items.jsonl:
# ITEMS lines {"id": "PREFIXn", "word": "wordn"}.
bench_setup() {
  local items=$1 prefix=$2
  : "${TENAX_STORE:?set TENAX_STORE to a postgres:// DSN with a search_path of its own}"
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  work=$(mktemp -d)
  pids=()
  trap 'for p in "${pids[@]:-}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"' EXIT
  schema=$(sed -n 's/.*search_path=\([^&]*\).*/\1/p' <<<"$TENAX_STORE")
  psql_dsn=$(sed 's/[?&]search_path=[^&]*//' <<<"$TENAX_STORE")
  python3 - "$work/items.jsonl" "$items" "$prefix" <<'PY'
import json, sys
with open(sys.argv[1], "w") as f:
    for i in range(int(sys.argv[2])):
        f.write(json.dumps({"id": f"{sys.argv[3]}{i}", "word": f"word{i}"}) + "\n")
PY
}

# bench_build builds this checkout's tenax as $work/tenax.
bench_build() {
  go build -o "$work/tenax" "$root/cmd/tenax"
}

# bench_mock_spec NAME PORT writes ./job.yaml: NAME's job over items.jsonl,
# 16 in flight, against the OpenAI dialect of a `tenax mock` on PORT
# (mock-echo, no cache), and exports the MOCK_KEY it names.
bench_mock_spec() {
  cat > job.yaml <<YAML
name: $1
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: http://127.0.0.1:$2/v1
  api_key: \${MOCK_KEY}
  model: mock-echo
  prompt: "Say {{.word}}"
concurrency: {max: 16}
cache: {enabled: false}
YAML
  export MOCK_KEY=k
}
