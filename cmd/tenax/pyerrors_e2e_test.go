package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// pyStandIn is the part of the openai package the test script raises:
// classes whose module is "openai", so Python prints
// "openai.RateLimitError: Error code: 429 - {...}" exactly as the real SDK
// does (it sets __module__ = "openai" on its exports).
const pyStandIn = `class APIConnectionError(Exception): pass
class RateLimitError(Exception): pass
class AuthenticationError(Exception): pass
`

// pyTool fails as its item's kind says, its first calls or every call,
// and otherwise prints "ok <id>". It counts its calls in calls/<id>.
const pyTool = `import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import openai

kind, key = sys.argv[1], sys.argv[2]
os.makedirs("calls", exist_ok=True)
with open(os.path.join("calls", key), "a") as f:
    f.write("x\n")
with open(os.path.join("calls", key)) as f:
    n = len(f.readlines())

def call_api(timeout):
    # A frame whose source says "connection" and "timeout": only the
    # exception line may decide.
    if kind == "connection" and n <= 2:
        raise openai.APIConnectionError("Connection error.")
    if kind == "rate" and n <= 1:
        raise openai.RateLimitError("Error code: 429 - {'error': {'message': 'Rate limit reached for gpt-4o in organization org-abc on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.', 'type': 'requests', 'param': None, 'code': 'rate_limit_exceeded'}}")
    if kind == "quota":
        raise openai.RateLimitError("Error code: 429 - {'error': {'message': 'You exceeded your current quota, please check your plan and billing details.', 'type': 'insufficient_quota', 'param': None, 'code': 'insufficient_quota'}}")
    if kind == "auth":
        raise openai.AuthenticationError("Error code: 401 - {'error': {'message': 'Incorrect API key provided: sk-proj-****Xy9Z.', 'type': 'invalid_request_error', 'param': None, 'code': 'invalid_api_key'}}")
    if kind == "assert":
        state = "unreachable"
        assert state == "ok", "host unreachable"
    return "ok " + key

print(call_api(timeout=600))
`

// shTool fails once with the words of ssh or curl, then succeeds.
const shTool = `#!/bin/sh
mkdir -p calls && echo x >> "calls/$2"
n=$(wc -l < "calls/$2")
if [ "$n" -le 1 ]; then
  case "$1" in
  route) echo "ssh: connect to host build-7 port 22: No route to host" >&2; exit 255 ;;
  unavailable) echo "GET https://api.example.com/v1/items: 503 Service Unavailable" >&2; exit 1 ;;
  esac
fi
echo "ok $2"
`

// TestPythonSDKErrorsAreRetriedOrFatalInTheRecord: issue 39 and issue 41
// #15, through a real run. A wrapped Python script's
// openai.APIConnectionError and 429 rate limit were item failures after
// one attempt; now they are retried until the script succeeds. Its
// exhausted quota and its 401 are fatal after one attempt, its failed
// assertion that says "unreachable" stays item, and a shell script's "No
// route to host" and "503 Service Unavailable" are retried.
func TestPythonSDKErrorsAreRetriedOrFatalInTheRecord(t *testing.T) {
	w, python := pythonWorkdir(t)
	w.write("tool.sh", shTool, 0o755)
	var items strings.Builder
	for _, id := range []string{"connection", "rate", "quota", "auth", "assert"} {
		fmt.Fprintf(&items, `{"id": %q, "run": %q, "script": "tool.py"}`+"\n", id, python)
	}
	items.WriteString(`{"id": "route", "run": "sh", "script": "tool.sh"}
{"id": "unavailable", "run": "sh", "script": "tool.sh"}
`)
	w.write("items.jsonl", items.String(), 0o644)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["{{.run}}", "{{.script}}", "{{.id}}", "{{.id}}"]
  timeout: 30s
retry:
  max_attempts: 5
  backoff: {base: 5ms, max: 20ms}
concurrency: {max: 2}
breaker: {threshold: 50}
`, 0o644)
	r := w.tenax("--log-level", "debug", "--log-format", "json", "run", "job.yaml", "--output", "out.jsonl")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1 (three items fail)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	want := map[string]struct {
		class    string
		attempts int
		error    string // in the record's error
	}{
		"connection":  {"", 3, ""},
		"rate":        {"", 2, ""},
		"route":       {"", 2, ""},
		"unavailable": {"", 2, ""},
		"quota":       {"fatal", 1, "openai.RateLimitError: Error code: 429"},
		"auth":        {"fatal", 1, "openai.AuthenticationError: Error code: 401"},
		"assert":      {"item", 1, "AssertionError: host unreachable"},
	}
	recs := readRecords(t, filepath.Join(w.dir, "out.jsonl"))
	if len(recs) != len(want) {
		t.Fatalf("%d records, want %d", len(recs), len(want))
	}
	ids := []string{"connection", "rate", "quota", "auth", "assert", "route", "unavailable"}
	for _, rec := range recs {
		id := ids[rec.Idx]
		wt := want[id]
		if rec.Class != wt.class || rec.Attempts != wt.attempts || !strings.Contains(rec.Error, wt.error) {
			t.Errorf("%s: class %q after %d attempts (error %q); want class %q after %d attempts, error containing %q",
				id, rec.Class, rec.Attempts, rec.Error, wt.class, wt.attempts, wt.error)
		}
		if calls := countLines(t, filepath.Join(w.dir, "calls", id)); calls != wt.attempts {
			t.Errorf("%s: the script ran %d times, the record says %d attempts", id, calls, wt.attempts)
		}
	}
	// The reason of every retry is in the debug log, as the user sees it.
	for _, reason := range []string{
		`retryable (exit 1, stderr exception openai.APIConnectionError)`,
		`retryable (exit 1, stderr exception openai.RateLimitError, status 429 code rate_limit_exceeded)`,
		`retryable (exit 255, stderr keyword \"no route to host\")`,
		`retryable (exit 1, stderr status 503)`,
	} {
		if !strings.Contains(r.stderr, reason) {
			t.Errorf("the debug log has no retry for %s:\n%s", reason, r.stderr)
		}
	}
}

// TestPythonAuthErrorsTripABreakerThatCountsFatal: issue 39. A 401 from
// a wrapped script was item, so "breaker.count: [fatal]" never saw it and
// the run went through every item; now the breaker opens after threshold
// calls.
func TestPythonAuthErrorsTripABreakerThatCountsFatal(t *testing.T) {
	w, python := pythonWorkdir(t)
	w.items("items.jsonl", 40)
	w.write("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: exec
  argv: [%q, "tool.py", "auth", "{{.id}}"]
breaker: {threshold: 3, count: [fatal]}
concurrency: {max: 1}
`, python), 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (the breaker opens on the 401s)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "circuit breaker open: 3 consecutive failures") {
		t.Errorf("the summary does not say the breaker opened after 3 failures:\n%s", r.stdout)
	}
	failures := readRecords(t, filepath.Join(w.home, "jobs", jobID(t, r), "failures.jsonl"))
	if len(failures) != 3 {
		t.Errorf("%d failures recorded, want 3: the breaker must stop the run at its threshold", len(failures))
	}
	for _, f := range failures {
		if f.Class != "fatal" || f.Attempts != 1 {
			t.Errorf("failure %d: class %q after %d attempts, want fatal after 1", f.Idx, f.Class, f.Attempts)
		}
	}
}

// pythonWorkdir is a workdir holding the openai stand-in and the Python
// tool, and the interpreter's own path (a version manager's shim costs
// a second a call); it skips the test where python3 is not installed.
func pythonWorkdir(t *testing.T) (*workdir, string) {
	t.Helper()
	out, err := exec.Command("python3", "-c", "import sys; print(sys.executable)").Output()
	if err != nil {
		t.Skip("python3 does not run:", err)
	}
	python := strings.TrimSpace(string(out))
	w := newWorkdir(t)
	if err := os.Mkdir(filepath.Join(w.dir, "openai"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.write("openai/__init__.py", pyStandIn, 0o644)
	w.write("tool.py", pyTool, 0o644)
	return w, python
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}
