package job_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/tenaxhq/tenax/cache"
	"github.com/tenaxhq/tenax/heal"
	"github.com/tenaxhq/tenax/job"
	"github.com/tenaxhq/tenax/mock"
	"github.com/tenaxhq/tenax/report"
	"github.com/tenaxhq/tenax/store"
	"github.com/tenaxhq/tenax/store/jsonl"
)

// These tests run whole jobs (spec file → job.Run → records on disk)
// against the simulated provider served over loopback HTTP by the test
// itself, so that they can count and read what the provider received.

// llmWorld is a directory holding a spec, its input and a jobs home.
type llmWorld struct {
	t    *testing.T
	dir  string
	home string
}

func newLLMWorld(t *testing.T) *llmWorld {
	t.Helper()
	dir := t.TempDir()
	return &llmWorld{t: t, dir: dir, home: filepath.Join(dir, "home")}
}

// file writes name under the world's directory and returns its path.
func (w *llmWorld) file(name, content string, mode os.FileMode) string {
	w.t.Helper()
	p := filepath.Join(w.dir, name)
	if err := os.WriteFile(p, []byte(content), mode); err != nil {
		w.t.Fatal(err)
	}
	return p
}

// words writes n JSONL items {"word": "w<i>"}.
func (w *llmWorld) words(name string, n int) {
	w.t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"word": "w%d"}`+"\n", i)
	}
	w.file(name, b.String(), 0o644)
}

// run runs the spec at name as a new job, with OPENAI_API_KEY and
// ANTHROPIC_API_KEY set for ${...} expansion only.
func (w *llmWorld) run(name string) *job.Result {
	w.t.Helper()
	env := func(k string) (string, bool) {
		switch k {
		case "OPENAI_API_KEY", "ANTHROPIC_API_KEY":
			return "sk-test-key", true
		}
		return "", false
	}
	res, err := job.Run(context.Background(), filepath.Join(w.dir, name), job.Options{
		Home: w.home, Env: env, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		w.t.Fatalf("job.Run(%s): %v", name, err)
	}
	return res
}

// records returns a job's latest record per idx, by idx.
func (w *llmWorld) records(id string) map[int]store.Record {
	w.t.Helper()
	ctx := context.Background()
	j, err := (&jsonl.Store{Home: w.home}).OpenReadOnly(ctx, id)
	if err != nil {
		w.t.Fatal(err)
	}
	defer j.Close()
	recs := map[int]store.Record{}
	if err := j.Scan(ctx, func(r store.Record) error { recs[r.Idx] = r; return nil }); err != nil {
		w.t.Fatal(err)
	}
	return recs
}

// serveMock serves a simulated provider over loopback for the test's
// duration and returns it with its base URL.
func serveMock(t *testing.T, cfg mock.Config) (*mock.Server, string) {
	t.Helper()
	srv := mock.New(cfg)
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

// trackedErrors decodes a record's tracked_errors.
func trackedErrors(t *testing.T, rec store.Record) []heal.TrackedError {
	t.Helper()
	if len(rec.TrackedErrors) == 0 {
		t.Fatalf("item %d: no tracked_errors in its record (error %q)", rec.Idx, rec.Error)
	}
	var errs []heal.TrackedError
	if err := json.Unmarshal(rec.TrackedErrors, &errs); err != nil {
		t.Fatalf("item %d: tracked_errors %s: %v", rec.Idx, rec.TrackedErrors, err)
	}
	return errs
}

// TestRetryBudgetIsNotMultiplied: against a provider that always answers
// 500, an item with retry.max_attempts 3 reaches the server exactly three
// times, for both wire formats: the SDKs' own retries are off, so nothing
// multiplies tenax's budget.
func TestRetryBudgetIsNotMultiplied(t *testing.T) {
	for _, c := range []struct{ provider, path string }{
		{"openai", "/v1"},
		{"anthropic", ""},
	} {
		t.Run(c.provider, func(t *testing.T) {
			srv, url := serveMock(t, mock.Config{Faults: mock.Faults{Server: 1}})
			w := newLLMWorld(t)
			w.words("items.jsonl", 1)
			w.file("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: %s
  base_url: %s%s
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  prompt: "Describe {{.word}}"
  timeout: 5s
retry:
  max_attempts: 3
  backoff: {base: 1ms, max: 2ms}
cache: {enabled: false}
`, c.provider, url, c.path), 0o644)
			res := w.run("job.yaml")
			if got := srv.Stats().Requests; got != 3 {
				t.Errorf("the server received %d requests for 1 item with retry.max_attempts 3, want exactly 3", got)
			}
			if got := srv.Stats().ServerErrors; got != 3 {
				t.Errorf("the server answered %d requests with 500, want 3 (every request): the test is not measuring retries of 500s", got)
			}
			rec, ok := w.records(res.JobID)[0]
			if !ok {
				t.Fatal("item 0 has no record")
			}
			if rec.Class.String() != "retryable" || rec.Attempts != 3 {
				t.Errorf("item 0: class %q after %d attempts, want retryable after 3 (error %q)", rec.Class, rec.Attempts, rec.Error)
			}
			if !strings.Contains(rec.Error, "500") {
				t.Errorf("item 0's error %q does not name the 500 it met", rec.Error)
			}
			if res.ExitCode != 1 {
				t.Errorf("exit code %d, want 1 (finished with failures)", res.ExitCode)
			}
		})
	}
}

// healSpec is a mock-json job whose answers are checked against a schema
// requiring text (string) and length (integer), with a hint per failure
// kind the mock produces.
const healSpec = `
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
  # Long enough that a loaded machine under the race detector never times
  # out a healthy call: the test counts every call.
  timeout: 2m
validate:
  json_schema:
    type: object
    required: [text, length]
    properties:
      text: {type: string}
      length: {type: integer}
heal:
  # At 30 percent invalid answers, six in a row on one error (the default budgets)
  # strike about one item in 1,400: budgets sized for the fault rate make
  # a failure a one-in-a-million event, so the test proves healing, not luck.
  max_attempts: 16
  max_error_attempts: 12
  hints:
    - match: "missing property 'length'"
      hint: "HINT-LENGTH: add the integer field length."
    - match: "not JSON|cut off"
      hint: "HINT-JSON: answer with one complete JSON object."
retry:
  backoff: {base: 1ms, max: 2ms}
breaker: {threshold: 50}
concurrency: {max: 32}
cache: {enabled: false}
`

// TestSelfHealingAtScale: 1,000 items against a model that answers 30%
// of requests with plausible but invalid JSON all end valid, through
// re-asks whose feedback quotes the failed answer, the validator's error
// and the matching hint, and holds only the last failed answer.
func TestSelfHealingAtScale(t *testing.T) {
	const n = 1000
	srv, url := serveMock(t, mock.Config{Seed: 7, Record: true, Faults: mock.Faults{InvalidOutput: 0.3}})
	w := newLLMWorld(t)
	w.words("items.jsonl", n)
	w.file("job.yaml", fmt.Sprintf(healSpec, url), 0o644)
	res := w.run("job.yaml")
	if res.Succeeded != n || res.Failed != 0 || res.Pending != 0 || res.ExitCode != 0 {
		for _, r := range w.records(res.JobID) {
			if r.Failed() {
				t.Logf("item %d failed (%s) after %d calls, %d re-asks: %s", r.Idx, r.Class, r.Attempts, r.HealAttempts, r.Error)
			}
		}
		t.Fatalf("%d succeeded, %d failed, %d pending, exit %d; want %d, 0, 0, exit 0", res.Succeeded, res.Failed, res.Pending, res.ExitCode, n)
	}

	recs := w.records(res.JobID)
	if len(recs) != n {
		t.Fatalf("%d records, want %d", len(recs), n)
	}
	healed, heals := 0, 0
	for idx, rec := range recs {
		if rec.Failed() {
			t.Errorf("item %d failed: %s", idx, rec.Error)
		}
		if rec.GenerationAttempts != rec.HealAttempts+1 || rec.Attempts != rec.GenerationAttempts {
			t.Errorf("item %d: %d attempts, %d generations, %d heal attempts; want generations = heal attempts + 1 = attempts (no transport faults)",
				idx, rec.Attempts, rec.GenerationAttempts, rec.HealAttempts)
		}
		if rec.HealAttempts > 0 {
			healed++
		}
		heals += rec.HealAttempts
	}
	st := srv.Stats()
	if healed < n/10 {
		t.Errorf("only %d of %d items needed a re-ask with 30%% invalid answers: the faults did not strike", healed, n)
	}
	if int64(heals) != st.InvalidOutputs {
		t.Errorf("records count %d re-asks, the mock gave %d invalid answers: every invalid answer must cost exactly one re-ask", heals, st.InvalidOutputs)
	}
	if st.Requests != int64(n+heals) {
		t.Errorf("the mock received %d requests, want %d items + %d re-asks = %d", st.Requests, n, heals, n+heals)
	}

	// What the model was told.
	var sawSchema, sawJSON bool
	for _, r := range srv.Requests() {
		msgs := r.Messages
		if len(msgs) > 0 && msgs[0].Role == "system" && msgs[0].Content == "Answer with JSON." {
			// json_object mode (the schema does not fit OpenAI's strict
			// subset), and the prompt never says JSON.
			msgs = msgs[1:]
		}
		var roles []string
		for _, m := range msgs {
			roles = append(roles, m.Role)
		}
		switch strings.Join(roles, ",") {
		case "user":
			continue
		case "user,assistant,user":
		default:
			t.Fatalf("a request holds the conversation %v: a re-ask must hold the prompt, the last failed answer and the feedback, nothing more", roles)
		}
		prev, feedback := msgs[1].Content, msgs[2].Content
		if !strings.Contains(feedback, prev) {
			t.Errorf("the feedback does not quote the failed answer %q:\n%s", prev, feedback)
		}
		switch {
		case strings.Contains(feedback, "missing property 'length'"):
			sawSchema = true
			if !strings.Contains(feedback, "HINT-LENGTH") || strings.Contains(feedback, "HINT-JSON") {
				t.Errorf("feedback about a missing property carries the wrong hints:\n%s", feedback)
			}
			if !strings.Contains(feedback, "at root") {
				t.Errorf("feedback about a missing property does not say where (the schema path \"at root\"):\n%s", feedback)
			}
		case strings.Contains(feedback, "not JSON"), strings.Contains(feedback, "the answer was cut off"):
			// The mock cuts JSON short with finish_reason length, as
			// max_tokens does: the feedback says it was cut off.
			sawJSON = true
			if !strings.Contains(feedback, "HINT-JSON") || strings.Contains(feedback, "HINT-LENGTH") {
				t.Errorf("feedback about truncated JSON carries the wrong hints:\n%s", feedback)
			}
		case strings.Contains(feedback, "was cut off at max_tokens"):
			// The mock cuts a JSON answer off as a real model does, with
			// finish_reason length: the feedback says so.
			sawJSON = true
			if strings.Contains(feedback, "HINT-LENGTH") {
				t.Errorf("feedback about a cut-off answer carries the schema's hint:\n%s", feedback)
			}
		default:
			t.Errorf("feedback names neither the schema error nor the JSON error:\n%s", feedback)
		}
	}
	if !sawSchema || !sawJSON {
		t.Errorf("re-asks seen: about a missing property %v, about invalid JSON %v; the mock produces both, want both", sawSchema, sawJSON)
	}
}

// TestAlwaysInvalidFails: an output that can never pass fails the item
// with class invalid and its tracked errors, within the heal budgets: the
// per-error budget when the error stays the same, the item's budget when
// every re-ask brings a new error.
func TestAlwaysInvalidFails(t *testing.T) {
	t.Run("schema the model never satisfies", func(t *testing.T) {
		srv, url := serveMock(t, mock.Config{})
		w := newLLMWorld(t)
		w.words("items.jsonl", 3)
		w.file("job.yaml", fmt.Sprintf(`
input: items.jsonl
task:
  type: llm
  provider: openai
  base_url: %s/v1
  api_key: ${OPENAI_API_KEY}
  model: mock-json
  output: json
  prompt: "Describe {{.word}}"
validate:
  json_schema: {type: object, required: [never]}
heal: {max_attempts: 8, max_error_attempts: 3}
breaker: {threshold: 50}
cache: {enabled: false}
`, url), 0o644)
		res := w.run("job.yaml")
		if res.Failed != 3 || res.ExitCode != 1 {
			t.Fatalf("%d failed, exit %d; want all 3 failed, exit 1", res.Failed, res.ExitCode)
		}
		calls := 0
		for idx, rec := range w.records(res.JobID) {
			calls += rec.Attempts
			if rec.Class.String() != "invalid" {
				t.Errorf("item %d: class %q, want invalid (error %q)", idx, rec.Class, rec.Error)
			}
			if rec.GenerationAttempts > 3+1 || rec.GenerationAttempts < 2 {
				t.Errorf("item %d: %d generations, want a re-ask and at most heal.max_error_attempts + 1 = 4", idx, rec.GenerationAttempts)
			}
			errs := trackedErrors(t, rec)
			if len(errs) != 1 || errs[0].Fingerprint != rec.Fingerprint || !strings.Contains(errs[0].Message, "missing property 'never'") {
				t.Errorf("item %d: fingerprint %s, tracked errors %+v; want one, the record's fingerprint, about the missing property", idx, rec.Fingerprint, errs)
			}
		}
		if got := srv.Stats().Requests; got != int64(calls) {
			t.Errorf("the mock received %d requests, the records count %d attempts", got, calls)
		}
	})

	// An exec task whose output differs on every call (the random bytes it prints),
	// so the heal loop is never stuck on a repeated answer and only its
	// budgets stop it.
	const varying = `
input: items.jsonl
task:
  type: exec
  argv: ["od", "-An", "-N8", "-tx8", "/dev/urandom"]
validate:
%s
heal: {max_attempts: 4, max_error_attempts: 2}
breaker: {threshold: 50}
`
	t.Run("same error every time", func(t *testing.T) {
		w := newLLMWorld(t)
		w.words("items.jsonl", 1)
		w.file("job.yaml", fmt.Sprintf(varying, "  regex: '^never$'"), 0o644)
		res := w.run("job.yaml")
		rec := w.records(res.JobID)[0]
		if rec.Class.String() != "invalid" || rec.HealAttempts != 2 || rec.GenerationAttempts != 3 {
			t.Fatalf("class %q, %d re-asks, %d generations; want invalid after heal.max_error_attempts = 2 re-asks, 3 generations (error %q)",
				rec.Class, rec.HealAttempts, rec.GenerationAttempts, rec.Error)
		}
		errs := trackedErrors(t, rec)
		if len(errs) != 1 || errs[0].Attempts != 2 || errs[0].Fingerprint != rec.Fingerprint {
			t.Errorf("tracked errors %+v, record fingerprint %s; want one error with 2 attempts and the record's fingerprint", errs, rec.Fingerprint)
		}
		if !strings.Contains(rec.Error, "every remaining error has spent its re-asks") {
			t.Errorf("error %q does not say the per-error budget stopped it", rec.Error)
		}
	})

	t.Run("a new error every time", func(t *testing.T) {
		w := newLLMWorld(t)
		w.words("items.jsonl", 1)
		// Each check fails with a different word (numbers would be folded
		// by the normalizer into one fingerprint).
		w.file("check.sh", `#!/bin/sh
cat >/dev/null
n=$(cat count 2>/dev/null || echo 0)
echo $((n + 1)) > count
set -- alpha bravo charlie kilo lima mike november oscar papa quebec
shift "$n"
echo "wrong answer: $1 is missing" >&2
exit 1
`, 0o755)
		w.file("job.yaml", fmt.Sprintf(varying, "  command: ./check.sh"), 0o644)
		res := w.run("job.yaml")
		rec := w.records(res.JobID)[0]
		if rec.Class.String() != "invalid" || rec.HealAttempts != 4 || rec.GenerationAttempts != 5 {
			t.Fatalf("class %q, %d re-asks, %d generations; want invalid after heal.max_attempts = 4 re-asks, 5 generations (error %q)",
				rec.Class, rec.HealAttempts, rec.GenerationAttempts, rec.Error)
		}
		b, err := os.ReadFile(filepath.Join(w.dir, "count"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(b)); got != "5" {
			t.Errorf("the validator ran %s times, want 5 (once per generation)", got)
		}
		errs := trackedErrors(t, rec)
		if len(errs) != 5 {
			t.Fatalf("%d tracked errors, want 5 distinct ones: %+v", len(errs), errs)
		}
		for i, e := range errs[:4] {
			if e.Attempts != 1 || e.Status != heal.StatusFixed {
				t.Errorf("tracked error %d (%s): %d attempts, status %s; want 1 re-ask, then fixed (replaced by the next)", i, e.Message, e.Attempts, e.Status)
			}
		}
		if !strings.Contains(rec.Error, "all re-asks spent") {
			t.Errorf("error %q does not say the item's heal budget stopped it", rec.Error)
		}
	})
}

// TestCacheServesRepeatsAndRejectsInvalid: a second job over the same
// input makes no call at all; a cached answer that fails validation is
// moved to rejected/ and regenerated.
func TestCacheServesRepeatsAndRejectsInvalid(t *testing.T) {
	const n = 12
	srv, url := serveMock(t, mock.Config{})
	w := newLLMWorld(t)
	cacheDir := filepath.Join(w.dir, "cache")
	w.words("items.jsonl", n)
	spec := strings.Replace(fmt.Sprintf(healSpec, url), "cache: {enabled: false}", "cache: {enabled: true, dir: cache}", 1)
	w.file("job.yaml", spec, 0o644)

	first := w.run("job.yaml")
	if first.Succeeded != n || srv.Stats().Requests != n {
		t.Fatalf("first run: %d succeeded with %d calls, want %d and %d", first.Succeeded, srv.Stats().Requests, n, n)
	}
	for idx, rec := range w.records(first.JobID) {
		if rec.CacheHit {
			t.Errorf("first run: item %d has cache_hit true with an empty cache", idx)
		}
	}

	second := w.run("job.yaml")
	if got := srv.Stats().Requests; second.Succeeded != n || got != n {
		t.Fatalf("second run: %d succeeded, the mock received %d requests in all; want %d and still %d (every answer from the cache)", second.Succeeded, got, n, n)
	}
	for idx, rec := range w.records(second.JobID) {
		if !rec.CacheHit || rec.HealAttempts != 0 {
			t.Errorf("second run: item %d has cache_hit %v, %d re-asks; want a cache hit without re-ask", idx, rec.CacheHit, rec.HealAttempts)
		}
	}

	// Spoil the entry of item 7: its cached answer loses "length".
	const spoiled = 7
	key := findCacheEntry(t, cacheDir, fmt.Sprintf("Describe w%d", spoiled))
	putCacheEntry(t, cacheDir, key, spoiledText(spoiled))

	third := w.run("job.yaml")
	if got := srv.Stats().Requests; third.Succeeded != n || got != n+1 {
		t.Fatalf("third run: %d succeeded, %d requests in all; want %d and %d (one call to regenerate the spoiled answer)", third.Succeeded, got, n, n+1)
	}
	recs := w.records(third.JobID)
	for idx, rec := range recs {
		want := idx != spoiled
		if rec.CacheHit != want {
			t.Errorf("third run: item %d has cache_hit %v, want %v", idx, rec.CacheHit, want)
		}
	}
	if r := recs[spoiled]; r.HealAttempts != 1 || r.Failed() {
		t.Errorf("third run: spoiled item has %d re-asks, error %q; want one re-ask that succeeds", r.HealAttempts, r.Error)
	}
	if v, ok := getCacheEntry(t, cacheDir, key); ok && string(v) == spoiledText(spoiled) {
		t.Errorf("the spoiled entry %s is still in the cache: %s", key, v)
	}
	rejected := filepath.Join(cacheDir, "rejected", key+".json")
	kept, err := os.ReadFile(rejected)
	if err != nil {
		t.Fatalf("the spoiled entry was not kept under rejected/: %v", err)
	}
	if !strings.Contains(string(kept), "missing property 'length'") {
		t.Errorf("the rejected entry does not record why it was rejected:\n%s", kept)
	}

	// The original question's answer is now the healed one (docs/heal.md,
	// "A heal is remembered"): the next job is served it, with no call.
	if v, ok := getCacheEntry(t, cacheDir, key); !ok || strings.Contains(string(v), spoiledText(spoiled)) {
		t.Errorf("the original question's entry after the heal: %s, %v; want the healed answer", v, ok)
	}
	fourth := w.run("job.yaml")
	if got := srv.Stats().Requests; fourth.Succeeded != n || got != n+1 {
		t.Fatalf("fourth run: %d succeeded, %d requests in all; want %d and still %d (the healed answer served)", fourth.Succeeded, got, n, n+1)
	}
	if r := w.records(fourth.JobID)[spoiled]; !r.CacheHit || r.HealAttempts != 0 || r.Failed() {
		t.Errorf("fourth run: spoiled item has cache_hit %v, %d re-asks, error %q; want the healed answer from the cache", r.CacheHit, r.HealAttempts, r.Error)
	}
}

// spoiledText is item idx's answer without its "length".
func spoiledText(idx int) string { return fmt.Sprintf(`{"text":"Describe w%d"}`, idx) }

// TestAReAskServedFromTheCacheIsACacheHit: an item whose cached first
// answer is invalid is re-asked, and the re-ask's answer, cached by an
// earlier run, is served from the cache with no call; the record said
// cache_hit false (it counted only a first call's hit) and status said "0
// served from cache". cache_hit says the recorded output came from the
// cache.
func TestAReAskServedFromTheCacheIsACacheHit(t *testing.T) {
	const n, spoiled = 4, 2
	srv, url := serveMock(t, mock.Config{})
	w := newLLMWorld(t)
	cacheDir := filepath.Join(w.dir, "cache")
	w.words("items.jsonl", n)
	w.file("job.yaml", strings.Replace(fmt.Sprintf(healSpec, url), "cache: {enabled: false}", "cache: {enabled: true, dir: cache}", 1), 0o644)
	w.run("job.yaml")
	// The first question's answer loses "length": the next run re-asks,
	// and caches the re-ask's answer.
	key := findCacheEntry(t, cacheDir, fmt.Sprintf("Describe w%d", spoiled))
	spoilt := fmt.Sprintf(`{"text":"Describe w%d"}`, spoiled)
	putCacheEntry(t, cacheDir, key, spoilt)
	w.run("job.yaml")
	// Spoiled again the same way: the re-ask is the same question, cached.
	putCacheEntry(t, cacheDir, key, spoilt)
	before := srv.Stats().Requests
	third := w.run("job.yaml")
	if got := srv.Stats().Requests; got != before {
		t.Fatalf("third run made %d calls, want none (the re-ask's answer is cached)", got-before)
	}
	rec := w.records(third.JobID)[spoiled]
	if !rec.CacheHit || rec.HealAttempts != 1 || rec.Failed() {
		t.Errorf("re-asked item: cache_hit %v, %d re-asks, error %q; want a cache hit after one re-ask", rec.CacheHit, rec.HealAttempts, rec.Error)
	}
	j, err := (&jsonl.Store{Home: w.home}).OpenReadOnly(t.Context(), third.JobID)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	r, err := report.BuildReport(t.Context(), j, job.BatchWaves)
	if err != nil {
		t.Fatal(err)
	}
	if r.CacheHits != n {
		t.Errorf("status counts %d served from cache, want %d", r.CacheHits, n)
	}
}

// findCacheEntry returns the key of the cache entry whose value mentions
// text.
func findCacheEntry(t *testing.T, dir, text string) string {
	t.Helper()
	c, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var found []string
	err = c.Range(func(key string, value []byte) bool {
		if strings.Contains(string(value), strconv.Quote(text)) {
			found = append(found, key)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 1 {
		t.Fatalf("%d cache entries hold %q, want 1: %v", len(found), text, found)
	}
	return found[0]
}

// putCacheEntry stores value under key in the cache in dir, as a run would.
func putCacheEntry(t *testing.T, dir, key, value string) {
	t.Helper()
	c, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Put(key, []byte(value)); err != nil {
		t.Fatal(err)
	}
}

// getCacheEntry returns the value under key in the cache in dir.
func getCacheEntry(t *testing.T, dir, key string) ([]byte, bool) {
	t.Helper()
	c, err := cache.Open(dir, cache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	v, ok, err := c.Get(key)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}
