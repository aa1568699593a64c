package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tenaxhq/tenax/cache"
	"github.com/tenaxhq/tenax/mock"
)

// keyCounter serves a mock provider and counts the requests that
// authenticate with key, so a test can tell the key really was sent.
type keyCounter struct {
	srv      *mock.Server
	key      string
	withKey  atomic.Int64
	requests atomic.Int64
}

func (k *keyCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	k.requests.Add(1)
	if r.Header.Get("Authorization") == "Bearer "+k.key {
		k.withKey.Add(1)
	}
	k.srv.ServeHTTP(w, r)
}

func serveCountingMock(t *testing.T, key string, cfg mock.Config) (*keyCounter, string) {
	t.Helper()
	k := &keyCounter{srv: mock.New(cfg), key: key}
	ts := httptest.NewServer(k)
	t.Cleanup(ts.Close)
	return k, ts.URL
}

// leakSpec is an OpenAI job against a mock at %s, keyed by
// ${OPENAI_API_KEY}, with the response cache on in the jobs home.
const leakSpec = `
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  output: json
  prompt: "Describe item {{.n}}"
  timeout: 5s
validate:
  json_schema: {type: object, required: [text, length]}
heal:
  hints:
    - match: "not JSON|missing"
      hint: "Answer with the complete JSON object."
retry:
  max_attempts: 8
  max_hint: 5ms
  backoff: {base: 1ms, max: 5ms}
breaker: {threshold: %d, on_trip: abort}
concurrency: {max: %d}
`

// TestAPIKeyNeverLeaks: the API key a spec takes from the environment
// reaches the provider on every request, and appears nowhere tenax
// writes: not in stdout or stderr (debug JSON logs included), not in any
// file under the job's directory or the cache, not in status, export,
// validate or dry-run output, even when the provider rejects the key and
// the breaker trips on it.
func TestAPIKeyNeverLeaks(t *testing.T) {
	var rnd [16]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	key := "sk-test-SECRET-" + hex.EncodeToString(rnd[:])
	// Providers echo a key masked to its last four characters; anything
	// longer from its middle is a leak.
	secret := key[len("sk-test-") : len(key)-4]
	env := []string{"OPENAI_API_KEY=" + key}

	w := newWorkdir(t)
	w.items("items.jsonl", 40)
	faulty, faultyURL := serveCountingMock(t, key, mock.Config{Seed: 3, Faults: mock.Faults{
		Auth: 0.2, Server: 0.2, RateLimit: 0.1, Malformed: 0.05, InvalidOutput: 0.1,
	}})
	w.write("run.yaml", fmt.Sprintf(leakSpec, faultyURL, 1000, 16), 0o644)
	rejecting, rejectingURL := serveCountingMock(t, key, mock.Config{Faults: mock.Faults{Auth: 1}})
	w.write("trip.yaml", fmt.Sprintf(leakSpec, rejectingURL, 3, 1), 0o644)

	var outputs []string
	show := func(what string, r result) {
		outputs = append(outputs, fmt.Sprintf("== %s (exit %d)\n-- stdout:\n%s\n-- stderr:\n%s", what, r.code, r.stdout, r.stderr))
	}
	logFlags := []string{"--log-level", "debug", "--log-format", "json"}

	run := w.tenaxEnv(env, append(logFlags, "run", "run.yaml")...)
	show("run", run)
	if run.code != 1 {
		t.Fatalf("run: exit %d, want 1 (401s are fatal item failures)\nstdout:\n%s\nstderr:\n%s", run.code, run.stdout, run.stderr)
	}
	if !strings.Contains(run.stderr, `"level":"DEBUG"`) {
		t.Errorf("run: no debug JSON log lines on stderr; the test must see tenax's most verbose logs:\n%s", run.stderr)
	}
	runID := jobID(t, run)
	failures, err := os.ReadFile(filepath.Join(w.home, "jobs", runID, "failures.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(failures), "invalid_api_key") {
		t.Errorf("run: failures.jsonl does not record a 401 invalid_api_key, so the key's error text was never tested:\n%s", failures)
	}

	trip := w.tenaxEnv(env, append(logFlags, "run", "trip.yaml")...)
	show("trip", trip)
	if trip.code != 3 {
		t.Fatalf("trip: exit %d, want 3 (the breaker trips on 401s)\nstdout:\n%s\nstderr:\n%s", trip.code, trip.stdout, trip.stderr)
	}
	if !strings.Contains(trip.stderr+trip.stdout, "Incorrect API key provided") {
		t.Errorf("trip: the provider's 401 message is not reported:\nstdout:\n%s\nstderr:\n%s", trip.stdout, trip.stderr)
	}
	tripID := jobID(t, trip)

	for _, args := range [][]string{
		{"status"},
		{"status", runID},
		{"status", "--all"},
		{"export", runID},
		{"export", runID, "--failed"},
		{"export", tripID, "--failed", "--format", "csv"},
		{"validate", "run.yaml"},
		{"run", "--dry-run", "run.yaml"},
	} {
		r := w.tenaxEnv(env, append(logFlags, args...)...)
		show(strings.Join(args, " "), r)
		if r.code != 0 {
			t.Errorf("tenax %s: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), r.code, r.stdout, r.stderr)
		}
	}

	for _, k := range []*keyCounter{faulty, rejecting} {
		if n := k.requests.Load(); n == 0 || k.withKey.Load() != n {
			t.Errorf("the mock received %d requests, %d with the key: the key must be sent on every request", n, k.withKey.Load())
		}
	}

	for i, out := range outputs {
		if strings.Contains(out, secret) {
			t.Errorf("command output %d shows the API key:\n%s", i, out)
		}
	}
	files := 0
	err = filepath.WalkDir(w.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if i := bytes.Index(b, []byte(secret)); i >= 0 {
			t.Errorf("%s holds the API key at byte %d:\n%s", p, i, b[max(0, i-200):min(len(b), i+200)])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"manifest.json", "results.jsonl", "failures.jsonl"} {
		if _, err := os.Stat(filepath.Join(w.home, "jobs", runID, want)); err != nil {
			t.Errorf("the run wrote no %s to search: %v", want, err)
		}
	}
	if info, err := os.Stat(filepath.Join(w.home, "cache", cache.LogName)); err != nil || info.Size() == 0 {
		t.Errorf("no cache entries under %s to search (%v): the cache is on by default for LLM tasks", filepath.Join(w.home, "cache"), err)
	}
	t.Logf("searched %d command outputs and %d files", len(outputs), files)
}

// TestBudgetStopsThenResumeFinishes: a token budget below the job's needs
// stops dispatch with exit 3 and the reason, leaving the rest pending, not
// failed; after the budget is raised in the spec, resume finishes the job.
func TestBudgetStopsThenResumeFinishes(t *testing.T) {
	const n = 30
	w := newWorkdir(t)
	w.items("items.jsonl", n)
	spec := `
input: items.jsonl
task:
  type: llm
  provider: mock
  model: mock-json
  output: json
  prompt: "Describe the number {{.n}} as JSON."
  max_tokens: 40
budget: {max_tokens: %d}
concurrency: {max: 2}
cache: {enabled: false}
mock: {latency: 1ms}
`
	w.write("job.yaml", fmt.Sprintf(spec, 150), 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 3 {
		t.Fatalf("exit %d, want 3 (stopped by the budget)\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout+r.stderr, "budget.max_tokens of 150 reached") {
		t.Errorf("the budget's reason is not printed:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	}
	id := jobID(t, r)
	results := filepath.Join(w.home, "jobs", id, "results.jsonl")
	done := readRecords(t, results)
	if len(done) == 0 || len(done) >= n {
		t.Fatalf("%d items recorded under a 150-token budget, want some but not all %d", len(done), n)
	}
	for _, rec := range done {
		if rec.Class != "" {
			t.Errorf("item %d failed (%s: %s): a budget stop must never fail an item", rec.Idx, rec.Class, rec.Error)
		}
	}

	st := w.tenax("status", id)
	want := fmt.Sprintf("%d succeeded, 0 failed, %d pending", len(done), n-len(done))
	if st.code != 0 || !strings.Contains(st.stdout, want) || !strings.Contains(st.stdout, "budget.max_tokens") {
		t.Errorf("status (exit %d) does not show %q and the budget stop:\n%s%s", st.code, want, st.stdout, st.stderr)
	}

	w.write("job.yaml", fmt.Sprintf(spec, 1000000), 0o644)
	res := w.tenax("resume", id)
	if res.code != 0 {
		t.Fatalf("resume: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", res.code, res.stdout, res.stderr)
	}
	st = w.tenax("status", id)
	if want := fmt.Sprintf("%d succeeded, 0 failed, 0 pending", n); !strings.Contains(st.stdout, want) {
		t.Errorf("status after resume does not show %q:\n%s", want, st.stdout)
	}
	recs := readRecords(t, results)
	seen := map[int]int{}
	for _, rec := range recs {
		seen[rec.Idx]++
		if rec.Class != "" {
			t.Errorf("item %d failed: %s", rec.Idx, rec.Error)
		}
	}
	if len(recs) != n || len(seen) != n {
		t.Errorf("%d records for %d distinct items, want %d and %d: resume must run only what the budget left pending", len(recs), len(seen), n, n)
	}
}

// statusGroup is one error group line of `tenax status`.
var statusGroup = regexp.MustCompile(`(?m)^\s+(\d+)\s+(\w+)\s+([0-9a-f]{16})\s+(.*)$`)

// TestStatusGroupsFailuresByFingerprint: failures whose messages differ
// only in numbers and paths form one group in `tenax status`, with its
// count, class, normalized message and an example item; a different
// message forms another. `tenax export --failed` carries the tracked
// errors of invalid failures.
func TestStatusGroupsFailuresByFingerprint(t *testing.T) {
	w := newWorkdir(t)
	w.items("items.jsonl", 14)
	w.write("tool.sh", `#!/bin/sh
n=$1
if [ "$n" -lt 6 ]; then
  echo "error: cannot read /srv/data/part$n/file$n.csv at line $((n * 7 + 3))" >&2
  exit 1
fi
if [ "$n" -lt 9 ]; then
  echo "error: the record is empty" >&2
  exit 1
fi
if [ "$n" -lt 11 ]; then
  echo "garbage"
  exit 0
fi
echo "ok $n"
`, 0o755)
	w.write("job.yaml", `
input: items.jsonl
task:
  type: exec
  argv: ["./tool.sh", "{{.n}}"]
validate:
  regex: "^ok"
breaker: {threshold: 100}
concurrency: {max: 4}
`, 0o644)
	r := w.tenax("run", "job.yaml")
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	id := jobID(t, r)
	st := w.tenax("status", id)
	if st.code != 0 {
		t.Fatalf("status: exit %d\n%s%s", st.code, st.stdout, st.stderr)
	}
	if !strings.Contains(st.stdout, "Top error groups (3 in all)") || !regexp.MustCompile(`Failed by class: .*item 9`).MatchString(st.stdout) ||
		!regexp.MustCompile(`Failed by class: .*invalid 2`).MatchString(st.stdout) {
		t.Errorf("status does not announce 3 error groups and the failures by class:\n%s", st.stdout)
	}
	groups := statusGroup.FindAllStringSubmatch(st.stdout, -1)
	type group struct {
		count      int
		class, msg string
	}
	var got []group
	for _, g := range groups {
		c, _ := strconv.Atoi(g[1])
		got = append(got, group{c, g[2], g[4]})
	}
	if len(got) != 3 {
		t.Fatalf("status shows %d error groups, want 3:\n%s", len(got), st.stdout)
	}
	checks := []struct {
		count    int
		class    string
		has, not string
	}{
		{6, "item", "cannot read <path> at line <int>", "part"},
		{3, "item", "the record is empty", ""},
		{2, "invalid", "does not match pattern", ""},
	}
	for i, c := range checks {
		g := got[i]
		if g.count != c.count || g.class != c.class || !strings.Contains(g.msg, c.has) || (c.not != "" && strings.Contains(g.msg, c.not)) {
			t.Errorf("group %d: %d %s %q; want %d %s with a normalized message containing %q", i+1, g.count, g.class, g.msg, c.count, c.class, c.has)
		}
	}
	if n := strings.Count(st.stdout, "e.g. #"); n != 3 {
		t.Errorf("status shows %d example items, want one per group:\n%s", n, st.stdout)
	}

	ex := w.tenax("export", id, "--failed")
	if ex.code != 0 {
		t.Fatalf("export --failed: exit %d\n%s", ex.code, ex.stderr)
	}
	lines := strings.Split(strings.TrimSpace(ex.stdout), "\n")
	if len(lines) != 11 {
		t.Fatalf("export --failed wrote %d lines, want the 11 failed items:\n%s", len(lines), ex.stdout)
	}
	invalid := 0
	for _, l := range lines {
		var rec struct {
			Idx           int             `json:"_idx"`
			Class         string          `json:"class"`
			Fingerprint   string          `json:"fingerprint"`
			TrackedErrors json.RawMessage `json:"tracked_errors"`
		}
		if err := json.Unmarshal([]byte(l), &rec); err != nil {
			t.Fatalf("export --failed: bad line %q: %v", l, err)
		}
		if rec.Class != "invalid" {
			continue
		}
		invalid++
		var tracked []struct {
			Fingerprint string `json:"fingerprint"`
			Message     string `json:"message"`
		}
		if err := json.Unmarshal(rec.TrackedErrors, &tracked); err != nil || len(tracked) == 0 {
			t.Errorf("item %d (invalid) exports tracked_errors %s (%v), want its tracked errors", rec.Idx, rec.TrackedErrors, err)
			continue
		}
		if tracked[0].Fingerprint != rec.Fingerprint || !strings.Contains(tracked[0].Message, "does not match pattern") {
			t.Errorf("item %d: tracked error %+v, record fingerprint %s; want the validation error under the record's fingerprint", rec.Idx, tracked[0], rec.Fingerprint)
		}
	}
	if invalid != 2 {
		t.Errorf("export --failed has %d invalid items, want 2", invalid)
	}
}
